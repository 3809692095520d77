"""The "Counters over time" chart: PM-sampled counter rates within each region.

The run of median duration of each region is drawn in a small panel of its own, on
its own time axis, panels of one unit sharing their y axis, with the DRAM roof
drawn where the device's peaks are known (:mod:`nsight_lab.backends.pm.series`
holds the samples); no chart without any series.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from nsight_lab.backends.pm.series import unpack
from nsight_lab.figures.common import finite_value
from nsight_lab.figures.text import meta_text, plotly_text, series_label
from nsight_lab.figures.theme import NEUTRAL, PALETTE, base_layout, region_style

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nsight_lab.contract.records import RunRecord
    from nsight_lab.figures.common import RegionKey
    from nsight_lab.roofline.placement import Peaks

COUNTER_UNIT_ORDER = ("GB/s", "%", "/s", "")
"""Blocks of panels of the "Counters over time" chart, top to bottom, by unit."""


def _representative(group: Sequence[RunRecord]) -> RunRecord:
    """The run of median duration (the lower middle one): a typical run to draw."""
    ordered = sorted(group, key=lambda r: (r.duration_ns, r.run_index))
    return ordered[(len(ordered) - 1) // 2]


def _counter_spans(
    records: Sequence[RunRecord],
) -> list[tuple[RegionKey, str, RunRecord, Any]]:
    """(key, label, representative record, unpacked series) of each sampled region."""
    groups: dict[tuple[int, str], list[RunRecord]] = defaultdict(list)
    for record in records:
        if record.series is not None:
            groups[(record.config_index, record.annotation)].append(record)
    with_config = len({ci for ci, _ in groups}) > 1
    spans: list[tuple[RegionKey, str, RunRecord, Any]] = []
    for (config_index, annotation), group in groups.items():
        chosen = _representative(group)
        try:
            series = unpack(chosen.series or b"")
        except ValueError:
            continue
        if series.t_us:
            label = series_label(chosen.annotation, chosen.config, with_config)
            spans.append(((annotation, config_index), label, chosen, series))
    return spans


PANEL_PX = 84
"""Height of one region's panel."""
TITLE_PX = 20
TICKS_PX = 26
"""Room above a panel for its region's name, and below it for its time ticks."""
NAME_CHARS = {1: 60, 2: 34, 3: 22}
"""Longest region name over a panel, by panels per row (whole in the hover)."""


def _columns(regions: int) -> int:
    if regions <= 1:
        return 1
    return 2 if regions <= 6 else 3  # noqa: PLR2004


def _axis_suffix(panel: int) -> str:
    """Plotly's name suffix of the ``panel``-th axis: ``""``, ``"2"``, ``"3"``..."""
    return "" if panel == 0 else str(panel + 1)


def _short(label: str, chars: int) -> str:
    return label if len(label) <= chars else label[: chars - 1] + "\u2026"


def counters_figure(
    records: Sequence[RunRecord],
    peaks: Peaks | None = None,
    *,
    order: Mapping[RegionKey, int] | None = None,
) -> go.Figure | None:
    """Counter rates over time, one small panel per region (PM sampling).

    For each region (and config) the run of median duration is drawn: its sampled
    rates (``RunRecord.series``, see :mod:`nsight_lab.backends.pm.series`) against
    the time since the region's first kernel started, on the region's own time
    axis, in a grid of panels (up to three per row) in the order the regions ran,
    each titled with the region's name and sign (:func:`region_style` of its
    number in ``order``). Panels of one unit (GB/s, %, per second) share their y
    axis, so heights compare across regions; with ``peaks`` the GB/s panels draw
    the device's DRAM bandwidth roof. One trace per metric and region, one legend
    entry per metric. The figure's height grows with the rows.

    Raises:
        Nothing: a series that cannot be read is left out.
    """
    spans = _counter_spans(records)
    if not spans:
        return None
    if order is None:
        order = {key: i for i, (key, *_) in enumerate(spans)}
    grid = _Grid.of(spans, peaks)
    axes: dict[str, Any] = {}
    annotations: list[dict[str, Any]] = []
    traces: list[go.Scatter] = []
    legend: set[str] = set()
    panel = 0
    for u, unit in enumerate(grid.units):
        for k, (key, label, record, series) in enumerate(spans):
            suffix = _axis_suffix(panel)
            width = max(*series.t_us, record.duration_ns / 1e3, 1e-3)
            x0, y1 = grid.panel_axes(axes, (u, k), suffix, width)
            glyph = region_style(order.get(key, k)).glyph
            annotations.append(_panel_title(glyph, label, grid.columns, (x0, y1)))
            traces += grid.panel_traces(unit, (label, record, series), suffix, legend)
            if grid.roof is not None and unit == "GB/s":
                traces.append(_roof_trace(grid.roof, width, suffix, legend))
            panel += 1
    top_px, bottom_px = 80, 30
    fig = go.Figure(
        layout=base_layout(
            "Counters over time (PM sampling)<br><sup>the median run of each "
            "region, from its first kernel</sup>",
            height=top_px + grid.plot_px + bottom_px,
            annotations=annotations,
            **axes,
        )
    )
    # No axis on the right: its margin goes to the panels.
    fig.update_layout(margin={"t": top_px, "b": bottom_px, "r": 20})
    fig.add_traces(traces)
    return fig


@dataclass(frozen=True)
class _Grid:
    """The chart's grid: a block of rows per unit, ``columns`` panels per row."""

    spans: int
    units: list[str]
    unit_of: dict[str, str]
    metrics: list[str]
    columns: int
    rows_per_unit: int
    plot_px: int
    highest: dict[str, float]
    """Per unit, the highest value of any panel (and the roof): the shared y range."""
    roof: float | None
    """The device's DRAM bandwidth in GB/s, when its peaks are known."""

    @classmethod
    def of(
        cls, spans: Sequence[tuple[RegionKey, str, RunRecord, Any]], peaks: Peaks | None
    ) -> _Grid:
        unit_of = {
            m: u for *_, s in spans for m, u in zip(s.metrics, s.units, strict=True)
        }
        units = [u for u in COUNTER_UNIT_ORDER if u in unit_of.values()]
        units += sorted(set(unit_of.values()).difference(units))
        columns = _columns(len(spans))
        rows_per_unit = -(-len(spans) // columns)
        roof = peaks.dram_bytes_per_s / 1e9 if peaks is not None else None
        highest: dict[str, float] = dict.fromkeys(units, 0.0)
        for *_, series in spans:
            for metric, column in zip(series.metrics, series.values, strict=True):
                finite = [v for v in (finite_value(x) for x in column) if v is not None]
                if finite:
                    unit = unit_of[metric]
                    highest[unit] = max(highest[unit], *finite)
        if roof is not None and "GB/s" in highest:
            highest["GB/s"] = max(highest["GB/s"], roof)
        return cls(
            spans=len(spans),
            units=units,
            unit_of=unit_of,
            metrics=list(unit_of),
            columns=columns,
            rows_per_unit=rows_per_unit,
            plot_px=rows_per_unit * len(units) * (PANEL_PX + TITLE_PX + TICKS_PX),
            highest=highest,
            roof=roof,
        )

    def panel_axes(
        self, axes: dict[str, Any], at: tuple[int, int], suffix: str, width: float
    ) -> tuple[float, float]:
        """Add the x and y axes of unit ``at[0]``'s panel of region ``at[1]``.

        Returns its left edge and its top (paper fractions), where its title goes.
        """
        u, k = at
        columns = self.columns
        row = u * self.rows_per_unit + k // columns
        col = k % columns
        x0 = col / columns + (0.0 if col == 0 else 0.03)
        x1 = (col + 1) / columns - (0.0 if col == columns - 1 else 0.03)
        y1 = 1 - (row * (PANEL_PX + TITLE_PX + TICKS_PX) + TITLE_PX) / self.plot_px
        y0 = y1 - PANEL_PX / self.plot_px
        unit = self.units[u]
        axes[f"xaxis{suffix}"] = {
            "domain": [x0, x1],
            "anchor": f"y{suffix}",
            "range": [0, width * 1.02],
            "nticks": 4,
            "title": {"text": "µs" if k + columns >= self.spans else ""},
            "title_standoff": 2,
        }
        axes[f"yaxis{suffix}"] = {
            "domain": [max(y0, 0.0), min(y1, 1.0)],
            "anchor": f"x{suffix}",
            "range": [0, (self.highest[unit] or 1.0) * 1.08],
            "nticks": 3,
            "showticklabels": col == 0,
            "title": {"text": (unit or "value") if col == 0 else ""},
        }
        if k > 0:  # zoom one panel of a unit, zoom them all
            axes[f"yaxis{suffix}"]["matches"] = f"y{_axis_suffix(u * self.spans)}"
        return x0, y1

    def panel_traces(
        self,
        unit: str,
        span: tuple[str, RunRecord, Any],
        suffix: str,
        legend: set[str],
    ) -> list[go.Scatter]:
        """The traces of one panel: each metric of ``unit`` in the region's run."""
        label, record, series = span
        traces = []
        for metric, column in zip(series.metrics, series.values, strict=True):
            if self.unit_of[metric] != unit:
                continue
            colour = PALETTE[self.metrics.index(metric) % len(PALETTE)]
            traces.append(
                go.Scatter(
                    x=list(series.t_us),
                    y=[finite_value(v) for v in column],
                    xaxis=f"x{suffix}",
                    yaxis=f"y{suffix}",
                    name=plotly_text(f"{metric} ({unit or 'value'})"),
                    legendgroup=metric,
                    showlegend=metric not in legend,
                    mode="lines+markers",
                    line={"color": colour, "width": 1.5},
                    marker={"size": 3},
                    customdata=[
                        [plotly_text(label), str(record.run_index)] for _ in series.t_us
                    ],
                    hovertemplate=(
                        "%{customdata[0]} (run %{customdata[1]})<br>%{x:.4g} µs "
                        f"in: %{{y:.4g}} {plotly_text(unit)}"
                        f"<extra>{plotly_text(metric)}</extra>"
                    ),
                    meta={
                        "metric": metric,
                        "annotation": meta_text(record.annotation),
                        "config_index": record.config_index,
                    },
                )
            )
            legend.add(metric)
        return traces


def _panel_title(
    glyph: str, label: str, columns: int, at: tuple[float, float]
) -> dict[str, Any]:
    """A panel's title: the region's sign and name (shortened; whole in the hover)."""
    return {
        "text": f"{glyph} " + plotly_text(_short(label, NAME_CHARS[columns])),
        "x": at[0],
        "xref": "paper",
        "xanchor": "left",
        "y": at[1],
        "yref": "paper",
        "yanchor": "bottom",
        "showarrow": False,
        "hovertext": plotly_text(label),
    }


def _roof_trace(roof: float, width: float, suffix: str, legend: set[str]) -> go.Scatter:
    """The DRAM bandwidth roof across a GB/s panel (one legend entry)."""
    trace = go.Scatter(
        x=[0, width * 1.02],
        y=[roof, roof],
        xaxis=f"x{suffix}",
        yaxis=f"y{suffix}",
        name=f"DRAM roof {roof / 1e3:.3g} TB/s",
        legendgroup="roof",
        showlegend="roof" not in legend,
        mode="lines",
        line={"color": NEUTRAL, "width": 1.5, "dash": "dash"},
        hovertemplate=(f"DRAM roof: {roof:.4g} GB/s<extra></extra>"),
    )
    legend.add("roof")
    return trace
