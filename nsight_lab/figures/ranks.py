"""The per-rank charts of a multi-rank session, built once in Python like every chart.

* :func:`ranks_figure` (chart ``ranks``): each region's duration per run on every
  rank (one colour per rank), its span over the ranks (dashed), and the straggler of
  each run marked with a star on its own point;
* :func:`rank_clocks_figure` (chart ``rank_clocks``): each GPU's SM clock (left axis)
  and temperature (right axis, dotted) per run, one colour per rank; only where
  NVML telemetry was read.

:func:`nsight_lab.figures.figures_to_json` adds them to the figure set of a session
whose records carry ranks (:func:`~nsight_lab.distributed.metrics.is_multi_rank`),
so the sidebar, the session panels and the widget draw them as they draw the others
(TypeScript only mounts them). Theme-neutral and escaped as the figures module's
charts are: user names reach hover text only as ``customdata``.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from nsight_lab.distributed import metrics as m
from nsight_lab.figures.common import decimate, figure_json, new_scatter
from nsight_lab.figures.telemetry import clock_figure
from nsight_lab.figures.text import meta_text, plotly_text, series_label
from nsight_lab.figures.theme import NEUTRAL, PALETTE, base_layout

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.contract.records import RunRecord

RANKS_CHART = "ranks"
RANK_CLOCKS_CHART = "rank_clocks"
STRAGGLER_SYMBOL = "star"
REGION_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "cross", "x")
"""Marker of each region's per-rank points (the colour is the rank's)."""
REGION_DASHES = ("solid", "dot", "dashdot", "longdash")


def _colour(rank: int) -> str:
    return PALETTE[rank % len(PALETTE)]


def finite_value(value: float | None) -> float | None:
    """JSON-safe number: NaN and infinities as None."""
    return value if value is not None and math.isfinite(value) else None


def _rank_groups(
    records: Sequence[RunRecord],
) -> dict[tuple[str, int], list[RunRecord]]:
    groups: dict[tuple[str, int], list[RunRecord]] = defaultdict(list)
    for record in records:
        if m.is_multi_rank(record):
            groups[(record.annotation, record.config_index)].append(record)
    return groups


def _ranks(group: Sequence[RunRecord]) -> list[int]:
    found: set[int] = set()
    for record in group:
        found.update(m.per_rank(record, m.DEVICE))
    return sorted(found)


def _ranks_layout() -> go.Layout:
    return base_layout(
        "Duration per rank per run",
        xaxis={"title": {"text": "run"}},
        yaxis={"title": {"text": "duration (µs)"}, "rangemode": "tozero"},
    )


def _rank_trace(label: str, meta: dict[str, Any], gi: int, rank: int) -> go.Scatter:
    """One rank's empty trace of region number ``gi``: its colour, the region's dash."""
    return new_scatter(
        x=[],
        y=[],
        name=f"{label} rank {rank}",
        mode="lines+markers",
        line={
            "color": _colour(rank),
            "width": 1,
            "dash": REGION_DASHES[gi % len(REGION_DASHES)],
        },
        marker={
            "color": _colour(rank),
            "size": 6,
            "symbol": REGION_SYMBOLS[gi % len(REGION_SYMBOLS)],
        },
        customdata=[],
        hovertemplate=(
            "%{customdata[0]}, rank %{customdata[1]}<br>run %{x}: "
            "%{y:.3f} µs<extra></extra>"
        ),
        legendgroup=f"r{gi}",
        meta={**meta, "rank": rank},
    )


def _group_traces(
    label: str, meta: dict[str, Any], gi: int, ranks: Sequence[int]
) -> list[go.Scatter]:
    """One region's traces, empty: its span, each rank, its stragglers."""
    traces = [
        new_scatter(
            x=[],
            y=[],
            name=f"{label} span",
            mode="lines",
            line={"color": NEUTRAL, "width": 1, "dash": "dash"},
            customdata=[],
            hovertemplate="%{customdata} span<br>run %{x}: %{y:.3f} µs<extra></extra>",
            legendgroup=f"r{gi}",
            meta={**meta, "rank": m.SPAN},
        )
    ]
    traces.extend(_rank_trace(label, meta, gi, rank) for rank in ranks)
    traces.append(
        new_scatter(
            x=[],
            y=[],
            name=f"{label} straggler",
            mode="markers",
            marker={
                "symbol": STRAGGLER_SYMBOL,
                "size": 13,
                "color": [],
                "line": {"width": 1, "color": NEUTRAL},
            },
            customdata=[],
            hovertemplate=(
                "%{customdata[0]}<br>run %{x}: straggler rank %{customdata[1]}, "
                "%{y:.3f} µs<extra></extra>"
            ),
            legendgroup=f"r{gi}",
            meta={**meta, "straggler": True},
        )
    )
    return traces


def _points(
    record: RunRecord, label: str, ranks: Sequence[int]
) -> dict[int, dict[str, Any]]:
    """One run's point on each of its region's traces, by trace offset and path.

    Offset 0 is the span, ``1 + i`` the ``i``-th rank, the last the straggler
    (no point there in a run without one).
    """
    points: dict[int, dict[str, Any]] = {
        0: {
            "x": record.run_index,
            "y": finite_value(record.duration_ns / 1e3),
            "customdata": label,
        }
    }
    for i, rank in enumerate(ranks, start=1):
        value = record.metrics.get(m.rank_metric(m.DURATION, rank), math.nan)
        points[i] = {
            "x": record.run_index,
            "y": finite_value(value / 1e3),
            "customdata": [label, rank],
        }
    who = record.metrics.get(m.STRAGGLER, math.nan)
    if not math.isnan(who):
        rank = int(who)
        value = record.metrics.get(m.rank_metric(m.DURATION, rank), math.nan)
        points[len(ranks) + 1] = {
            "x": record.run_index,
            "y": finite_value(value / 1e3),
            "customdata": [label, rank],
            "marker.color": _colour(rank),
        }
    return points


def _group_label(
    annotation: str, ci: int, record: RunRecord, *, with_config: bool
) -> tuple[str, dict[str, Any]]:
    raw = series_label(annotation, record.config, with_config)
    meta: dict[str, Any] = {
        "annotation": meta_text(annotation),
        "config_index": ci,
    }
    return plotly_text(raw), meta


def ranks_figure(
    records: Sequence[RunRecord], max_points: int | None = None
) -> go.Figure:
    """Duration per rank per run, the span dashed, the straggler starred.

    Per (region, config): a dashed span trace (the record's duration), one
    lines-and-markers trace per rank (its own duration, µs; the colour is the
    rank's, the marker and line style the region's), and one trace of star markers
    at each run's straggler's point. Records without ranks are left out;
    ``max_points`` thins each region's runs evenly (all when None).
    :class:`LiveRanks` appends to the same traces run by run.

    Raises:
        Nothing.
    """
    groups = _rank_groups(records)
    with_config = len({ci for _, ci in groups}) > 1
    fig = go.Figure(layout=_ranks_layout(), _validate=False)
    for gi, ((annotation, ci), every) in enumerate(groups.items()):
        group = _thinned(every, max_points)
        label, meta = _group_label(annotation, ci, group[0], with_config=with_config)
        ranks = _ranks(group)
        traces = _group_traces(label, meta, gi, ranks)
        columns: dict[int, dict[str, list[Any]]] = defaultdict(
            lambda: defaultdict(list)
        )
        for record in group:
            for offset, values in _points(record, label, ranks).items():
                for path, value in values.items():
                    columns[offset][path].append(value)
        for offset, trace in enumerate(traces):
            for path, column in columns.get(offset, {}).items():
                trace[path] = column
        fig.add_traces(traces)
    return fig


class LiveRanks:
    """The ``ranks`` chart built run by run, as JSON appends (the live widget's).

    The traces and points of :func:`ranks_figure`; :meth:`add` returns what
    ``Plotly.addTraces`` and ``Plotly.extendTraces`` take, as
    :class:`nsight_lab.figures.LiveFigures` does for its charts (which calls it).
    """

    def __init__(self, *, with_config: bool) -> None:
        """Start with no region (the figure is made by :func:`empty_figure`)."""
        self.with_config = with_config
        self._groups: dict[tuple[str, int], tuple[int, list[int], str]] = {}
        self._traces = 0

    @staticmethod
    def empty_figure() -> dict[str, Any]:
        """The chart's figure JSON before its first run."""
        figure = figure_json(go.Figure(layout=_ranks_layout()))
        figure["data"] = []
        return figure

    def add(
        self, records: Sequence[RunRecord]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The new traces and the extend operations for ``records``' points.

        Raises:
            Nothing.
        """
        new_traces: list[dict[str, Any]] = []
        columns: dict[int, dict[str, list[Any]]] = defaultdict(
            lambda: defaultdict(list)
        )
        for record in records:
            if not m.is_multi_rank(record):
                continue
            key = (record.annotation, record.config_index)
            if key not in self._groups:
                label, meta = _group_label(*key, record, with_config=self.with_config)
                ranks = _ranks([record])
                traces = _group_traces(label, meta, len(self._groups), ranks)
                self._groups[key] = (self._traces, ranks, label)
                self._traces += len(traces)
                new_traces.extend(
                    json.loads(json.dumps(t.to_plotly_json())) for t in traces
                )
            first, ranks, label = self._groups[key]
            for offset, values in _points(record, label, ranks).items():
                for path, value in values.items():
                    columns[first + offset][path].append(value)
        extend: list[dict[str, Any]] = []
        by_paths: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for index, by_path in columns.items():
            by_paths[tuple(by_path)].append(index)
        for paths, indices in by_paths.items():
            extend.append(
                {
                    "indices": indices,
                    "data": {p: [columns[i][p] for i in indices] for p in paths},
                }
            )
        return new_traces, extend


def rank_clocks_figure(
    records: Sequence[RunRecord], max_points: int | None = None
) -> go.Figure | None:
    """Each GPU's SM clock and temperature per run; ``None`` without telemetry.

    Runs are numbered in the order they ran over all configs (each run's first
    region gives its telemetry, as :func:`nsight_lab.figures.clocks_figure` does).

    Raises:
        Nothing.
    """
    runs: dict[tuple[int, int], RunRecord] = {}
    for record in records:
        if m.is_multi_rank(record):
            runs.setdefault((record.config_index, record.run_index), record)
    every = _thinned(list(runs.values()), max_points)
    series = {
        rank: (
            [
                finite_value(r.metrics.get(m.rank_metric(m.SM_CLOCK, rank)))
                for r in every
            ],
            [
                finite_value(r.metrics.get(m.rank_metric(m.TEMPERATURE, rank)))
                for r in every
            ],
        )
        for rank in _ranks(every)
    }
    if not any(v is not None for sm, temp in series.values() for v in (*sm, *temp)):
        return None
    fig = clock_figure("SM clock and temperature per GPU")
    x = list(range(len(every)))
    for rank, (sm, temp) in series.items():
        device = m.device_label(every[0].metrics.get(m.rank_metric(m.DEVICE, rank)))
        for values, what, axis, unit, dash in (
            (sm, "SM clock", "y", "MHz", "solid"),
            (temp, "temperature", "y2", "°C", "dot"),
        ):
            fig.add_trace(
                new_scatter(
                    x=x,
                    y=values,
                    name=f"rank {rank} ({device}) {what}",
                    yaxis=axis,
                    mode="lines+markers",
                    line={"color": _colour(rank), "width": 1, "dash": dash},
                    marker={"color": _colour(rank), "size": 5},
                    hovertemplate=(
                        f"rank {rank} ({device})<br>run %{{x}}: {what} "
                        f"%{{y:.0f}} {unit}<extra></extra>"
                    ),
                    meta={"rank": rank, "quantity": what},
                )
            )
    return fig


def _thinned(group: Sequence[RunRecord], max_points: int | None) -> list[RunRecord]:
    return [group[k] for k in decimate(len(group), max_points)]


def rank_figures(
    records: Sequence[RunRecord], max_points: int | None = None
) -> dict[str, go.Figure]:
    """The per-rank charts of ``records`` by name (none for single-rank records).

    Raises:
        Nothing.
    """
    if not any(m.is_multi_rank(r) for r in records):
        return {}
    out = {RANKS_CHART: ranks_figure(records, max_points)}
    clocks = rank_clocks_figure(records, max_points)
    if clocks is not None:
        out[RANK_CLOCKS_CHART] = clocks
    return out
