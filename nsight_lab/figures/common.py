"""Per-run helpers the charts share: grouping, even thinning, fast traces, JSON numbers.

Runs grouped by (annotation, config) in run order, the evenly thinned indices of
``max_points``, scatter traces built without plotly's validation (the long per-run
arrays) and NaN/infinity as None, as the duration, clock, counter and per-rank charts
all need them; a figure as JSON (:func:`figure_json`).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.contract.records import RunRecord


WHOLE_RUNS = 10
"""Up to this many runs along x, every run is ticked (plotly's own ticks would read
0, 0.5, 1, 1.5, 2 for three runs); more, plotly's ticks."""


def run_groups(records: Sequence[RunRecord]) -> dict[tuple[str, int], list[RunRecord]]:
    """The runs per (region, config index), in the order they came."""
    groups: dict[tuple[str, int], list[RunRecord]] = defaultdict(list)
    for record in records:
        groups[(record.annotation, record.config_index)].append(record)
    return {k: sorted(v, key=lambda r: r.run_index) for k, v in groups.items()}


def decimate(n: int, max_points: int | None) -> list[int]:
    """At most ``max_points`` indices of ``n``, evenly spread, first and last kept."""
    if max_points is None or n <= max_points:
        return list(range(n))
    return sorted({round(i) for i in np.linspace(0, n - 1, max(max_points, 2))})


def new_scatter(**properties: Any) -> go.Scatter:  # noqa: ANN401
    """A scatter trace, not validated by plotly (7x faster on long per-run arrays).

    For the per-run traces only, whose properties are built here with known names
    and types; :func:`figure_json` writes them as they are.
    """
    return go.Scatter(**properties, _validate=False)


def finite_value(value: float | None) -> float | None:
    """JSON-safe number: NaN and infinities as None (as :func:`figure_json` does)."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)


RegionKey = tuple[str, int]
"""A region of a session: (annotation, config index)."""


def region_order(records: Sequence[RunRecord]) -> dict[RegionKey, int]:
    """Each (annotation, config) of ``records`` numbered in the order it first ran.

    The index of :func:`~nsight_lab.figures.theme.region_style`: every chart of a
    session draws a region in the colour and marker of its number here.

    Raises:
        Nothing.
    """
    order: dict[RegionKey, int] = {}
    for record in records:
        order.setdefault((record.annotation, record.config_index), len(order))
    return order


def log_ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    """Tick values and labels of a log axis from ``lo`` to ``hi`` (both > 0).

    Powers of ten, then 1-2-5 steps, then every digit, as many as it takes to
    label at least three ticks; each label the whole number (``"20"``, ``"0.05"``),
    never plotly's lone digits ("2 3 ... 8") between powers of ten.
    """
    lo_exp, hi_exp = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    for mantissas in ((1,), (1, 2, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9)):
        values = [
            m * 10.0**e
            for e in range(lo_exp, hi_exp + 1)
            for m in mantissas
            if lo <= m * 10.0**e <= hi
        ]
        if len(values) >= 3:  # noqa: PLR2004
            break
    if len(values) < 2:  # noqa: PLR2004  (a range inside one digit's step)
        values = [lo, hi]
    return values, [_tick_label(v) for v in values]


def _tick_label(value: float) -> str:
    """A tick's number, short: ``20``, ``0.05``, ``1.5k``, ``2M``."""
    for scale, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def figure_json(fig: go.Figure) -> dict[str, Any]:
    """Return ``fig`` as a JSON-safe dict (what REST and the widget trait carry).

    Arrays become lists, NaN and infinities become ``null``, and ``<``, ``>``, ``/``
    stay safe inside an HTML ``<script>``.

    Raises:
        Nothing.
    """
    result: dict[str, Any] = json.loads(pio.to_json(fig, validate=False))
    return result


SAME_PLACE = 0.02
"""Points closer than this share of each log axis's span are at "the same place":
drawn as concentric rings, each one's hover naming all of them."""


def same_place(
    points: Sequence[tuple[float, float]],
    spans: tuple[float, float],
    within: float = SAME_PLACE,
) -> list[list[int]]:
    """Groups of the indices of ``points`` (log x, log y) at the same place.

    Two points are at the same place when both their coordinates differ by less
    than ``within`` (default :data:`SAME_PLACE`) of the axis span; groups are
    closed under it.
    """
    parent = list(range(len(points)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, (xi, yi) in enumerate(points):
        for j in range(i):
            xj, yj = points[j]
            if abs(xi - xj) < within * spans[0] and abs(yi - yj) < within * spans[1]:
                parent[root(i)] = root(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(points)):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())
