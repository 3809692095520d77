"""The ratio of two medians and its interval (Price and Bonett), runs in time order.

See :mod:`nsight_lab.stats`'s docstring for the method and its coverage.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np

from nsight_lab.stats.tdist import CONFIDENCE, t_quantile

if TYPE_CHECKING:
    from collections.abc import Sequence

MIN_RATIO_RUNS = 3
"""Runs per side before :func:`median_ratio_ci` gives an interval."""

BATCHES = 8
"""Contiguous batches a side's runs are cut into for :func:`batch_log_variance`."""
MIN_BATCH_RUNS = 5
"""Runs per batch: sides with fewer than ``BATCHES * MIN_BATCH_RUNS`` are not cut."""


def _binomial_half_cdf(k: int, n: int) -> float:
    """``P(Binom(n, 1/2) <= k)`` for ``0 <= k < n / 2``, summed down from ``k``.

    The terms fall at least geometrically below ``k < n / 2``, so the sum stops once
    they no longer count (a few thousand terms for a million runs).
    """
    log_term = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
    term = math.exp(log_term - n * math.log(2.0))
    total = 0.0
    for j in range(k, -1, -1):
        total += term
        if term < 1e-17 * total:
            break
        term *= j / (n - j + 1)
    return total


def median_log_variance(values: Sequence[float]) -> float:
    """Return Price and Bonett's estimate of ``Var(log median)`` of ``values``.

    From the order statistics ``y(c)`` and ``y(n - c + 1)`` (see the module
    docstring); on the raw scale divided by the median where ``y(c) <= 0``. NaN for
    fewer than two values or a non-positive median.

    Raises:
        Nothing.
    """
    arr = np.asarray(values, dtype=float)
    n = int(arr.size)
    if n < 2:  # noqa: PLR2004
        return math.nan
    c = max(1, math.floor((n + 1) / 2 - math.sqrt(n) + 0.5))
    lo_hi = np.partition(arr, (c - 1, n - c))
    low, high = float(lo_hi[c - 1]), float(lo_hi[n - c])
    median = float(np.median(arr))
    if not median > 0:
        return math.nan
    z = NormalDist().inv_cdf(1.0 - _binomial_half_cdf(c - 1, n))
    width = math.log(high / low) if low > 0 else (high - low) / median
    return (width / (2.0 * z)) ** 2


def batch_log_variance(values: Sequence[float]) -> float | None:
    """Return ``Var(log median)`` of runs in time order from their batch medians.

    The runs are cut into :data:`BATCHES` contiguous batches; the variance of the
    logs of the batch medians over ``BATCHES`` estimates that of the log of the
    median of all runs, also when neighbouring runs are alike (stretches of a slow
    host). ``None`` for fewer than ``BATCHES * MIN_BATCH_RUNS`` runs or a batch median
    that is not positive.
    """
    arr = np.asarray(values, dtype=float)
    if arr.size < BATCHES * MIN_BATCH_RUNS:
        return None
    medians = np.array([np.median(batch) for batch in np.array_split(arr, BATCHES)])
    if not (medians > 0).all():
        return None
    return float(np.var(np.log(medians), ddof=1)) / BATCHES


def median_ratio_ci(
    a: Sequence[float],
    b: Sequence[float],
    confidence: float = CONFIDENCE,
    min_runs: int = MIN_RATIO_RUNS,
    *,
    ordered: bool = False,
) -> tuple[float, float | None, float | None]:
    """Return ``(ratio, low, high)`` for ``median(b) / median(a)``.

    The Price-Bonett interval of the module docstring: robust to outliers, positive,
    symmetric on the log scale.

    Args:
        a: Per-run values of the baseline (at least one).
        b: Per-run values of the candidate (at least one).
        confidence: Two-sided confidence level of the interval.
        min_runs: Runs needed on each side for an interval.
        ordered: ``a`` and ``b`` are in the order the runs ran: a side long enough
            is also judged by its batch medians (see the module docstring).

    Returns:
        The ratio of medians (NaN when ``median(a)`` is 0) and its interval, each
        bound ``None`` when undefined (fewer than ``min_runs`` values on a side, or a
        non-positive median). With no spread at the middle of either side the
        interval is as narrow as the other side makes it (the ratio itself when both
        have none).

    Raises:
        ValueError: ``a`` or ``b`` is empty.
    """
    if len(a) == 0 or len(b) == 0:
        msg = "median_ratio_ci: no values"
        raise ValueError(msg)
    median_a = float(np.median(np.asarray(a, dtype=float)))
    median_b = float(np.median(np.asarray(b, dtype=float)))
    ratio = median_b / median_a if median_a != 0 else math.nan
    if min(len(a), len(b)) < max(min_runs, 2) or not (median_a > 0 and median_b > 0):
        return ratio, None, None
    variance = 0.0
    batched = False
    for side in (a, b):
        order_statistics = median_log_variance(side)
        batches = batch_log_variance(side) if ordered else None
        if batches is not None and batches > order_statistics:
            order_statistics, batched = batches, True
        variance += order_statistics
    if not math.isfinite(variance):
        return ratio, None, None
    quantile = (
        t_quantile(2 * (BATCHES - 1), confidence)
        if batched
        else NormalDist().inv_cdf(0.5 + confidence / 2.0)
    )
    half = quantile * math.sqrt(variance)
    return ratio, ratio * math.exp(-half), ratio * math.exp(half)
