"""Summaries of one series of per-run values and the interval of their mean.

Student's t, on the log scale for non-negative quantities (:mod:`nsight_lab.stats`'s
docstring): :func:`summarize` for a whole series, :func:`running_mean_ci` and
:class:`RunningMean` for the duration chart's running band.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from nsight_lab.stats.tdist import CONFIDENCE, t_critical, t_quantile, t_quantiles

if TYPE_CHECKING:
    from collections.abc import Sequence

STABLE_RSD_PCT = 2.0
"""A relative std dev (%) below this makes a measurement ``StableMeasurement``.

The same threshold as nsight-python's.
"""


@dataclass(frozen=True)
class Summary:
    """Statistics of one series of per-run values."""

    n: int
    mean: float
    std: float
    """Sample standard deviation (ddof=1); NaN for fewer than two values."""
    min: float
    max: float
    median: float
    ci95_low: float
    ci95_high: float
    """The interval of the mean: on the log scale (never below 0) for values >= 0."""
    rsd_pct: float
    """Relative standard deviation, 100 * std / mean; NaN when undefined."""
    stable: bool


MIN_BAND_RUNS = 5
"""Runs before the running band of the duration chart is drawn (t(0.975, 4) = 2.78;
with two runs it is 12.7 and the band spans orders of magnitude)."""


def _mean_interval(
    mean: npt.ArrayLike,
    sem: npt.ArrayLike,
    t: npt.ArrayLike,
    non_negative: npt.ArrayLike,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The interval of a mean from its standard error, element-wise.

    On the log scale (``m * exp(-+ t * sem / m)``) where the values are
    ``non_negative`` and the mean positive, else ``m -+ t * sem``; see the module
    docstring. All-equal values give the point ``[m, m]``.
    """
    m = np.asarray(mean, dtype=float)
    se = np.asarray(sem, dtype=float)
    tq = np.asarray(t, dtype=float)
    log_scale = np.asarray(non_negative, dtype=bool) & (m > 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rel = np.exp(tq * se / np.where(log_scale, m, 1.0))
        low = np.where(log_scale, m / rel, m - tq * se)
        high = np.where(log_scale, m * rel, m + tq * se)
    return low, high


def running_mean_ci(
    values: Sequence[float],
    confidence: float = CONFIDENCE,
    min_runs: int = MIN_BAND_RUNS,
) -> tuple[list[float], list[float]]:
    """Running interval of the mean over the values so far (the duration chart's band).

    Element ``k`` uses the first ``k + 1`` values (Student's t, ``k`` degrees of
    freedom, through :func:`t_quantile`); it is the interval :func:`summarize`
    gives those values (on the log scale while they are all >= 0), and NaN for
    ``k + 1 < min_runs`` (at least 2). Sums are shifted by the first value, so
    large offsets do not cancel catastrophically. :class:`RunningMean` is the same,
    one value at a time.

    Raises:
        Nothing.
    """
    arr = np.asarray(values, dtype=float)
    n = np.arange(1, arr.size + 1, dtype=float)
    mean = np.cumsum(arr) / n
    shifted = arr - (arr[0] if arr.size else 0.0)
    s1 = np.cumsum(shifted)
    s2 = np.cumsum(shifted * shifted)
    t = t_quantiles(n - 1, confidence)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = np.maximum(s2 - s1 * s1 / n, 0.0) / (n - 1)
        sem = np.sqrt(var / n)
    low, high = _mean_interval(mean, sem, t, np.minimum.accumulate(arr) >= 0)
    shown = n >= max(min_runs, 2)
    low = np.where(shown, low, math.nan)
    high = np.where(shown, high, math.nan)
    return [float(v) for v in low], [float(v) for v in high]


class RunningMean:
    """The interval of :func:`running_mean_ci`, one value at a time (O(1) each)."""

    __slots__ = ("confidence", "first", "min_runs", "n", "non_negative", "s1", "s2")

    def __init__(
        self, confidence: float = CONFIDENCE, min_runs: int = MIN_BAND_RUNS
    ) -> None:
        """Start with no values."""
        self.confidence = confidence
        self.min_runs = max(min_runs, 2)
        self.first = 0.0
        self.n = 0
        self.s1 = 0.0
        self.s2 = 0.0
        self.non_negative = True

    def add(self, value: float) -> tuple[float, float] | None:
        """Take one value; return the interval after it (None before ``min_runs``).

        Raises:
            Nothing.
        """
        if self.n == 0:
            self.first = value
        shifted = value - self.first
        self.n += 1
        self.s1 += shifted
        self.s2 += shifted * shifted
        self.non_negative = self.non_negative and value >= 0
        n = self.n
        if n < self.min_runs:
            return None
        mean = self.first + self.s1 / n
        var = max(self.s2 - self.s1 * self.s1 / n, 0.0) / (n - 1)
        t = t_quantile(float(n - 1), self.confidence)
        return _scalar_interval(mean, math.sqrt(var / n), t, self.non_negative)


def _scalar_interval(
    mean: float,
    sem: float,
    t: float,
    non_negative: bool,  # noqa: FBT001
) -> tuple[float, float]:
    """:func:`_mean_interval` of one mean, in floats (no arrays: once per run live)."""
    if non_negative and mean > 0:
        try:
            rel = math.exp(t * sem / mean)
        except OverflowError:
            rel = math.inf
        return mean / rel, mean * rel
    return mean - t * sem, mean + t * sem


def rsd_pct(values: Sequence[float]) -> float:
    """Return the relative standard deviation of ``values`` in percent.

    NaN if undefined.
    """
    if len(values) < 2:  # noqa: PLR2004
        return math.nan
    arr = np.asarray(values, dtype=float)
    mean = float(arr.mean())
    if mean == 0:
        return math.nan
    return float(arr.std(ddof=1)) / abs(mean) * 100.0


def summarize(
    values: Sequence[float], stable_rsd_pct: float = STABLE_RSD_PCT
) -> Summary:
    """Summarize a series of per-run values.

    Args:
        values: One value per run (at least one).
        stable_rsd_pct: RSD below which the series counts as stable.

    Returns:
        The summary; spread fields are NaN for a single value.

    Raises:
        ValueError: ``values`` is empty.
    """
    if len(values) == 0:
        msg = "summarize: no values"
        raise ValueError(msg)
    arr = np.asarray(values, dtype=float)
    n = int(arr.size)
    # An infinite value (a derive function's +-inf) makes the spread NaN, as it
    # should, without numpy's "invalid value" warnings.
    with np.errstate(invalid="ignore", over="ignore"):
        mean = float(arr.mean())
        std = float(arr.std(ddof=1)) if n >= 2 else math.nan  # noqa: PLR2004
        low, high = _mean_interval(
            mean,
            std / math.sqrt(n) if n >= 2 else math.nan,  # noqa: PLR2004
            t_critical(n),
            bool(arr.min() >= 0),
        )
        rsd = rsd_pct(values)
    return Summary(
        n=n,
        mean=mean,
        std=std,
        min=float(arr.min()),
        max=float(arr.max()),
        median=float(np.median(arr)),
        ci95_low=float(low),
        ci95_high=float(high),
        rsd_pct=rsd,
        stable=bool(rsd < stable_rsd_pct) if not math.isnan(rsd) else False,
    )


def geomean(values: Sequence[float]) -> float:
    """Return the geometric mean of the positive finite ``values`` (NaN if none)."""
    arr = np.asarray([v for v in values if v > 0 and math.isfinite(v)], dtype=float)
    if arr.size == 0:
        return math.nan
    return float(np.exp(np.log(arr).mean()))
