"""Per-run helpers the charts share: grouping, even thinning, fast traces, JSON numbers.

Runs grouped by (annotation, config) in run order, the evenly thinned indices of
``max_points``, scatter traces built without plotly's validation (the long per-run
arrays) and NaN/infinity as None, as the duration, clock, counter and per-rank charts
all need them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import numpy as np
import plotly.graph_objects as go

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.records import RunRecord


def _groups(records: Sequence[RunRecord]) -> dict[tuple[str, int], list[RunRecord]]:
    groups: dict[tuple[str, int], list[RunRecord]] = defaultdict(list)
    for record in records:
        groups[(record.annotation, record.config_index)].append(record)
    return {k: sorted(v, key=lambda r: r.run_index) for k, v in groups.items()}


def _decimate(n: int, max_points: int | None) -> list[int]:
    if max_points is None or n <= max_points:
        return list(range(n))
    return sorted({round(i) for i in np.linspace(0, n - 1, max(max_points, 2))})


def _scatter(**properties: Any) -> go.Scatter:  # noqa: ANN401
    """A scatter trace, not validated by plotly (7x faster on long per-run arrays).

    For the per-run traces only, whose properties are built here with known names
    and types; :func:`figure_json` writes them as they are.
    """
    return go.Scatter(**properties, _validate=False)


def _finite(value: float | None) -> float | None:
    """JSON-safe number: NaN and infinities as None (as :func:`figure_json` does)."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)
