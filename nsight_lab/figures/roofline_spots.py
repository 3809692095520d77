"""Where the roofline draws its points: apart, when several share one place.

Points closer than :data:`TOGETHER` of each log axis's span are at one place; they
are spread evenly round a small circle about it, a thin spoke from each to a grey
dot at the place, so every region stays visible and its hover keeps the true values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import plotly.graph_objects as go

from nsight_lab.figures.common import same_place
from nsight_lab.figures.theme import NEUTRAL

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nsight_lab.roofline.placement import Placement

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


@dataclass(frozen=True)
class Spot:
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


def spots(
    shown: Sequence[Placement],
    labels: Mapping[int, str],
    spans: tuple[float, float],
) -> list[Spot]:
    """Per shown point: where it is drawn (spread from a shared place) and with whom.

    A point alone is drawn where it is; the points of one place (closer than
    :data:`TOGETHER`) go evenly round a circle about the place's middle
    (:func:`_spread`), in the order given (the same session draws the same).
    Groups whose drawn points still come closer than :data:`APART` to each other
    are joined and spread again, until none do.
    """
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
    out = []
    for k in range(len(shown)):
        group = next(g for g in groups if k in g)
        x, y, at = drawn[k]
        out.append(Spot(x, y, at, [labels[id(shown[j])] for j in group]))
    return out


def add_places(fig: go.Figure, spots: Sequence[Spot]) -> None:
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
