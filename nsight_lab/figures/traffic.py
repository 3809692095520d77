"""The "DRAM traffic per region" chart (fusion's byte traffic).

Bytes read and written per region as stacked horizontal bars, names readable on
the left, each region's DRAM bandwidth printed at its bar's end, the legend's
:data:`RATE_KEY` saying what that printed figure is; with two
regions the title gives their traffic and time ratios
(:func:`~nsight_lab.roofline.traffic.traffic_comparison`), as in an unfused versus
fused comparison.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from nsight_lab.figures.kernels import kernels_hover
from nsight_lab.figures.text import plotly_text, series_label
from nsight_lab.figures.theme import PALETTE, base_layout, region_style
from nsight_lab.roofline.traffic import traffic_comparison

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nsight_lab.figures.common import RegionKey
    from nsight_lab.roofline.placement import Placement, RegionWork

    Bars = Placement | RegionWork  # placed under the roofs, or the work alone


BAR_PX = 24
"""Height of one region's row."""
RATE_KEY = "GB/s printed: DRAM bandwidth = bytes ÷ median time"
"""The legend entry of the figures printed at the bars' ends: bars measure bytes,
the printed figure is a rate."""
NAME_CHARS = 28
"""Longest region name written beside its bar (longer ones end in an ellipsis,
whole in the hover)."""


def _short(label: str) -> str:
    return label if len(label) <= NAME_CHARS else label[: NAME_CHARS - 1] + "\u2026"


def _rate(bytes_per_s: float) -> str:
    return (
        f"{bytes_per_s / 1e12:.3g} TB/s"
        if bytes_per_s >= 1e12  # noqa: PLR2004
        else f"{bytes_per_s / 1e9:.3g} GB/s"
    )


def traffic_figure(
    placements: Sequence[Bars],
    *,
    order: Mapping[RegionKey, int] | None = None,
    kernels: Mapping[RegionKey, Sequence[str]] | None = None,
) -> go.Figure:
    """DRAM bytes read and written per region as horizontal bars, GB/s printed.

    One row per region, top to bottom in the order they ran, its name on the left
    (with its sign in the region's colour and shape, :func:`region_style` of its
    number in ``order``), read and written bytes stacked, and at the bar's end the
    region's achieved DRAM bandwidth (bytes over its median time); the hover adds
    the time and, with ``kernels`` (by (annotation, config index)), the region's
    kernels. ``placements`` may be :class:`~nsight_lab.roofline.placement.
    RegionWork` rows (a device whose peaks are unknown: the work model's bytes).
    The legend says where the bytes came from: measured (Nsight Compute,
    PM sampling) wins over the model wherever a run has both, and the title says
    "modelled" when every region's bytes are the work model's; its last entry
    (:data:`RATE_KEY`) says what the printed figures are. With exactly two
    regions the title gives their traffic and time ratios (first over second), as
    in an unfused-versus-fused comparison. The figure's height grows with the
    regions (:data:`BAR_PX` each).

    Raises:
        Nothing.
    """
    if order is None:
        order = {(p.annotation, p.config_index): i for i, p in enumerate(placements)}
    with_config = len({p.config_index for p in placements}) > 1
    names = [series_label(p.annotation, p.config, with_config) for p in placements]
    labels = [plotly_text(name) for name in names]
    styles = [
        region_style(order.get((p.annotation, p.config_index), i))
        for i, p in enumerate(placements)
    ]
    # Unique category names, in the region's sign and colour: two regions never
    # share a row, whatever their names.
    rows = [
        f"{plotly_text(_short(name))} {style.glyph}" + "\u200b" * names[:i].count(name)
        for i, (name, style) in enumerate(zip(names, styles, strict=True))
    ]
    fig = go.Figure(layout=_layout(placements, labels, rows))
    # No axis on the right (the GB/s figures have room inside the x range).
    fig.update_layout(margin={"r": 20})
    _add_bars(fig, placements, labels, rows, kernels or {})
    return fig


def _layout(
    placements: Sequence[Bars], labels: Sequence[str], rows: Sequence[str]
) -> go.Layout:
    """The chart's layout: the title (with two regions' ratios), rows, byte axis."""
    title = "DRAM traffic per region"
    if placements and all(p.bytes_source == "modelled" for p in placements):
        title += " (modelled bytes)"
    if len(placements) == 2:  # noqa: PLR2004
        c = traffic_comparison(placements[0], placements[1])
        title += (
            f"<br><sup>{labels[0]} / {labels[1]}: {c.traffic_ratio:.3g}&times; bytes, "
            f"{c.time_ratio:.3g}&times; time</sup>"
        )
    top = max((p.bytes_total for p in placements), default=0.0) or 1.0
    # Room right of the longest bar for its figure (~9 characters).
    return base_layout(
        title,
        barmode="stack",
        height=150 + BAR_PX * len(placements),
        yaxis={
            "type": "category",
            "autorange": "reversed",
            "automargin": True,
            "categoryorder": "array",
            "categoryarray": list(rows),
        },
        xaxis={
            "title": {"text": "DRAM bytes per run"},
            "tickformat": "~s",
            "ticksuffix": "B",
            "range": [0, top * 1.45],
            "nticks": 5,
        },
        bargap=0.25,
    )


def _add_bars(
    fig: go.Figure,
    placements: Sequence[Bars],
    labels: Sequence[str],
    rows: Sequence[str],
    kernels: Mapping[RegionKey, Sequence[str]],
) -> None:
    """Read and written bytes stacked per row, the bandwidth at each bar's end."""
    rows = list(rows)
    # The legend says where the bytes came from when one source gave every region's
    # (ncu, PM sampling or the model); the hover says it per bar.
    kinds = {p.bytes_source for p in placements}
    source = f", {next(iter(kinds))}" if len(kinds) == 1 else ""
    custom = [
        [
            label,
            p.bytes_source,
            f"{p.duration_ns / 1e3:.4g}",
            _rate(p.achieved_bytes_per_s),
            _kernel_line(kernels.get((p.annotation, p.config_index), ())),
        ]
        for label, p in zip(labels, placements, strict=True)
    ]
    meta = [
        {"annotation": p.annotation, "config_index": p.config_index} for p in placements
    ]
    for name, values, colour in (
        ("read", [p.bytes_read for p in placements], PALETTE[0]),
        ("written", [p.bytes_written for p in placements], PALETTE[1]),
    ):
        fig.add_trace(
            go.Bar(
                y=rows,
                x=values,
                orientation="h",
                name=f"bytes {name}{source}",
                marker={"color": colour},
                customdata=custom,
                hovertemplate=(
                    f"%{{customdata[0]}}<br>{name}: %{{x:.4s}}B (%{{customdata[1]}})"
                    "<br>time: %{customdata[2]} µs, %{customdata[3]}"
                    "%{customdata[4]}<extra></extra>"
                ),
                meta=meta,
            )
        )
    fig.add_trace(_rate_labels(placements, rows, custom, meta))


def _rate_labels(
    placements: Sequence[Bars],
    rows: list[str],
    custom: list[list[str]],
    meta: list[dict[str, Any]],
) -> go.Scatter:
    """Each region's DRAM bandwidth written at its bar's end; its key in the legend."""
    return go.Scatter(
        y=rows,
        x=[p.bytes_total for p in placements],
        name=RATE_KEY,
        showlegend=True,
        mode="text",
        text=[_rate(p.achieved_bytes_per_s) for p in placements],
        textposition="middle right",
        cliponaxis=False,
        customdata=custom,
        hovertemplate=(
            "%{customdata[0]}<br>%{customdata[3]}: DRAM bytes over the median "
            "time, %{customdata[2]} µs%{customdata[4]}<extra></extra>"
        ),
        meta=meta,
    )


def _kernel_line(names: Sequence[str]) -> str:
    """The hover's kernel line (``<br>kernel: ...``), ``""`` without kernels."""
    text = kernels_hover(names)
    return f"<br>{plotly_text(text)}" if text else ""
