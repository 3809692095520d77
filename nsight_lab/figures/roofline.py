"""The roofline chart: the device's roofs and each region placed under them.

Log-log axes: the DRAM roof, one compute roof per dtype, the ridge points, then one
marker per region (its symbol says whether its FLOPs and bytes were measured or
modelled). The placement itself is :mod:`nsight_lab.roofline.placement`'s.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import plotly.graph_objects as go

from nsight_lab.figures.text import _label, _text
from nsight_lab.figures.theme import NEUTRAL, PALETTE, _layout
from nsight_lab.roofline.placement import DEFAULT_DTYPE

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.roofline.placement import Peaks, Placement

SOURCE_SYMBOLS = {
    "measured": "circle",
    "measured (PM sampling)": "circle",
    "modelled": "diamond-open",
    "mixed": "square-open",
}
ROOF_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def _source(p: Placement) -> str:
    return p.flops_source if p.flops_source == p.bytes_source else "mixed"


def _source_words(p: Placement) -> str:
    """Where a region's figures came from, for its legend entry.

    One word where both agree, else each: PM sampling measures the bytes while the
    FLOPs stay modelled.
    """
    if p.flops_source == p.bytes_source:
        return p.flops_source
    return f"FLOPs {p.flops_source}, bytes {p.bytes_source}"


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
                name=f"{label} ({_source_words(p)})",
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
