"""Run records (and device peaks) -> plotly figures: the one chart implementation.

Every surface shows these figures: the sidebar gets :func:`figure_json` over REST, the
inline widget holds the same JSON in a trait, and the static fallback writes them with
:func:`write_html` / :func:`write_png`. The functions here are pure.

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
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from scipy import stats as _scipy_stats

from nsight_lab.errors import NsightLabError
from nsight_lab.roofline import (
    DEFAULT_DTYPE,
    place_records,
    place_session,
    traffic_comparison,
)

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping, Sequence

    from nsight_lab.records import JsonScalar, RunRecord
    from nsight_lab.roofline import Peaks, Placement

__all__ = [
    "PALETTE",
    "StaticExportError",
    "ci95_band",
    "clocks_figure",
    "duration_figure",
    "figure_json",
    "figures_to_json",
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
    "modelled": "diamond-open",
    "mixed": "square-open",
}
ROOF_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


class StaticExportError(NsightLabError, RuntimeError):
    """A figure could not be written as a static image; the message says what to do."""


def _text(value: object) -> str:
    """``value`` as plotly text: markup characters escaped so they show literally."""
    return html.escape(str(value), quote=False)


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


def ci95_band(values: Sequence[float]) -> tuple[list[float], list[float]]:
    """Running 95% confidence band of the mean: ``mean ± t·s/√n`` over runs so far.

    Element ``k`` uses the first ``k + 1`` values (Student's t, ``n - 1`` degrees of
    freedom); it is NaN for ``k = 0``.

    Raises:
        Nothing.
    """
    arr = np.asarray(values, dtype=float)
    n = np.arange(1, arr.size + 1, dtype=float)
    mean = np.cumsum(arr) / n
    # Shifted by the first value so the sums do not cancel catastrophically.
    shifted = arr - (arr[0] if arr.size else 0.0)
    s1 = np.cumsum(shifted)
    s2 = np.cumsum(shifted * shifted)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = np.maximum(s2 - s1 * s1 / n, 0.0) / (n - 1)
        half = _scipy_stats.t.ppf(0.975, n - 1) * np.sqrt(var / n)
    half = np.where(n >= 2, half, math.nan)  # noqa: PLR2004
    return [float(v) for v in mean - half], [float(v) for v in mean + half]


def _decimate(n: int, max_points: int | None) -> list[int]:
    if max_points is None or n <= max_points:
        return list(range(n))
    return sorted({round(i) for i in np.linspace(0, n - 1, max(max_points, 2))})


def duration_figure(
    records: Sequence[RunRecord], max_points: int | None = None
) -> go.Figure:
    """Duration per run, per (annotation, config), with a running CI95 band.

    Two traces per (annotation, config), band first: the filled 95% confidence band of
    the mean over the runs so far, and the durations (µs) by run index. Throttled runs
    get an ``x`` marker and their reasons in the hover.

    Args:
        records: Run records of one session.
        max_points: At most this many points per trace (evenly thinned, band computed
            over every run); all when None.

    Returns:
        The figure.

    Raises:
        Nothing.
    """
    groups = _groups(records)
    with_config = len({ci for _, ci in groups}) > 1
    fig = go.Figure(
        layout=_layout(
            "Duration per run",
            xaxis={"title": {"text": "run"}},
            yaxis={"title": {"text": "duration (µs)"}, "rangemode": "tozero"},
        )
    )
    for i, ((annotation, ci), group) in enumerate(groups.items()):
        colour = PALETTE[i % len(PALETTE)]
        label = _text(_label(annotation, group[0].config, with_config))
        meta = {"annotation": annotation, "config_index": ci}
        x = [r.run_index for r in group]
        y = [r.duration_ns / 1e3 for r in group]
        low, high = ci95_band(y)
        keep = _decimate(len(x), max_points)
        band = [k for k in keep if k >= 1]
        fig.add_trace(
            go.Scatter(
                x=[x[k] for k in band] + [x[k] for k in reversed(band)],
                y=[high[k] for k in band] + [low[k] for k in reversed(band)],
                name=f"{label} CI95",
                fill="toself",
                fillcolor=_rgba(colour, 0.2),
                line={"width": 0},
                mode="lines",
                hoverinfo="skip",
                legendgroup=f"g{i}",
                showlegend=False,
                meta=meta,
            )
        )
        fig.add_trace(
            go.Scatter(
                x=[x[k] for k in keep],
                y=[y[k] for k in keep],
                name=label,
                mode="lines+markers",
                line={"color": colour, "width": 1},
                marker={
                    "color": colour,
                    "size": [10 if group[k].telemetry.throttled else 6 for k in keep],
                    "symbol": [
                        "x" if group[k].telemetry.throttled else "circle" for k in keep
                    ],
                },
                customdata=[[label, _throttle_text(group[k])] for k in keep],
                hovertemplate=(
                    "%{customdata[0]}<br>run %{x}: %{y:.3f} µs"
                    "<br>%{customdata[1]}<extra></extra>"
                ),
                legendgroup=f"g{i}",
                meta=meta,
            )
        )
    return fig


def clocks_figure(records: Sequence[RunRecord]) -> go.Figure:
    """SM clock (MHz, left axis) and temperature (°C, right axis) per run.

    Runs are numbered in the order they ran over all configs; telemetry is per run, so
    each run's first region gives it. Throttled runs get an ``x`` marker and their
    reasons in the hover. Missing readings (the CPU backend) leave gaps.

    Raises:
        Nothing.
    """
    runs: dict[tuple[int, int], RunRecord] = {}
    for record in records:
        runs.setdefault((record.config_index, record.run_index), record)
    ordered = list(runs.values())
    with_config = len({r.config_index for r in ordered}) > 1
    x = list(range(len(ordered)))
    symbols = ["x" if r.telemetry.throttled else "circle" for r in ordered]
    custom = [
        [
            _text(
                f"{_config_label(r.config)}, run {r.run_index}"
                if with_config and r.config
                else f"run {r.run_index}"
            ),
            _throttle_text(r),
        ]
        for r in ordered
    ]
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
        )
    )
    series = (
        ("SM clock", [r.telemetry.sm_clock_mhz for r in ordered], "y", "MHz"),
        ("temperature", [r.telemetry.temperature_c for r in ordered], "y2", "°C"),
    )
    for (name, values, axis, unit), colour in zip(
        series, (PALETTE[0], PALETTE[3]), strict=True
    ):
        fig.add_trace(
            go.Scatter(
                x=x,
                y=values,
                name=name,
                yaxis=axis,
                mode="lines+markers",
                line={"color": colour, "width": 1},
                marker={"color": colour, "symbol": symbols, "size": 7},
                customdata=custom,
                hovertemplate=(
                    f"%{{customdata[0]}}<br>{name}: %{{y:.0f}} {unit}"
                    "<br>%{customdata[1]}<extra></extra>"
                ),
            )
        )
    return fig


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


def figure_json(fig: go.Figure) -> dict[str, Any]:
    """Return ``fig`` as a JSON-safe dict (what REST and the widget trait carry).

    Arrays become lists, NaN and infinities become ``null``, and ``<``, ``>``, ``/``
    stay safe inside an HTML ``<script>``.

    Raises:
        Nothing.
    """
    result: dict[str, Any] = json.loads(pio.to_json(fig, validate=False))
    return result


def figures_to_json(
    records: Sequence[RunRecord],
    peaks: Peaks | None = None,
    *,
    dtype_by_annotation: Mapping[str, str] | None = None,
    max_points: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Every figure of one session as JSON, by name.

    ``duration`` and ``clocks`` always; ``roofline`` and ``traffic`` when ``peaks``
    is given and some region has FLOP and byte figures. Regions are placed under
    the roof of their dtype (``roofline.place_session``) unless
    ``dtype_by_annotation`` says otherwise.

    Raises:
        ValueError: A dtype in ``dtype_by_annotation`` is unknown or has no peak.
    """
    out = {
        "duration": figure_json(duration_figure(records, max_points)),
        "clocks": figure_json(clocks_figure(records)),
    }
    if peaks is not None:
        placements = (
            place_records(records, peaks, dtype_by_annotation)
            if dtype_by_annotation is not None
            else place_session(records, peaks)
        )
        if placements:
            out["roofline"] = figure_json(roofline_figure(placements, peaks))
            out["traffic"] = figure_json(traffic_figure(placements))
    return out


def write_html(fig: go.Figure, path: str | os.PathLike[str]) -> Path:
    """Write ``fig`` as a self-contained HTML page (plotly.js inline, no CDN).

    Raises:
        OSError: The file cannot be written.
    """
    out = Path(path)
    fig.write_html(out, include_plotlyjs=True, include_mathjax=False, full_html=True)
    return out


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
            export failed.
    """
    out = Path(path)
    image = go.Figure(fig)
    if background is not None:
        image.update_layout(paper_bgcolor=background, plot_bgcolor=background)
    try:
        png = image.to_image(format="png", width=width, height=height, scale=scale)
    except (RuntimeError, ValueError, OSError) as exc:
        if importlib.util.find_spec("kaleido") is None:
            hint = "install kaleido with: pip install 'kaleido>=1'"
        else:
            hint = (
                "kaleido needs Chrome or Chromium: install one (e.g. apt-get install "
                "chromium) or set BROWSER_PATH to its executable"
            )
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        msg = f"cannot write {str(out)!r} as PNG: {first}; {hint}"
        raise StaticExportError(msg) from exc
    out.write_bytes(png)
    return out
