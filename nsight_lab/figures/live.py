"""The live duration, clock, per-rank and counter charts, updated run by run.

:class:`LiveFigures` keeps the figures of :func:`~nsight_lab.figures.durations.
duration_figure` and :func:`~nsight_lab.figures.telemetry.clocks_figure` as JSON and
turns new runs into the appends ``Plotly.extendTraces`` / ``Plotly.addTraces`` take,
in time proportional to the new runs (never rebuilding from every record). "Counters
over time" (PM sampling) is no series of points but each region's sampled timeline:
it is drawn again from the newest run of each region, and sent whole.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from nsight_lab.distributed.metrics import is_multi_rank
from nsight_lab.figures.common import WHOLE_RUNS, figure_json, finite_value
from nsight_lab.figures.counters import counters_figure
from nsight_lab.figures.durations import (
    duration_layout,
    duration_title,
    duration_traces,
    point_style,
)
from nsight_lab.figures.ranks import LiveRanks
from nsight_lab.figures.telemetry import (
    clock_custom,
    clock_ranges,
    clock_traces,
    clock_values,
    clocks_figure,
)
from nsight_lab.figures.text import meta_text, plotly_text, series_label
from nsight_lab.figures.theme import region_style
from nsight_lab.stats import RunningMean

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.contract.records import RunRecord


class _Group:
    """One (annotation, config) of the live duration figure: its traces and band."""

    __slots__ = ("band", "index", "label", "symbol")

    def __init__(self, index: int, label: str, symbol: str) -> None:
        self.index = index  # trace index of its lower band edge (then upper, points)
        self.label = label
        self.symbol = symbol  # the region's marker (region_style)
        self.band = RunningMean()  # the running band of duration_figure, run by run


_POINT_PATHS = ("x", "y", "marker.size", "marker.symbol", "customdata")
"""What one run adds to its trace of the duration chart."""


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
            "duration": figure_json(go.Figure(layout=duration_layout())),
            "clocks": figure_json(clocks_figure([], with_config=with_config)),
        }
        self.figures["duration"]["data"] = []
        # The clock chart ticks whole runs until there are more than WHOLE_RUNS (as
        # the final one): its first runs read 0, 1, 2, not 0, 0.5, 1, 1.5, 2. (The
        # duration chart's served layout is the view model's, from its runs.)
        self._whole: dict[str, int] = {"clocks": 0}
        """The runs along each chart's x so far, while it ticks every run."""
        clocks = self.figures["clocks"]["layout"]
        clocks["xaxis"] = {**clocks.get("xaxis", {}), "dtick": 1}
        self.points = 0
        """Points appended so far, over every trace."""
        self._groups: dict[tuple[str, int], _Group] = {}
        self._runs: set[tuple[int, int]] = set()
        self._ranks: LiveRanks | None = None
        """The ``ranks`` chart, from the first multi-rank record on."""
        self._sampled: dict[tuple[int, str], RunRecord] = {}
        """The newest run with counter samples of each (config, region)."""
        self._throttled = False
        """Whether a throttled run was drawn (the duration axis then explains it)."""
        self._spans: list[list[float]] = [[], []]
        """The lowest and highest SM clock and temperature so far (the axes' floors)."""

    def add(self, records: Sequence[RunRecord]) -> dict[str, dict[str, Any]]:
        """Append ``records`` (in the order they ran); return the appends per chart.

        Each chart's entry has ``traces`` (new traces, to add before extending) and
        ``extend`` (a list of ``{"indices": [...], "data": {path: [[...], ...]}}``,
        each one ``extendTraces`` call), and ``max_points``; the counters chart's
        has ``figure`` instead, drawn whole. Charts with nothing new are left out.

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
        counters = self._add_counters(records)
        if counters is not None:
            out["counters"] = counters
        return out

    def _add_counters(self, records: Sequence[RunRecord]) -> dict[str, Any] | None:
        """Counters over time, drawn whole from each region's newest sampled run.

        Its change is ``{"figure": ...}``: the figure to draw in place of the one
        shown (a timeline is redrawn, not extended). The final figure (every record:
        each region's run of median duration) is :func:`figures_to_json`'s.
        """
        fresh = [r for r in records if r.series is not None]
        if not fresh:
            return None
        for record in fresh:
            self._sampled[(record.config_index, record.annotation)] = record
        fig = counters_figure(list(self._sampled.values()))
        if fig is None:
            return None
        self.figures["counters"] = figure_json(fig)
        return {"figure": self.figures["counters"]}

    def _add_ranks(self, records: Sequence[RunRecord]) -> dict[str, Any] | None:
        """The per-rank chart's appends (a multi-rank profile's; none otherwise)."""
        if self._ranks is None:
            if not any(is_multi_rank(r) for r in records):
                return None
            self._ranks = LiveRanks(with_config=self.with_config)
            self.figures["ranks"] = LiveRanks.empty_figure()
        traces, extend = self._ranks.add(records)
        return self._apply("ranks", traces, extend)

    # -- internals --------------------------------------------------------------------
    def _add_durations(self, records: Sequence[RunRecord]) -> dict[str, Any] | None:
        new_traces: list[dict[str, Any]] = []
        points: dict[int, dict[str, list[Any]]] = {}
        band: dict[int, tuple[list[int], list[float | None], list[float | None]]] = {}
        for record in records:
            group = self._duration_group(record, new_traces)
            value = record.duration_ns / 1e3
            size, symbol, custom = point_style(record, group.label, group.symbol)
            column = points.setdefault(
                group.index + 2, {path: [] for path in _POINT_PATHS}
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
                lows.append(finite_value(edges[0]))
                highs.append(finite_value(edges[1]))
        extend = []
        if points:
            indices = list(points)
            columns = {
                path: [points[i][path] for i in indices] for path in _POINT_PATHS
            }
            extend.append(_extend_op(indices, columns))
        if band:
            indices = []
            xs_out: list[list[Any]] = []
            ys_out: list[list[Any]] = []
            for i, (xs, lows, highs) in band.items():
                indices += [i, i + 1]
                xs_out += [xs, xs]
                ys_out += [lows, highs]
            extend.append(_extend_op(indices, {"x": xs_out, "y": ys_out}))
        change = self._apply("duration", new_traces, extend)
        if self._throttled or not any(r.telemetry.throttled for r in records):
            return change
        # The first throttled run: the axis says what its open marker means.
        self._throttled = True
        title = {"text": duration_title(throttled=True)}
        self.figures["duration"]["layout"]["yaxis"]["title"] = title
        return self._with_layout(change, {"yaxis": {"title": title}})

    def _duration_group(
        self, record: RunRecord, new_traces: list[dict[str, Any]]
    ) -> _Group:
        """The record's (region, config) group; a new one's traces go to new_traces."""
        key = (record.annotation, record.config_index)
        group = self._groups.get(key)
        if group is not None:
            return group
        label = plotly_text(
            series_label(record.annotation, record.config, self.with_config)
        )
        meta = {
            "annotation": meta_text(record.annotation),
            "config_index": record.config_index,
        }
        traces = duration_traces(
            len(self._groups),
            label=label,
            meta=meta,
            band=([], [], []),
            points=([], []),
            styles=[],
        )
        group = _Group(
            len(self.figures["duration"]["data"]) + len(new_traces),
            label,
            region_style(len(self._groups)).symbol,
        )
        self._groups[key] = group
        # As figure_json writes them (JSON-safe: names, numbers, lists).
        new_traces.extend(json.loads(json.dumps(t.to_plotly_json())) for t in traces)
        return group

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
            clock, temperature = clock_values(record)
            sm.append(finite_value(clock))
            temp.append(finite_value(temperature))
            symbols.append("x" if record.telemetry.throttled else "circle")
            custom.append(clock_custom(record, self.with_config))
        if not xs:
            return None
        traces: list[dict[str, Any]] = []
        if not self.figures["clocks"]["data"]:
            if not any(v is not None for v in (*sm, *temp)):
                return None  # no telemetry yet: the chart stays empty (views say why)
            traces = [
                figure_json(go.Figure(data=[t], layout=go.Layout()))["data"][0]
                for t in clock_traces()
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
        change = self._apply("clocks", traces, [op])
        layout = {
            **self._floor_clocks(sm, temp),
            **self._run_ticks("clocks", len(self._runs)),
        }
        return self._with_layout(change, layout)

    @staticmethod
    def _with_layout(
        change: dict[str, Any] | None, layout: dict[str, Any]
    ) -> dict[str, Any] | None:
        """``change`` with a layout update (none: as it is)."""
        return change if change is None or not layout else {**change, "layout": layout}

    def _run_ticks(self, name: str, runs: int) -> dict[str, Any]:
        """Chart ``name``'s x ticks once ``runs`` pass :data:`WHOLE_RUNS`: plotly's.

        A layout update (for the front end's append), once; ``{}`` otherwise.
        """
        if name not in self._whole:
            return {}
        self._whole[name] = max(self._whole[name], runs)
        if self._whole[name] <= WHOLE_RUNS:
            return {}
        del self._whole[name]
        # Kept as sent: the figure here is the front end's with the appends.
        self.figures[name]["layout"]["xaxis"]["dtick"] = None
        return {"xaxis": {"dtick": None}}

    def _floor_clocks(
        self, sm: list[float | None], temp: list[float | None]
    ) -> dict[str, Any]:
        """The clock chart's axes over every run so far, floored as the final one's.

        :func:`~nsight_lab.figures.telemetry.clock_ranges` of the lowest and highest
        values (what it depends on), applied to the figure kept here; returned (a
        layout update, for the front end's append) only when an axis changed.
        """
        changed = False
        for span, values in zip(self._spans, (sm, temp), strict=True):
            finite = [v for v in values if v is not None]
            new = [min(finite + span[:1]), max(finite + span[1:])] if finite else span
            changed |= new != span
            span[:] = new
        if not changed:
            return {}
        ranges = clock_ranges(*self._spans)
        layout = self.figures["clocks"]["layout"]
        for axis, update in ranges.items():
            layout[axis] = {**layout.get(axis, {}), **update}
        return dict(json.loads(json.dumps(ranges)))

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
