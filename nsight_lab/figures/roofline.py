"""The roofline chart: the device's roofs and each region placed under them.

Log-log axes with whole-number ticks: the DRAM roof, one compute roof per peak
(labelled at its right end, labels stacked apart), the ridge points, then one marker
per region in the region's colour and shape (filled: measured, open: modelled).
Points at the same place are spread on a small circle around it (a thin spoke
from each to the place, a grey dot at the place), each hover giving the true
values and naming the others there; the hover names the region's kernels where
its backend saw them (:mod:`nsight_lab.figures.kernels`). A
region whose numbers cannot be true (:mod:`nsight_lab.analysis.validity`) is drawn
open with a red outline, its legend entry and hover saying why.
The placement itself is :mod:`nsight_lab.roofline.placement`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import plotly.graph_objects as go

import nsight_lab.figures.roofline_hover as hover
import nsight_lab.figures.roofline_spots as places
from nsight_lab.figures.common import log_ticks
from nsight_lab.figures.text import plotly_text, series_label
from nsight_lab.figures.theme import NEUTRAL, base_layout, region_style
from nsight_lab.roofline.placement import DEFAULT_DTYPE

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nsight_lab.analysis.validity import Flag
    from nsight_lab.figures.common import RegionKey
    from nsight_lab.roofline.placement import Peaks, Placement

ROOF_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
ROOF_LABEL_PX = 16
"""Vertical room of a roof's label; labels closer than this are stacked."""
MIN_PLOT_PX = 140
"""The smallest plot height the roof labels are stacked for (taller plots only
spread them further apart)."""
FLAGGED = "#d62728"
"""The outline of a region whose numbers cannot be true."""
IMPOSSIBLE = frozenset({"over_roof", "over_span", "low_coverage"})
"""Flag kinds of a number that cannot be true (drawn red); the others (unsteady,
throttled) say the measurement is doubtful and are named, not drawn red."""
MARKER_PX = 14
"""A region's marker size (px): shapes large enough to tell apart."""


def _source_words(p: Placement) -> str:
    """Where a region's figures came from, in a word or two, for its legend entry.

    One word where FLOPs and bytes agree, else which one was measured: PM
    sampling measures the bytes while the FLOPs stay modelled.
    """
    flops = p.flops_source.startswith("measured")
    moved = p.bytes_source.startswith("measured")
    if flops and moved:
        return "measured"
    if flops:
        return "FLOPs measured"
    if moved:
        return "bytes measured"
    return "modelled"


def _marker_symbol(symbol: str, p: Placement) -> str:
    """The region's shape: filled when measured, open when anything was modelled."""
    words = _source_words(p)
    if words == "measured":
        return symbol
    return f"{symbol}-open"


def _decade_range(values: Sequence[float]) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    return 10 ** math.floor(math.log10(lo / 10)), 10 ** math.ceil(math.log10(hi * 10))


def _roof_label_shifts(ys: Sequence[float], span: float) -> list[float]:
    """Upward pixel shifts that keep roof labels at log heights ``ys`` apart.

    Stacked bottom up for a plot of :data:`MIN_PLOT_PX` (``span``: the y axis's
    decades); in a taller plot the roofs are further apart and the shifts keep
    their labels apart still.
    """
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    shifts = [0.0] * len(ys)
    previous = -math.inf
    for i in order:
        at = ys[i] / span * MIN_PLOT_PX
        placed = max(at, previous + ROOF_LABEL_PX)
        shifts[i] = placed - at
        previous = placed
    return shifts


def _roofs(
    placements: Sequence[Placement], peaks: Peaks
) -> list[tuple[list[str], float]]:
    """The compute roofs to draw, slowest first: dtypes of one peak share a roof."""
    dtypes = list(dict.fromkeys([DEFAULT_DTYPE, *(p.dtype for p in placements)]))
    by_peak: dict[float, list[str]] = {}
    for dtype in dtypes:
        if dtype in peaks.flops_per_s:
            by_peak.setdefault(peaks.flops_per_s[dtype], []).append(dtype)
    return sorted(
        ((names, peak) for peak, names in by_peak.items()), key=lambda r: r[1]
    )


def _axis(title: str, lo: float, hi: float) -> dict[str, object]:
    values, labels = log_ticks(lo, hi)
    return {
        "type": "log",
        "title": {"text": title},
        "range": [math.log10(lo), math.log10(hi)],
        "tickvals": values,
        "ticktext": labels,
    }


def roofline_figure(
    placements: Sequence[Placement],
    peaks: Peaks,
    *,
    order: Mapping[RegionKey, int] | None = None,
    flags: Mapping[RegionKey, Sequence[Flag]] | None = None,
    kernels: Mapping[RegionKey, Sequence[str]] | None = None,
) -> go.Figure:
    """Log-log roofline: the device's roofs and each region placed under them.

    Traces, in order: the DRAM roof, one compute roof per peak (the dtypes of the
    placements plus fp32, where ``peaks`` has them, slowest first; dtypes of one
    peak, as bf16 and fp16, share one), the ridge points, then one marker trace per
    region in its colour and shape (:func:`region_style` of its number in
    ``order``, by default the placements' order): filled when its FLOPs and bytes
    were measured, open when either was modelled; its legend entry says which.
    Points at the same place are spread evenly on a small circle around it
    (:mod:`nsight_lab.figures.roofline_spots`), a thin spoke from each to a grey dot
    at the place; the hover gives the true intensity and TFLOP/s and names the others
    there. ``kernels`` (by (annotation, config index)) names each region's kernels
    in its hover. Each compute roof is labelled at its right
    end, the labels stacked so they never overlap. A region with no bytes or no
    FLOPs cannot sit on log axes: its legend entry says so. A region with
    ``flags`` (by (annotation, config index)) of a number that cannot be true
    (:data:`IMPOSSIBLE`) is drawn open with a red outline, its legend entry marked
    ``(cannot be true)``; other flags (unsteady, throttled) are named in the
    legend entry (``(⚠ throttled)``); the hover gives each flag with its
    cause and what to do.

    Raises:
        Nothing.
    """
    if order is None:
        order = {(p.annotation, p.config_index): i for i, p in enumerate(placements)}
    roofs = _roofs(placements, peaks)
    shown = [
        p
        for p in placements
        if math.isfinite(p.intensity) and p.intensity > 0 and p.achieved_flops_per_s > 0
    ]
    box = _Box.around(shown, roofs, peaks.dram_bytes_per_s)
    subtitle = plotly_text(peaks.source)
    fig = go.Figure(
        layout=base_layout(
            f"Roofline: {plotly_text(peaks.device)}<br><sup>{subtitle}</sup>",
            xaxis=_axis("arithmetic intensity (FLOP/byte)", box.x_lo, box.x_hi),
            yaxis=_axis("performance (TFLOP/s)", box.y_lo, box.y_hi),
            # Legend symbols of one size, whatever the ring a point is drawn as.
            legend={"orientation": "h", "itemsizing": "constant"},
        )
    )
    _add_roofs(fig, roofs, peaks.dram_bytes_per_s, box)
    with_config = len({p.config_index for p in placements}) > 1
    labels = {
        id(p): plotly_text(series_label(p.annotation, p.config, with_config))
        for p in placements
    }
    _add_regions(fig, shown, labels, (order, flags or {}, kernels or {}), box)
    _add_off_axes(fig, (placements, shown), labels, order)
    return fig


@dataclass(frozen=True)
class _Box:
    """The chart's axis ranges: whole decades around the points, roofs and ridges."""

    x_lo: float
    x_hi: float
    y_lo: float
    y_hi: float

    @classmethod
    def around(
        cls,
        shown: Sequence[Placement],
        roofs: Sequence[tuple[list[str], float]],
        bw: float,
    ) -> _Box:
        ridges = [peak / bw for _, peak in roofs]
        x_lo, x_hi = _decade_range(
            [p.intensity for p in shown] + ridges or [0.1, 100.0]
        )
        tflops = [p.achieved_flops_per_s / 1e12 for p in shown]
        tflops += [peak / 1e12 for _, peak in roofs] + [bw * x_lo / 1e12]
        y_lo = 10 ** math.floor(math.log10(min(tflops)))
        y_hi = 10 ** math.ceil(math.log10(max(tflops) * 2.5))
        return cls(x_lo, x_hi, y_lo, y_hi)

    @property
    def y_span(self) -> float:
        """The y axis's decades."""
        return math.log10(self.y_hi) - math.log10(self.y_lo)


def _add_roofs(
    fig: go.Figure, roofs: Sequence[tuple[list[str], float]], bw: float, box: _Box
) -> None:
    """The DRAM roof, each compute roof labelled at its right end, the ridges."""
    x_lo, x_hi = box.x_lo, box.x_hi
    ridges = [peak / bw for _, peak in roofs]
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
    shifts = _roof_label_shifts(
        [math.log10(peak / 1e12) - math.log10(box.y_lo) for _, peak in roofs],
        box.y_span,
    )
    for i, ((dtypes, peak), shift) in enumerate(zip(roofs, shifts, strict=True)):
        names = ", ".join(dtypes)
        fig.add_trace(
            go.Scatter(
                x=[peak / bw, x_hi],
                y=[peak / 1e12, peak / 1e12],
                name=f"{names} {peak / 1e12:.4g} TFLOP/s",
                mode="lines",
                line={"color": NEUTRAL, "width": 2, "dash": ROOF_DASHES[i % 6]},
                hovertemplate=f"{names} roof: %{{y:.4g}} TFLOP/s<extra></extra>",
            )
        )
        fig.add_annotation(
            text=names,
            x=math.log10(x_hi),
            y=math.log10(peak / 1e12),
            xanchor="right",
            yanchor="bottom",
            yshift=shift,
            showarrow=False,
        )
    fig.add_trace(
        go.Scatter(
            x=ridges,
            y=[peak / 1e12 for _, peak in roofs],
            name="ridge points",
            showlegend=False,
            mode="markers",
            customdata=[", ".join(d) for d, _ in roofs],
            marker={"color": NEUTRAL, "size": 7, "symbol": "circle-open"},
            hovertemplate="ridge %{customdata}: %{x:.3g} FLOP/B<extra></extra>",
        )
    )


def _add_regions(
    fig: go.Figure,
    shown: Sequence[Placement],
    labels: Mapping[int, str],
    marks: tuple[
        Mapping[RegionKey, int],
        Mapping[RegionKey, Sequence[Flag]],
        Mapping[RegionKey, Sequence[str]],
    ],
    box: _Box,
) -> None:
    """One marker per region on the log axes (spread where points share a place).

    ``marks``: each region's number in the order, its flags and its kernels.
    """
    order, flagged, kernels = marks
    spans = (math.log10(box.x_hi / box.x_lo), box.y_span)
    spots = places.spots(shown, labels, spans)
    places.add_places(fig, spots)
    for k, p in enumerate(shown):
        key = (p.annotation, p.config_index)
        style = region_style(order.get(key, k))
        flags = flagged.get(key, ())
        # Only a number that cannot be true turns the point red; a measurement
        # flag (unsteady, throttled) is named in its legend entry and hover.
        impossible = [f for f in flags if f.kind in IMPOSSIBLE]
        doubtful = list(
            dict.fromkeys(f.kind for f in flags if f.kind not in IMPOSSIBLE)
        )
        label = labels[id(p)]
        spot = spots[k]
        custom = hover.custom(p, label, spot, flags, kernels.get(key, ()))
        symbol = _marker_symbol(style.symbol, p)
        if impossible and not symbol.endswith("-open"):
            symbol += "-open"
        fig.add_trace(
            go.Scatter(
                x=[10**spot.x],
                y=[10**spot.y],
                name=f"{label} ({_source_words(p)})"
                + (" (cannot be true)" if impossible else "")
                + (f" (\u26a0 {', '.join(doubtful)})" if doubtful else ""),
                mode="markers",
                marker={
                    "color": FLAGGED if impossible else style.colour,
                    "size": MARKER_PX,
                    "symbol": symbol,
                    "line": {
                        "width": 3 if impossible else 2,
                        "color": FLAGGED if impossible else style.colour,
                    },
                },
                customdata=[custom],
                hovertemplate=hover.REGION_HOVER,
                meta={"annotation": p.annotation, "config_index": p.config_index},
            )
        )


def _add_off_axes(
    fig: go.Figure,
    placed: tuple[Sequence[Placement], Sequence[Placement]],
    labels: Mapping[int, str],
    order: Mapping[RegionKey, int],
) -> None:
    """Regions that cannot sit on log axes: a legend entry each saying why.

    In their marker (a note under the plot would collide with the axis title).
    ``placed``: every placement and those shown on the axes.
    """
    placements, shown = placed
    for k, p in enumerate(placements):
        if p in shown:
            continue
        style = region_style(order.get((p.annotation, p.config_index), k))
        why = "no FLOPs" if p.flops == 0 else "no bytes"
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                name=f"{labels[id(p)]} ({why}: not on log axes)",
                mode="markers",
                marker={
                    "color": style.colour,
                    "size": MARKER_PX,
                    "symbol": _marker_symbol(style.symbol, p),
                    "line": {"width": 2, "color": style.colour},
                },
                hoverinfo="skip",
                meta={"annotation": p.annotation, "config_index": p.config_index},
            )
        )
