"""Run records (and device peaks) -> plotly figures: the one chart implementation.

Every surface shows these figures: the sidebar gets :func:`figure_json` over REST, the
inline widget holds the same JSON in a trait, a cell's final output carries it in its
MIME bundle (:mod:`nsight_lab.views.bundle`), and files are written with
:func:`write_html` / :func:`write_png` (the static page in a cell draws no image: no
headless browser runs in the kernel). The functions here are pure.

Figures are theme-neutral: transparent backgrounds, no text colours (the front end
applies the theme's), series coloured from :data:`PALETTE`. Names a user chose
(annotations, config values) are *text*: they are HTML-escaped wherever plotly.js would
read markup (trace names, categories, hover data, titles), reach hover labels only as
``%{customdata[...]}`` values (never spliced into a ``hovertemplate``), and are kept
unescaped only as data in each trace's ``meta``.
"""

from __future__ import annotations

import html
import importlib.util
import json
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from nsight_lab.errors import NsightLabError
from nsight_lab.roofline.placement import (
    DEFAULT_DTYPE,
    place_records,
    place_session,
    traffic_comparison,
)
from nsight_lab.stats import RunningMean, running_mean_ci

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable, Mapping, Sequence

    from nsight_lab.distributed.figure import LiveRanks
    from nsight_lab.records import JsonScalar, RunRecord
    from nsight_lab.roofline.placement import Peaks, Placement

__all__ = [
    "CHART_ORDER",
    "PALETTE",
    "LiveFigures",
    "StaticExportError",
    "clocks_figure",
    "counters_figure",
    "duration_figure",
    "figure_json",
    "figures_to_json",
    "ordered_charts",
    "printable",
    "roofline_figure",
    "traffic_figure",
    "write_html",
    "write_png",
]

PALETTE: tuple[str, ...] = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#F0E442",
)
"""Okabe-Ito qualitative colours (black left out), legible on light and dark themes."""
NEUTRAL = "rgba(128, 128, 128, 0.9)"
"""Roof lines: mid grey reads on both themes."""
TRANSPARENT = "rgba(0, 0, 0, 0)"
SOURCE_SYMBOLS = {
    "measured": "circle",
    "measured (PM sampling)": "circle",
    "modelled": "diamond-open",
    "mixed": "square-open",
}
ROOF_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
CHART_ORDER: tuple[str, ...] = (
    "duration",
    "ranks",
    "clocks",
    "rank_clocks",
    "roofline",
    "traffic",
    "counters",
)
"""The charts in the order every view shows them: the one statement of it.

Served with the figures (``chart_order`` of ``GET sessions/<id>?figures=1``, the
widget's ``chart_order`` trait); the front ends draw in the order served.
"""


class StaticExportError(NsightLabError, RuntimeError):
    """A figure could not be written as a static image; the message says what to do."""

    def __init__(self, message: str, *, unavailable: bool = True) -> None:
        """Say why; ``unavailable``: kaleido or a browser is missing or broken.

        False when this one figure was rejected (plotly.js or kaleido raised on
        it) while static export works otherwise.
        """
        super().__init__(message)
        self.unavailable = unavailable


_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069"
    "\ufeff\ud800-\udfff]"
)
"""Control, bidi and zero-width characters and lone surrogates: never shown raw."""


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"  # noqa: PLR2004


def printable(value: object) -> str:
    r"""``str(value)`` with control characters and lone surrogates made visible.

    ``"a\x00b"`` becomes ``"a\\x00b"`` (a backslash escape, as ``repr`` writes it):
    such characters break browsers' and kaleido's renderers, cannot be encoded as
    UTF-8 (lone surrogates), or reorder the text around them (bidi controls). Tabs
    and newlines are kept.

    Raises:
        Nothing.
    """
    return _INVISIBLE.sub(_visible, str(value))


def _text(value: object) -> str:
    """``value`` as plotly text: markup escaped, control characters made visible."""
    return html.escape(printable(value), quote=False)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _meta_text(value: str) -> str:
    """An annotation kept as data: lone surrogates (not UTF-8) made visible."""
    return _SURROGATE.sub(_visible, value)


def _config_label(config: Mapping[str, JsonScalar]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())


def _label(annotation: str, config: Mapping[str, JsonScalar], with_config: bool) -> str:  # noqa: FBT001
    label = _config_label(config) if with_config else ""
    return f"{annotation} [{label}]" if label else annotation


def _layout(title: str, **extra: Any) -> go.Layout:  # noqa: ANN401
    return go.Layout(
        title={"text": title, "x": 0.02, "xanchor": "left"},
        template="none",  # no template colours: the front end applies the theme
        paper_bgcolor=TRANSPARENT,
        plot_bgcolor=TRANSPARENT,
        colorway=list(PALETTE),
        hovermode="closest",
        # Legend under the plot: clear of the title and of a right-hand axis.
        legend={"orientation": "h", "yanchor": "top", "y": -0.2, "x": 0},
        margin={"l": 60, "r": 60, "t": 70, "b": 40},
        **extra,
    )


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {alpha})"


def _groups(records: Sequence[RunRecord]) -> dict[tuple[str, int], list[RunRecord]]:
    groups: dict[tuple[str, int], list[RunRecord]] = defaultdict(list)
    for record in records:
        groups[(record.annotation, record.config_index)].append(record)
    return {k: sorted(v, key=lambda r: r.run_index) for k, v in groups.items()}


def _throttle_text(record: RunRecord) -> str:
    t = record.telemetry
    if not t.throttled:
        return ""
    reasons = ", ".join(t.clock_event_reasons) or "SM clock below 75% of its maximum"
    return _text(f"throttled: {reasons}")


def _decimate(n: int, max_points: int | None) -> list[int]:
    if max_points is None or n <= max_points:
        return list(range(n))
    return sorted({round(i) for i in np.linspace(0, n - 1, max(max_points, 2))})


def _scatter(**properties: Any) -> go.Scatter:  # noqa: ANN401
    """A scatter trace, not validated by plotly (7x faster on long per-run arrays).

    For the per-run traces only, whose properties are built here with known names
    and types; :func:`figure_json` writes them as they are.
    """
    return go.Scatter(**properties, _validate=False)


def _duration_layout() -> go.Layout:
    return _layout(
        "Duration per run",
        xaxis={"title": {"text": "run"}},
        yaxis={"title": {"text": "duration (µs)"}, "rangemode": "tozero"},
    )


def _point_style(record: RunRecord, label: str) -> tuple[int, str, list[str]]:
    """Marker size, marker symbol and customdata of one run's point."""
    throttled = record.telemetry.throttled
    return (
        (10 if throttled else 6),
        ("x" if throttled else "circle"),
        [
            label,
            _throttle_text(record),
        ],
    )


def _duration_traces(  # noqa: PLR0913  (one group's data, keyword-only)
    i: int,
    *,
    label: str,
    meta: dict[str, Any],
    band: tuple[list[int], list[float], list[float]],
    points: tuple[list[int], list[float]],
    styles: Sequence[tuple[int, str, list[str]]],
) -> list[go.Scatter]:
    """The lower band edge, the upper band edge (filled down to it) and the runs."""
    colour = PALETTE[i % len(PALETTE)]
    band_x, low, high = band
    edge = {
        "line": {"width": 0},
        "mode": "lines",
        "hoverinfo": "skip",
        "legendgroup": f"g{i}",
        "showlegend": False,
        "meta": meta,
    }
    return [
        _scatter(x=band_x, y=low, name=f"{label} CI95 low", **edge),
        _scatter(
            x=band_x,
            y=high,
            name=f"{label} CI95",
            fill="tonexty",
            fillcolor=_rgba(colour, 0.2),
            **edge,
        ),
        _scatter(
            x=points[0],
            y=points[1],
            name=label,
            mode="lines+markers",
            line={"color": colour, "width": 1},
            marker={
                "color": colour,
                "size": [size for size, _, _ in styles],
                "symbol": [symbol for _, symbol, _ in styles],
            },
            customdata=[custom for _, _, custom in styles],
            hovertemplate=(
                "%{customdata[0]}<br>run %{x}: %{y:.3f} µs"
                "<br>%{customdata[1]}<extra></extra>"
            ),
            legendgroup=f"g{i}",
            meta=meta,
        ),
    ]


def duration_figure(
    records: Sequence[RunRecord],
    max_points: int | None = None,
    *,
    with_config: bool | None = None,
) -> go.Figure:
    """Duration per run, per (annotation, config), with a running CI95 band.

    Three traces per (annotation, config): the lower and the upper edge of the 95%
    confidence band of the mean over the runs so far (the upper one filled down to
    the lower; from :data:`~nsight_lab.stats.MIN_BAND_RUNS` runs on, on the log
    scale so never below 0: :func:`~nsight_lab.stats.running_mean_ci`), then the
    durations (µs) by run index. Throttled runs get an ``x``
    marker and their reasons in the hover. :class:`LiveFigures` appends to the same
    traces run by run.

    Args:
        records: Run records of one session.
        max_points: At most this many points per trace (evenly thinned, band computed
            over every run); all when None.
        with_config: Label traces with their config; by default when the records
            hold more than one config.

    Returns:
        The figure.

    Raises:
        Nothing.
    """
    groups = _groups(records)
    if with_config is None:
        with_config = len({ci for _, ci in groups}) > 1
    fig = go.Figure(layout=_duration_layout(), _validate=False)
    for i, ((annotation, ci), group) in enumerate(groups.items()):
        label = _text(_label(annotation, group[0].config, with_config))
        meta = {"annotation": _meta_text(annotation), "config_index": ci}
        x = [r.run_index for r in group]
        y = [r.duration_ns / 1e3 for r in group]
        low, high = running_mean_ci(y)
        keep = _decimate(len(x), max_points)
        # The band only from MIN_BAND_RUNS runs on (NaN before: see running_mean_ci).
        band = [k for k in keep if math.isfinite(low[k]) and math.isfinite(high[k])]
        fig.add_traces(
            _duration_traces(
                i,
                label=label,
                meta=meta,
                band=(
                    [x[k] for k in band],
                    [low[k] for k in band],
                    [high[k] for k in band],
                ),
                points=([x[k] for k in keep], [y[k] for k in keep]),
                styles=[_point_style(group[k], label) for k in keep],
            )
        )
    return fig


def _clock_custom(record: RunRecord, with_config: bool) -> list[str]:  # noqa: FBT001
    place = (
        f"{_config_label(record.config)}, run {record.run_index}"
        if with_config and record.config
        else f"run {record.run_index}"
    )
    return [_text(place), _throttle_text(record)]


def _clock_values(record: RunRecord) -> tuple[float | None, float | None]:
    return record.telemetry.sm_clock_mhz, record.telemetry.temperature_c


def clocks_figure(
    records: Sequence[RunRecord],
    *,
    with_config: bool | None = None,
    max_points: int | None = None,
) -> go.Figure:
    """SM clock (MHz, left axis) and temperature (°C, right axis) per run.

    Runs are numbered in the order they ran over all configs; telemetry is per run, so
    each run's first region gives it. Throttled runs get an ``x`` marker and their
    reasons in the hover. Missing readings (the CPU backend) leave gaps.
    ``with_config`` adds the config to the hover (by default with several configs).
    ``max_points`` thins the runs evenly to at most that many points, each at its
    true position on x (all when None).

    Raises:
        Nothing.
    """
    runs: dict[tuple[int, int], RunRecord] = {}
    for record in records:
        runs.setdefault((record.config_index, record.run_index), record)
    every = list(runs.values())
    if with_config is None:
        with_config = len({r.config_index for r in every}) > 1
    x = _decimate(len(every), max_points)
    ordered = [every[k] for k in x]
    symbols = ["x" if r.telemetry.throttled else "circle" for r in ordered]
    custom = [_clock_custom(r, with_config) for r in ordered]
    fig = go.Figure(
        layout=_layout(
            "SM clock and temperature per run",
            xaxis={"title": {"text": "run (order over all configs)"}},
            yaxis={"title": {"text": "SM clock (MHz)"}},
            yaxis2={
                "title": {"text": "temperature (°C)"},
                "overlaying": "y",
                "side": "right",
                "showgrid": False,
            },
        ),
        _validate=False,
    )
    values = [_clock_values(r) for r in ordered]
    if not any(_has_telemetry(r) for r in every):
        # Nothing to draw (the cpu backend, or no NVML): no traces, so every view says
        # why in words instead of drawing empty axes around -1...4 MHz.
        return fig
    for trace in _clock_traces():
        fig.add_trace(trace)
    fig.data[0].update(x=x, y=[v[0] for v in values], customdata=custom)
    fig.data[1].update(x=x, y=[v[1] for v in values], customdata=custom)
    for trace in fig.data:
        trace.marker.symbol = symbols
    return fig


def _has_telemetry(record: RunRecord) -> bool:
    return any(value is not None for value in _clock_values(record))


def _clock_traces() -> list[go.Scatter]:
    """The clock chart's two empty traces: SM clock (left axis), temperature (right)."""
    series = (("SM clock", "y", "MHz"), ("temperature", "y2", "°C"))
    return [
        _scatter(
            x=[],
            y=[],
            name=name,
            yaxis=axis,
            mode="lines+markers",
            line={"color": colour, "width": 1},
            marker={"color": colour, "symbol": [], "size": 7},
            customdata=[],
            hovertemplate=(
                f"%{{customdata[0]}}<br>{name}: %{{y:.0f}} {unit}"
                "<br>%{customdata[1]}<extra></extra>"
            ),
        )
        for (name, axis, unit), colour in zip(
            series, (PALETTE[0], PALETTE[3]), strict=True
        )
    ]


class _Group:
    """One (annotation, config) of the live duration figure: its traces and band."""

    __slots__ = ("band", "index", "label")

    def __init__(self, index: int, label: str) -> None:
        self.index = index  # trace index of its lower band edge (then upper, points)
        self.label = label
        self.band = RunningMean()  # the running band of duration_figure, run by run


def _extend_op(
    indices: list[int], columns: dict[str, list[list[Any]]]
) -> dict[str, Any]:
    return {"indices": indices, "data": columns}


class LiveFigures:
    """The duration and clocks figures, built run by run while a profile runs.

    The figures are those of :func:`duration_figure` and :func:`clocks_figure` (the
    same traces, labels and band), kept as JSON dicts. :meth:`add` appends new runs
    in time proportional to them (never rebuilding from every record) and returns
    the change as *appends*, what ``Plotly.extendTraces`` and ``Plotly.addTraces``
    take in the widget's front end. With ``max_points`` each trace keeps its latest
    points only, as ``extendTraces``'s ``maxPoints`` does.
    """

    def __init__(self, *, with_config: bool, max_points: int | None = None) -> None:
        """Start with empty figures.

        Args:
            with_config: Label traces with their config (more than one config).
            max_points: Points kept per trace (the latest); all when None.
        """
        self.with_config = with_config
        self.max_points = max_points
        self.figures: dict[str, dict[str, Any]] = {
            "duration": figure_json(go.Figure(layout=_duration_layout())),
            "clocks": figure_json(clocks_figure([], with_config=with_config)),
        }
        self.figures["duration"]["data"] = []
        self.points = 0
        """Points appended so far, over every trace."""
        self._groups: dict[tuple[str, int], _Group] = {}
        self._runs: set[tuple[int, int]] = set()
        self._ranks: LiveRanks | None = None
        """The ``ranks`` chart, from the first multi-rank record on."""

    def add(self, records: Sequence[RunRecord]) -> dict[str, dict[str, Any]]:
        """Append ``records`` (in the order they ran); return the appends per chart.

        Each chart's entry has ``traces`` (new traces, to add before extending) and
        ``extend`` (a list of ``{"indices": [...], "data": {path: [[...], ...]}}``,
        each one ``extendTraces`` call), and ``max_points``. Charts with nothing new
        are left out.

        Raises:
            Nothing.
        """
        out: dict[str, dict[str, Any]] = {}
        if not records:
            return out
        duration = self._add_durations(records)
        if duration is not None:
            out["duration"] = duration
        clocks = self._add_clocks(records)
        if clocks is not None:
            out["clocks"] = clocks
        ranks = self._add_ranks(records)
        if ranks is not None:
            out["ranks"] = ranks
        return out

    def _add_ranks(self, records: Sequence[RunRecord]) -> dict[str, Any] | None:
        """The per-rank chart's appends (a multi-rank profile's; none otherwise)."""
        from nsight_lab.distributed.figure import LiveRanks
        from nsight_lab.distributed.metrics import is_multi_rank

        if self._ranks is None:
            if not any(is_multi_rank(r) for r in records):
                return None
            self._ranks = LiveRanks(with_config=self.with_config)
            self.figures["ranks"] = LiveRanks.empty_figure()
        traces, extend = self._ranks.add(records)
        return self._apply("ranks", traces, extend)

    # -- internals --------------------------------------------------------------------
    def _add_durations(self, records: Sequence[RunRecord]) -> dict[str, Any] | None:
        figure = self.figures["duration"]
        new_traces: list[dict[str, Any]] = []
        points: dict[int, dict[str, list[Any]]] = {}
        band: dict[int, tuple[list[int], list[float | None], list[float | None]]] = {}
        for record in records:
            key = (record.annotation, record.config_index)
            group = self._groups.get(key)
            if group is None:
                label = _text(
                    _label(record.annotation, record.config, self.with_config)
                )
                meta = {
                    "annotation": _meta_text(record.annotation),
                    "config_index": record.config_index,
                }
                traces = _duration_traces(
                    len(self._groups),
                    label=label,
                    meta=meta,
                    band=([], [], []),
                    points=([], []),
                    styles=[],
                )
                group = _Group(len(figure["data"]) + len(new_traces), label)
                self._groups[key] = group
                # As figure_json writes them (JSON-safe: names, numbers, lists).
                new_traces.extend(
                    json.loads(json.dumps(t.to_plotly_json())) for t in traces
                )
            value = record.duration_ns / 1e3
            size, symbol, custom = _point_style(record, group.label)
            column = points.setdefault(
                group.index + 2,
                {
                    "x": [],
                    "y": [],
                    "marker.size": [],
                    "marker.symbol": [],
                    "customdata": [],
                },
            )
            column["x"].append(record.run_index)
            column["y"].append(value)
            column["marker.size"].append(size)
            column["marker.symbol"].append(symbol)
            column["customdata"].append(custom)
            edges = group.band.add(value)
            if edges is not None:
                xs, lows, highs = band.setdefault(group.index, ([], [], []))
                xs.append(record.run_index)
                lows.append(_finite(edges[0]))
                highs.append(_finite(edges[1]))
        extend = []
        if points:
            indices = list(points)
            extend.append(
                _extend_op(
                    indices,
                    {
                        path: [points[i][path] for i in indices]
                        for path in (
                            "x",
                            "y",
                            "marker.size",
                            "marker.symbol",
                            "customdata",
                        )
                    },
                )
            )
        if band:
            indices = []
            xs_out: list[list[Any]] = []
            ys_out: list[list[Any]] = []
            for i, (xs, lows, highs) in band.items():
                indices += [i, i + 1]
                xs_out += [xs, xs]
                ys_out += [lows, highs]
            extend.append(_extend_op(indices, {"x": xs_out, "y": ys_out}))
        return self._apply("duration", new_traces, extend)

    def _add_clocks(self, records: Sequence[RunRecord]) -> dict[str, Any] | None:
        xs: list[int] = []
        sm: list[float | None] = []
        temp: list[float | None] = []
        symbols: list[str] = []
        custom: list[list[str]] = []
        for record in records:
            run = (record.config_index, record.run_index)
            if run in self._runs:
                continue
            xs.append(len(self._runs))
            self._runs.add(run)
            clock, temperature = _clock_values(record)
            sm.append(_finite(clock))
            temp.append(_finite(temperature))
            symbols.append("x" if record.telemetry.throttled else "circle")
            custom.append(_clock_custom(record, self.with_config))
        if not xs:
            return None
        traces: list[dict[str, Any]] = []
        if not self.figures["clocks"]["data"]:
            if not any(v is not None for v in (*sm, *temp)):
                return None  # no telemetry yet: the chart stays empty (views say why)
            traces = [
                figure_json(go.Figure(data=[t], layout=go.Layout()))["data"][0]
                for t in _clock_traces()
            ]
        op = _extend_op(
            [0, 1],
            {
                "x": [xs, list(xs)],
                "y": [sm, temp],
                "marker.symbol": [symbols, list(symbols)],
                "customdata": [custom, list(custom)],
            },
        )
        return self._apply("clocks", traces, [op])

    def _apply(
        self, name: str, traces: list[dict[str, Any]], extend: list[dict[str, Any]]
    ) -> dict[str, Any] | None:
        """Apply the appends to the figure kept here; return them (None if none)."""
        if not traces and not extend:
            return None
        data = self.figures[name]["data"]
        data.extend(json.loads(json.dumps(traces)))
        for op in extend:
            for k, index in enumerate(op["indices"]):
                for path, columns in op["data"].items():
                    target = _array(data[index], path)
                    target.extend(columns[k])
                    self.points += len(columns[k]) if path == "x" else 0
                    if self.max_points is not None and len(target) > self.max_points:
                        del target[: len(target) - self.max_points]
        return {"traces": traces, "extend": extend, "max_points": self.max_points}


def _array(trace: dict[str, Any], path: str) -> list[Any]:
    """The list at the dotted ``path`` of a trace dict, created if missing."""
    *parents, leaf = path.split(".")
    node = trace
    for part in parents:
        node = node.setdefault(part, {})
    value = node.get(leaf)
    if not isinstance(value, list):
        value = node[leaf] = []
    return value


def _finite(value: float | None) -> float | None:
    """JSON-safe number: NaN and infinities as None (as :func:`figure_json` does)."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def _source(p: Placement) -> str:
    return p.flops_source if p.flops_source == p.bytes_source else "mixed"


def _decade_range(values: Sequence[float]) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    return 10 ** math.floor(math.log10(lo / 10)), 10 ** math.ceil(math.log10(hi * 10))


def roofline_figure(placements: Sequence[Placement], peaks: Peaks) -> go.Figure:
    """Log-log roofline: the device's roofs and each region placed under them.

    Traces, in order: the DRAM roof, one compute roof per dtype (those of the
    placements plus fp32, where ``peaks`` has them, slowest first), the ridge points,
    then one marker trace per region (circle: measured, open diamond: modelled, open
    square: one of each). Regions with no bytes or no FLOPs cannot sit on log axes and
    are named in a note instead.

    Raises:
        Nothing.
    """
    bw = peaks.dram_bytes_per_s
    dtypes = list(dict.fromkeys([DEFAULT_DTYPE, *(p.dtype for p in placements)]))
    roofs = sorted(
        ((d, peaks.flops_per_s[d]) for d in dtypes if d in peaks.flops_per_s),
        key=lambda item: item[1],
    )
    shown = [
        p
        for p in placements
        if math.isfinite(p.intensity) and p.intensity > 0 and p.achieved_flops_per_s > 0
    ]
    hidden = [p for p in placements if p not in shown]
    ridges = [peak / bw for _, peak in roofs]
    x_lo, x_hi = _decade_range([p.intensity for p in shown] + ridges or [0.1, 100.0])
    with_config = len({p.config_index for p in placements}) > 1
    fig = go.Figure(
        layout=_layout(
            f"Roofline: {_text(peaks.device)}<br><sup>{_text(peaks.source)}</sup>",
            xaxis={
                "type": "log",
                "title": {"text": "arithmetic intensity (FLOP/byte)"},
            },
            yaxis={"type": "log", "title": {"text": "performance (TFLOP/s)"}},
        )
    )
    x_mem_end = max(ridges) if ridges else x_hi
    fig.add_trace(
        go.Scatter(
            x=[x_lo, x_mem_end],
            y=[bw * x_lo / 1e12, bw * x_mem_end / 1e12],
            name=f"DRAM {bw / 1e12:.3g} TB/s",
            mode="lines",
            line={"color": NEUTRAL, "width": 2},
            hovertemplate=(
                "DRAM roof<br>%{x:.3g} FLOP/B: %{y:.4g} TFLOP/s<extra></extra>"
            ),
        )
    )
    for i, (dtype, peak) in enumerate(roofs):
        fig.add_trace(
            go.Scatter(
                x=[peak / bw, x_hi],
                y=[peak / 1e12, peak / 1e12],
                name=f"{dtype} {peak / 1e12:.4g} TFLOP/s",
                mode="lines",
                line={"color": NEUTRAL, "width": 2, "dash": ROOF_DASHES[i % 6]},
                hovertemplate=f"{dtype} roof: %{{y:.4g}} TFLOP/s<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=ridges,
            y=[peak / 1e12 for _, peak in roofs],
            name="ridge points",
            mode="markers+text",
            text=[d for d, _ in roofs],
            textposition="top left",
            marker={"color": NEUTRAL, "size": 7, "symbol": "circle-open"},
            hovertemplate="ridge %{text}: %{x:.3g} FLOP/B<extra></extra>",
        )
    )
    for i, p in enumerate(shown):
        label = _text(_label(p.annotation, p.config, with_config))
        source = _source(p)
        custom = [
            label,
            f"{p.flops:.4g}",
            f"{p.bytes_read:.4g}",
            f"{p.bytes_written:.4g}",
            f"{p.pct_of_roof:.3g}",
            p.bound,
            f"FLOPs {p.flops_source}, bytes {p.bytes_source}",
            f"{p.duration_ns / 1e3:.4g}",
            p.dtype,
        ]
        fig.add_trace(
            go.Scatter(
                x=[p.intensity],
                y=[p.achieved_flops_per_s / 1e12],
                name=f"{label} ({source})",
                mode="markers",
                marker={
                    "color": PALETTE[i % len(PALETTE)],
                    "size": 12,
                    "symbol": SOURCE_SYMBOLS[source],
                    "line": {"width": 2, "color": PALETTE[i % len(PALETTE)]},
                },
                customdata=[custom],
                hovertemplate=(
                    "%{customdata[0]} (%{customdata[8]}, %{customdata[7]} µs)"
                    "<br>FLOPs: %{customdata[1]}"
                    "<br>bytes: %{customdata[2]} read, %{customdata[3]} written"
                    "<br>intensity: %{x:.3g} FLOP/B"
                    "<br>achieved: %{y:.4g} TFLOP/s"
                    "<br>%{customdata[4]}% of roof (%{customdata[5]} bound)"
                    "<br>%{customdata[6]}<extra></extra>"
                ),
                meta={"annotation": p.annotation, "config_index": p.config_index},
            )
        )
    if hidden:
        names = ", ".join(
            _text(_label(p.annotation, p.config, with_config)) for p in hidden
        )
        fig.add_annotation(
            text=f"not on log axes (no bytes or no FLOPs): {names}",
            xref="paper",
            yref="paper",
            x=0,
            y=-0.2,
            showarrow=False,
            align="left",
        )
    return fig


def traffic_figure(placements: Sequence[Placement]) -> go.Figure:
    """DRAM bytes read and written per region (stacked bars) with time on a 2nd axis.

    With exactly two regions the title gives their traffic and time ratios (first over
    second), as in an unfused-versus-fused comparison.

    Raises:
        Nothing.
    """
    with_config = len({p.config_index for p in placements}) > 1
    labels = [_text(_label(p.annotation, p.config, with_config)) for p in placements]
    title = "DRAM traffic and time per region"
    if len(placements) == 2:  # noqa: PLR2004
        c = traffic_comparison(placements[0], placements[1])
        title += (
            f"<br><sup>{labels[0]} / {labels[1]}: {c.traffic_ratio:.3g}&times; bytes, "
            f"{c.time_ratio:.3g}&times; time</sup>"
        )
    fig = go.Figure(
        layout=_layout(
            title,
            barmode="stack",
            xaxis={"type": "category", "title": {"text": "region"}},
            yaxis={
                "title": {"text": "DRAM bytes"},
                "tickformat": "~s",
                "ticksuffix": "B",
            },
            yaxis2={
                "title": {"text": "time (µs)"},
                "overlaying": "y",
                "side": "right",
                "rangemode": "tozero",
                "showgrid": False,
            },
        )
    )
    sources = [[p.bytes_source] for p in placements]
    meta = [
        {"annotation": p.annotation, "config_index": p.config_index} for p in placements
    ]
    for name, values, colour in (
        ("read", [p.bytes_read for p in placements], PALETTE[0]),
        ("written", [p.bytes_written for p in placements], PALETTE[1]),
    ):
        fig.add_trace(
            go.Bar(
                x=labels,
                y=values,
                name=f"bytes {name}",
                marker={"color": colour},
                customdata=sources,
                hovertemplate=(
                    f"%{{x}}<br>{name}: %{{y:.4s}}B (%{{customdata[0]}})<extra></extra>"
                ),
                meta=meta,
            )
        )
    fig.add_trace(
        go.Scatter(
            x=labels,
            y=[p.duration_ns / 1e3 for p in placements],
            name="time",
            yaxis="y2",
            mode="markers",
            marker={"color": PALETTE[3], "symbol": "diamond", "size": 12},
            hovertemplate="%{x}<br>time: %{y:.4g} µs<extra></extra>",
            meta=meta,
        )
    )
    return fig


COUNTER_UNIT_ORDER = ("GB/s", "%", "/s", "")
"""Rows of the "Counters over time" chart, top to bottom, by the unit of a metric."""


def _representative(group: Sequence[RunRecord]) -> RunRecord:
    """The run of median duration (the lower middle one): a typical run to draw."""
    ordered = sorted(group, key=lambda r: (r.duration_ns, r.run_index))
    return ordered[(len(ordered) - 1) // 2]


def _counter_spans(records: Sequence[RunRecord]) -> list[tuple[str, RunRecord, Any]]:
    """(label, representative record, unpacked series) of each region with a series."""
    from nsight_lab.backends.pm.series import unpack

    groups: dict[tuple[int, str], list[RunRecord]] = defaultdict(list)
    for record in records:
        if record.series is not None:
            groups[(record.config_index, record.annotation)].append(record)
    with_config = len({ci for ci, _ in groups}) > 1
    spans: list[tuple[str, RunRecord, Any]] = []
    for group in groups.values():
        chosen = _representative(group)
        try:
            series = unpack(chosen.series or b"")
        except ValueError:
            continue
        if series.t_us:
            label = _label(chosen.annotation, chosen.config, with_config)
            spans.append((label, chosen, series))
    return spans


def _region_marks(label: str, start: float, width: float) -> list[dict[str, Any]]:
    """The region's name above its span and a dotted line after it."""
    end = start + width * 1.02
    return [
        {
            "text": _text(label),
            "x": start + width / 2,
            "xref": "x",
            "y": 1.0,
            "yref": "paper",
            "yanchor": "bottom",
            "showarrow": False,
        },
        {
            "type": "line",
            "x0": end,
            "x1": end,
            "xref": "x",
            "y0": 0,
            "y1": 1,
            "yref": "paper",
            "line": {"color": NEUTRAL, "width": 1, "dash": "dot"},
        },
    ]


def counters_figure(records: Sequence[RunRecord]) -> go.Figure | None:
    """Counter rates over time within each region (PM sampling), or None without any.

    For each region (and config) the run of median duration is drawn: its sampled
    rates (``RunRecord.series``, see :mod:`nsight_lab.backends.pm.series`) against
    the time since the region's first kernel started, regions laid end to end in the
    order they first ran, a dotted line between them. One row per unit (GB/s, %,
    per second), one trace per metric across all regions, so where inside a region
    the DRAM bandwidth collapses or the tensor pipe idles shows at a glance.

    Raises:
        Nothing: a series that cannot be read is left out.
    """
    spans = _counter_spans(records)
    if not spans:
        return None
    unit_of = {m: u for *_, s in spans for m, u in zip(s.metrics, s.units, strict=True)}
    units = [u for u in COUNTER_UNIT_ORDER if u in unit_of.values()]
    x: dict[str, list[float | None]] = {m: [] for m in unit_of}
    y: dict[str, list[float | None]] = {m: [] for m in unit_of}
    custom: dict[str, list[list[str]]] = {m: [] for m in unit_of}
    offset = 0.0
    marks: list[dict[str, Any]] = []
    for label, record, series in spans:
        width = max(*series.t_us, record.duration_ns / 1e3, 1e-3)
        for metric, column in zip(series.metrics, series.values, strict=True):
            x[metric] += [offset + t for t in series.t_us] + [None]
            y[metric] += [_finite(v) for v in column] + [None]  # None: no line across
            custom[metric] += [
                [_text(label), f"{t:.4g}", str(record.run_index)] for t in series.t_us
            ] + [["", "", ""]]
        marks += _region_marks(label, offset, width)
        offset += width * 1.04
    axes = {
        f"yaxis{'' if i == 0 else i + 1}": {
            "domain": [
                max(1.0 - (i + 1) / len(units) + 0.06, 0.0),
                1.0 - i / len(units),
            ],
            "title": {"text": unit or "value"},
            "rangemode": "tozero",
        }
        for i, unit in enumerate(units)
    }
    fig = go.Figure(
        layout=_layout(
            "Counters over time (PM sampling)<br><sup>the median run of each "
            "region; time from the region's first kernel, regions end to end</sup>",
            xaxis={"title": {"text": "time within each region (µs)"}},
            shapes=[m for m in marks if "type" in m][:-1],
            annotations=[m for m in marks if "text" in m],
            **axes,
        )
    )
    for i, (metric, unit) in enumerate(unit_of.items()):
        row = units.index(unit)
        fig.add_trace(
            go.Scatter(
                x=x[metric],
                y=y[metric],
                name=_text(f"{metric} ({unit or 'value'})"),
                mode="lines+markers",
                line={"color": PALETTE[i % len(PALETTE)], "width": 2},
                marker={"size": 4},
                yaxis=f"y{'' if row == 0 else row + 1}",
                connectgaps=False,
                customdata=custom[metric],
                hovertemplate=(
                    "%{customdata[0]} (run %{customdata[2]})<br>%{customdata[1]} µs "
                    f"in: %{{y:.4g}} {_text(unit)}<extra>{_text(metric)}</extra>"
                ),
                meta={"metric": metric},
            )
        )
    return fig


def figure_json(fig: go.Figure) -> dict[str, Any]:
    """Return ``fig`` as a JSON-safe dict (what REST and the widget trait carry).

    Arrays become lists, NaN and infinities become ``null``, and ``<``, ``>``, ``/``
    stay safe inside an HTML ``<script>``.

    Raises:
        Nothing.
    """
    result: dict[str, Any] = json.loads(pio.to_json(fig, validate=False))
    return result


def ordered_charts(names: Iterable[str]) -> list[str]:
    """``names`` in :data:`CHART_ORDER`, any other names after them, sorted.

    Raises:
        Nothing.
    """
    given = set(names)
    known = [name for name in CHART_ORDER if name in given]
    return known + sorted(given.difference(CHART_ORDER))


def figures_to_json(
    records: Sequence[RunRecord],
    peaks: Peaks | None = None,
    *,
    placements: Sequence[Placement] | None = None,
    dtype_by_annotation: Mapping[str, str] | None = None,
    max_points: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Every figure of one session as JSON, by name, in :data:`CHART_ORDER`.

    The one figure assembler: the final cell output's figures (also the lab's mime
    renderer's) and the sidebar's (``GET sessions/<id>?figures=1``) are built here.
    ``duration`` and ``clocks`` always (empty without records); ``roofline`` (with
    ``peaks``) and ``traffic`` when some region has FLOP and byte figures; ``ranks``
    and ``rank_clocks`` (with telemetry) for records measured in several ranks
    (:mod:`nsight_lab.distributed.figure`). Regions
    are placed under the roof of their dtype (``roofline.place_session``) unless
    ``placements`` are given, or ``dtype_by_annotation`` says otherwise. Every
    statistic (the CI95 band, the placement) uses all ``records``; each per-run
    trace is thinned evenly to at most ``max_points`` points (x keeps the runs' true
    positions), so a 200,000-run session has a bounded size.

    Raises:
        ValueError: A dtype in ``dtype_by_annotation`` is unknown or has no peak.
    """
    out = {
        "duration": figure_json(duration_figure(records, max_points)),
        "clocks": figure_json(clocks_figure(records, max_points=max_points)),
    }
    if placements is None and peaks is not None:
        placements = (
            place_records(records, peaks, dtype_by_annotation)
            if dtype_by_annotation is not None
            else place_session(records, peaks)
        )
    if placements:
        if peaks is not None:
            out["roofline"] = figure_json(roofline_figure(placements, peaks))
        out["traffic"] = figure_json(traffic_figure(placements))
    counters = counters_figure(records)
    if counters is not None:
        out["counters"] = figure_json(counters)
    from nsight_lab.distributed.figure import rank_figures  # multi-rank sessions

    out.update(
        (name, figure_json(fig))
        for name, fig in rank_figures(records, max_points).items()
    )
    return {name: out[name] for name in ordered_charts(out)}


def write_html(fig: go.Figure, path: str | os.PathLike[str]) -> Path:
    """Write ``fig`` as a self-contained HTML page (plotly.js inline, no CDN).

    Raises:
        OSError: The file cannot be written.
    """
    out = Path(path)
    fig.write_html(out, include_plotlyjs=True, include_mathjax=False, full_html=True)
    return out


def _figure_rejected(exc: BaseException) -> bool:
    """Whether kaleido ran and plotly.js rejected the figure (a KaleidoError)."""
    return type(exc).__name__ == "KaleidoError"


def write_png(  # noqa: PLR0913  (the image options are keyword-only)
    fig: go.Figure,
    path: str | os.PathLike[str],
    *,
    width: int = 900,
    height: int = 500,
    scale: float = 2.0,
    background: str | None = "white",
) -> Path:
    """Write ``fig`` as a PNG (static export through kaleido and a headless Chrome).

    Args:
        fig: The figure.
        path: The file to write.
        width: Width in CSS pixels.
        height: Height in CSS pixels.
        scale: Pixel density.
        background: Paper and plot colour of the image (a PNG has no theme to
            inherit); None keeps the figure's transparent background.

    Returns:
        ``path``.

    Raises:
        StaticExportError: kaleido or a Chrome/Chromium browser is missing, or the
            export failed (for any reason: no other exception escapes).
    """
    out = Path(path)
    image = go.Figure(fig)
    if background is not None:
        image.update_layout(paper_bgcolor=background, plot_bgcolor=background)
    try:
        png = image.to_image(format="png", width=width, height=height, scale=scale)
    except Exception as exc:  # kaleido's own errors derive from Exception only
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        if _figure_rejected(exc):
            msg = f"cannot write {str(out)!r} as PNG: {type(exc).__name__}: {first}"
            raise StaticExportError(msg, unavailable=False) from exc
        if importlib.util.find_spec("kaleido") is None:
            hint = "install kaleido with: pip install 'kaleido>=1'"
        else:
            hint = (
                "kaleido needs Chrome or Chromium: install one (e.g. apt-get install "
                "chromium) or set BROWSER_PATH to its executable"
            )
        msg = f"cannot write {str(out)!r} as PNG: {first}; {hint}"
        raise StaticExportError(msg) from exc
    out.write_bytes(png)
    return out
