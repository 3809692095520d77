"""Summary statistics of repeated measurements: the one stats module of nsight-lab.

Confidence intervals use Student's t distribution (nsight-python uses the normal 1.96,
which is too narrow for the 5-20 runs a notebook typically takes).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from scipy import stats as _scipy_stats

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
    rsd_pct: float
    """Relative standard deviation, 100 * std / mean; NaN when undefined."""
    stable: bool


CONFIDENCE = 0.95
"""The confidence level of every interval nsight-lab shows."""


def t_quantiles(
    df: npt.ArrayLike, confidence: float = CONFIDENCE
) -> npt.NDArray[np.float64]:
    """Return the two-sided Student t critical values for ``df`` degrees of freedom.

    The ``0.5 + confidence / 2`` quantile of Student's t, element-wise: the one t
    quantile of nsight-lab (summaries, the running band of the duration chart and
    the interval of a comparison's ratio all come here). NaN where ``df`` is not
    positive.

    Raises:
        Nothing.
    """
    dfs = np.asarray(df, dtype=float)
    with np.errstate(invalid="ignore"):
        out = np.asarray(_scipy_stats.t.ppf(0.5 + confidence / 2.0, dfs), dtype=float)
    return np.where(dfs > 0, out, math.nan)


@functools.lru_cache(maxsize=1 << 16)
def t_quantile(df: float, confidence: float = CONFIDENCE) -> float:
    """:func:`t_quantiles` of one ``df`` as a float (cached: asked once per run live).

    Raises:
        Nothing.
    """
    return float(t_quantiles(df, confidence))


def t_critical(n: int, confidence: float = CONFIDENCE) -> float:
    """Return the two-sided Student t critical value for ``n`` samples (``n - 1`` df).

    NaN if ``n < 2``.
    """
    if n < 2:  # noqa: PLR2004
        return math.nan
    return t_quantile(float(n - 1), confidence)


def mean_ci_half_width(n: int, std: float, confidence: float = CONFIDENCE) -> float:
    """Return ``t * std / sqrt(n)``: the half width of the interval of a mean.

    ``std`` is the sample standard deviation (ddof=1) of ``n`` values; NaN for
    ``n < 2``.

    Raises:
        Nothing.
    """
    if n < 2:  # noqa: PLR2004
        return math.nan
    return t_critical(n, confidence) * std / math.sqrt(n)


def running_mean_ci(
    values: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[list[float], list[float]]:
    """Running interval of the mean: ``mean ± t·s/√n`` over the values so far.

    Element ``k`` uses the first ``k + 1`` values (Student's t, ``k`` degrees of
    freedom, through :func:`t_quantile`); it is NaN for ``k = 0``. Sums are shifted
    by the first value, so large offsets do not cancel catastrophically.
    :class:`RunningMean` is the same, one value at a time.

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
        half = t * np.sqrt(var / n)
    half = np.where(n >= 2, half, math.nan)  # noqa: PLR2004
    return [float(v) for v in mean - half], [float(v) for v in mean + half]


class RunningMean:
    """The interval of :func:`running_mean_ci`, one value at a time (O(1) each)."""

    __slots__ = ("confidence", "first", "n", "s1", "s2")

    def __init__(self, confidence: float = CONFIDENCE) -> None:
        """Start with no values."""
        self.confidence = confidence
        self.first = 0.0
        self.n = 0
        self.s1 = 0.0
        self.s2 = 0.0

    def add(self, value: float) -> tuple[float, float] | None:
        """Take one value; return the interval after it (None for the first).

        Raises:
            Nothing.
        """
        if self.n == 0:
            self.first = value
        shifted = value - self.first
        self.n += 1
        self.s1 += shifted
        self.s2 += shifted * shifted
        n = self.n
        if n < 2:  # noqa: PLR2004
            return None
        mean = self.first + self.s1 / n
        var = max(self.s2 - self.s1 * self.s1 / n, 0.0) / (n - 1)
        half = t_quantile(float(n - 1), self.confidence) * math.sqrt(var / n)
        return mean - half, mean + half


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
    mean = float(arr.mean())
    std = float(arr.std(ddof=1)) if n >= 2 else math.nan  # noqa: PLR2004
    half = mean_ci_half_width(n, std)
    rsd = rsd_pct(values)
    return Summary(
        n=n,
        mean=mean,
        std=std,
        min=float(arr.min()),
        max=float(arr.max()),
        median=float(np.median(arr)),
        ci95_low=mean - half,
        ci95_high=mean + half,
        rsd_pct=rsd,
        stable=bool(rsd < stable_rsd_pct) if not math.isnan(rsd) else False,
    )


def geomean(values: Sequence[float]) -> float:
    """Return the geometric mean of the positive finite ``values`` (NaN if none)."""
    arr = np.asarray([v for v in values if v > 0 and math.isfinite(v)], dtype=float)
    if arr.size == 0:
        return math.nan
    return float(np.exp(np.log(arr).mean()))
