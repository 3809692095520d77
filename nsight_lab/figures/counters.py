"""The "Counters over time" chart: PM-sampled counter rates within each region.

The run of median duration of each region is drawn, regions end to end, one row per
unit and one trace per metric (:mod:`nsight_lab.backends.pm.series` holds the
samples); no chart without any series.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from nsight_lab.figures.common import _finite
from nsight_lab.figures.text import _label, _text
from nsight_lab.figures.theme import NEUTRAL, PALETTE, _layout

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.records import RunRecord

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


def _row_suffix(row: int) -> str:
    """Plotly's name suffix of the ``row``-th y axis: ``""``, ``"2"``, ``"3"``..."""
    return "" if row == 0 else str(row + 1)


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
        f"yaxis{_row_suffix(i)}": {
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
            # The one time axis under the lowest row (rows stack from the top).
            xaxis={
                "title": {"text": "time within each region (µs)"},
                "anchor": f"y{_row_suffix(len(units) - 1)}",
            },
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
                yaxis=f"y{_row_suffix(row)}",
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
