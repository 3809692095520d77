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

from nsight_lab.figures.common import log_ticks, same_place
from nsight_lab.figures.kernels import kernels_hover
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
TOGETHER = 0.05
"""Points closer than this share of each log axis's span are at "the same place"
(:func:`~nsight_lab.figures.common.same_place`) and get spread."""
APART = 0.045
"""Drawn points closer than this share of both axes' spans (~14 px in a 320 px
plot) are spread (or spread wider)."""
SPREAD = 0.06
"""The radius (share of each log axis's span) of the circle that points at one
place are spread on: about 15-30 px in a session panel, so markers of
:data:`MARKER_PX` sit apart."""


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
    Points at the same place (:data:`TOGETHER`) are spread evenly on a circle of
    :data:`SPREAD` around their place, a thin spoke from each to a grey dot at the
    place; the hover gives the true intensity and TFLOP/s and names the others
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


@dataclass(frozen=True)
class _Spot:
    """Where one shown point is drawn: log x, log y, and who shares its place."""

    x: float
    y: float
    place: tuple[float, float]
    together: list[str]


def _spread(
    group: Sequence[int],
    logs: Sequence[tuple[float, float]],
    spans: tuple[float, float],
) -> list[tuple[float, float, tuple[float, float]]]:
    """Where the points of ``group`` are drawn: (log x, log y, their place).

    One point: where it is. More: evenly round a circle about their middle, the
    first at the top, of :data:`SPREAD` of each axis's span, wider when that would
    put neighbours closer than :data:`APART`.
    """
    if len(group) == 1:
        (k,) = group
        return [(logs[k][0], logs[k][1], logs[k])]
    mx = sum(logs[k][0] for k in group) / len(group)
    my = sum(logs[k][1] for k in group) / len(group)
    radius = max(SPREAD, 1.5 * APART / (2 * math.sin(math.pi / len(group))))
    out = []
    for i in range(len(group)):
        angle = math.pi / 2 - 2 * math.pi * i / len(group)
        out.append(
            (
                mx + radius * spans[0] * math.cos(angle),
                my + radius * spans[1] * math.sin(angle),
                (mx, my),
            )
        )
    return out


def _spots(
    shown: Sequence[Placement], labels: Mapping[int, str], box: _Box
) -> list[_Spot]:
    """Per shown point: where it is drawn (spread from a shared place) and with whom.

    A point alone is drawn where it is; the points of one place (closer than
    :data:`TOGETHER`) go evenly round a circle about the place's middle
    (:func:`_spread`), in the order given (the same session draws the same).
    Groups whose drawn points still come closer than :data:`APART` to each other
    are joined and spread again, until none do.
    """
    spans = (math.log10(box.x_hi / box.x_lo), box.y_span)
    logs = [
        (math.log10(p.intensity), math.log10(p.achieved_flops_per_s / 1e12))
        for p in shown
    ]
    groups = same_place(logs, spans, TOGETHER)
    drawn: dict[int, tuple[float, float, tuple[float, float]]] = {}
    for _ in range(len(shown)):
        drawn = {}
        for group in groups:
            drawn.update(zip(group, _spread(group, logs, spans), strict=True))
        of = {k: g for g, group in enumerate(groups) for k in group}
        clash = next(
            (
                (of[a], of[b])
                for a in drawn
                for b in drawn
                if of[a] < of[b]
                and abs(drawn[a][0] - drawn[b][0]) < APART * spans[0]
                and abs(drawn[a][1] - drawn[b][1]) < APART * spans[1]
            ),
            None,
        )
        if clash is None:
            break
        joined = groups[clash[0]] + groups[clash[1]]
        groups = [g for i, g in enumerate(groups) if i not in clash] + [sorted(joined)]
    spots = []
    for k in range(len(shown)):
        group = next(g for g in groups if k in g)
        x, y, at = drawn[k]
        spots.append(_Spot(x, y, at, [labels[id(shown[j])] for j in group]))
    return spots


def _add_places(fig: go.Figure, spots: Sequence[_Spot]) -> None:
    """Thin spokes from spread points to their place, a grey dot at each place."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    places: dict[tuple[float, float], int] = {}
    for spot in spots:
        if (spot.x, spot.y) == spot.place:
            continue
        places[spot.place] = len(spot.together)
        xs += [10 ** spot.place[0], 10**spot.x, None]
        ys += [10 ** spot.place[1], 10**spot.y, None]
    if not places:
        return
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines",
            line={"color": NEUTRAL, "width": 1},
            hoverinfo="skip",
            showlegend=False,
            name="spread from their place",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[10**x for x, _ in places],
            y=[10**y for _, y in places],
            mode="markers",
            marker={"color": NEUTRAL, "size": 5, "symbol": "circle"},
            # No hover of its own: the regions drawn round it give the true values.
            hoverinfo="skip",
            showlegend=False,
            name="shared places",
        )
    )


_REGION_HOVER = (
    "%{customdata[0]} (%{customdata[8]}, %{customdata[7]} µs)"
    "<br>FLOPs: %{customdata[1]}"
    "<br>bytes: %{customdata[2]} read, %{customdata[3]} written"
    "<br>intensity: %{customdata[12]} FLOP/B"
    "<br>achieved: %{customdata[13]} TFLOP/s, %{customdata[9]} GB/s"
    "<br>%{customdata[4]}% of roof (%{customdata[5]} bound)"
    "<br>%{customdata[6]}%{customdata[10]}%{customdata[14]}%{customdata[11]}"
    "<extra></extra>"
)


def _flag_hover(flags: Sequence[Flag]) -> str:
    """The hover's lines for a flagged region: each flag, its cause, what to do."""
    return "".join(
        f"<br><b>⚠ {plotly_text(f.text)}</b><br>cause: {plotly_text(f.cause)}"
        f"<br>do: {plotly_text(f.action)}"
        for f in flags
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
    spots = _spots(shown, labels, box)
    _add_places(fig, spots)
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
        also = [name for name in spot.together if name != label]
        ran = kernels_hover(kernels.get(key, ()))
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
            f"{p.achieved_bytes_per_s / 1e9:.4g}",
            ("<br>same place (drawn apart): " + ", ".join(also)) if also else "",
            _flag_hover(flags),
            f"{p.intensity:.3g}",
            f"{p.achieved_flops_per_s / 1e12:.4g}",
            f"<br>{plotly_text(ran)}" if ran else "",
        ]
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
                hovertemplate=_REGION_HOVER,
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
