"""The "DRAM traffic and time per region" chart (fusion's byte traffic).

Bytes read and written per region as stacked bars, time on a second axis; with two
regions the title gives their traffic and time ratios
(:func:`~nsight_lab.roofline.placement.traffic_comparison`), as in an unfused versus
fused comparison.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plotly.graph_objects as go

from nsight_lab.figures.text import _label, _text
from nsight_lab.figures.theme import PALETTE, _layout
from nsight_lab.roofline.placement import traffic_comparison

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.roofline.placement import Placement


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
    # The legend says where the bytes came from when one source gave every region's
    # (ncu, PM sampling or the model); the hover says it per bar.
    kinds = {p.bytes_source for p in placements}
    source = f", {next(iter(kinds))}" if len(kinds) == 1 else ""
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
                name=f"bytes {name}{source}",
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
