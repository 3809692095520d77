"""Summary statistics of repeated measurements: the one stats module of nsight-lab.

Every interval nsight-lab shows comes from here.

**The interval of a mean** (the results' ``CI95_Lower``/``CI95_Upper``, the running
band of the duration chart) uses Student's t (nsight-python uses the normal 1.96,
which is too narrow for the 5-20 runs a notebook typically takes). For a *non-negative*
quantity (durations, bytes, bandwidths, FLOP/s: every value >= 0 and a positive mean)
it is computed on the log scale by the delta method, ``Var(log m) ~= s**2 / (n m**2)``:

    [m * exp(-t * s / (m * sqrt(n))),  m * exp(+t * s / (m * sqrt(n)))]

so it never goes below zero; it is multiplicative around the mean and agrees with the
plain ``m -+ t s / sqrt(n)`` to first order when the spread is small. A series with a
negative value keeps the plain t interval. The running band is drawn from
:data:`MIN_BAND_RUNS` runs on (with two runs t is 12.7 and the band means nothing).

**The ratio of two medians** (:func:`median_ratio_ci`, the comparison of sessions) is
robust to outliers: ``median(b) / median(a)`` with the interval of Price and Bonett
(2002, "Distribution-free confidence intervals for difference and ratio of medians",
J. Stat. Comput. Simul. 72(2)), built from order statistics on the log scale. For each
sample of ``n`` sorted values ``y`` take ``c = max(1, floor((n + 1) / 2 - sqrt(n) +
0.5))``; ``[y(c), y(n - c + 1)]`` covers the median with the exact probability ``P = 1
- 2 * BinomCDF(c - 1; n, 1/2)``, so ``Var(log median) ~= ((log y(n-c+1) - log y(c)) /
(2 z))**2`` with ``z = Phi^-1((1 + P) / 2)`` (Price and Bonett 2001). Then

    log(median_b / median_a) -+ z_{0.975} * sqrt(Var_a + Var_b)

Only order statistics enter it, so a few slow runs move neither the ratio nor the
interval (a mean-based ratio of two samples of the same code with 5 % slow outliers can
read 20x). It needs :data:`MIN_RATIO_RUNS` runs per side. Where a side has a value
<= 0, its variance is taken on the raw scale, ``((y(n-c+1) - y(c)) / (2 z m))**2``.

**Runs in time order.** Price-Bonett assumes independent runs. On a shared machine
they are not: the host's speed holds for seconds, so a session is a run of fast and
slow stretches, and 200 runs carry far fewer than 200 runs' worth of information about
where the median lies (sessions of one cell in a Jupyter kernel under JupyterLab had
medians 14 % apart with intervals of +-2 %). With ``ordered=True`` (the comparison of
sessions passes it) a side of at least ``BATCHES * MIN_BATCH_RUNS`` runs is also cut
into :data:`BATCHES` contiguous batches, and ``Var(log median)`` is the larger of
Price-Bonett's and the batch medians' (:func:`batch_log_variance`, the method of batch
means); where a batch variance is used the quantile is Student's t with ``2 * (BATCHES
- 1)`` degrees of freedom. For independent runs the two estimate the same variance,
so the interval hardly widens; for runs in stretches the batch medians disagree and it
widens as much as they do. Simulated (``tests/test_stats.py``, 200 runs a side, the
host's log speed an AR(1) chain): same-code pairs read a change in 44-80 % of cases as
if independent, 7 % and 13 % in time order for stretches of 5 and 10 runs, 31 % for
stretches of 33, longer than a batch: that remainder is left to the comparison's
between-session drift (:data:`nsight_lab.analysis.compare.SESSION_DRIFT`).

*Coverage* (simulated in ``tests/test_stats.py``; 500 pairs per cell, lognormal
sigma 0.02-0.3, 5 % of runs 3-50x slower on both sides, true ratio 1.2): 0.94-0.96 at
n = 3, 0.97-0.98 at n = 5 and 10, 0.93-0.95 at n = 50 and 1,000 (0.90 at n = 2, which is
why two runs give no interval). Cost: one partial sort per side, under 1 ms for 1,000
runs.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

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


CONFIDENCE = 0.95
"""The confidence level of every interval nsight-lab shows."""

MIN_BAND_RUNS = 5
"""Runs before the running band of the duration chart is drawn (t(0.975, 4) = 2.78;
with two runs it is 12.7 and the band spans orders of magnitude)."""

MIN_RATIO_RUNS = 3
"""Runs per side before :func:`median_ratio_ci` gives an interval."""

BATCHES = 8
"""Contiguous batches a side's runs are cut into for :func:`batch_log_variance`."""
MIN_BATCH_RUNS = 5
"""Runs per batch: sides with fewer than ``BATCHES * MIN_BATCH_RUNS`` are not cut."""


T_EXACT_BELOW = 300.0
"""Degrees of freedom below which :func:`t_quantiles` inverts the exact distribution
function; from here on the Cornish-Fisher expansion is within 1e-10 (relative) of it for
every confidence up to 0.9999."""


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:  # noqa: PLR2004
            break
    return h


def _t_upper_tail(t: float, df: float) -> float:
    """``P(T > t)`` for ``t >= 0``.

    Half the regularised incomplete beta ``I_x(df / 2, 1 / 2)`` at
    ``x = df / (df + t**2)``.
    """
    a, b = df / 2.0, 0.5
    x = df / (df + t * t)
    if x >= 1.0:
        return 0.5
    front = math.exp(
        math.lgamma(a + b)
        - math.lgamma(a)
        - math.lgamma(b)
        + a * math.log(x)
        + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return 0.5 * front * _betacf(a, b, x) / a
    return 0.5 * (1.0 - front * _betacf(b, a, 1.0 - x) / b)


def _t_pdf(t: float, df: float) -> float:
    return math.exp(
        math.lgamma((df + 1.0) / 2.0)
        - math.lgamma(df / 2.0)
        - 0.5 * math.log(df * math.pi)
        - (df + 1.0) / 2.0 * math.log1p(t * t / df)
    )


def _cornish_fisher(z: float, df: float) -> float:
    """Student's t quantile from the normal one ``z`` (Abramowitz and Stegun 26.7.5)."""
    z2 = z * z
    g1 = (z2 + 1.0) * z / 4.0
    g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0
    g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0
    g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z
    return z + (g1 + (g2 + (g3 + g4 / 92160.0 / df) / df) / df) / df


@functools.lru_cache(maxsize=1 << 16)
def _t_ppf(q: float, df: float) -> float:
    """The ``q`` quantile of Student's t with ``df > 0`` degrees of freedom.

    Closed forms for one and two degrees of freedom; below :data:`T_EXACT_BELOW`,
    Newton's method on the exact upper tail; above it, the Cornish-Fisher expansion.
    Within 1e-12 of scipy's ``stats.t.ppf`` (relative) below, 1e-10 above
    (``tests/test_stats.py``). No scipy: ``scipy.stats`` takes seconds to import, and
    this is on the first cell's path. NaN for ``df <= 0`` or ``q`` outside [0, 1].
    """
    if not (df > 0 and 0.0 <= q <= 1.0):  # NaN fails too
        return math.nan
    if q in {0.0, 0.5, 1.0}:
        return {0.0: -math.inf, 0.5: 0.0, 1.0: math.inf}[q]
    if q < 0.5:  # noqa: PLR2004
        return -_t_ppf(1.0 - q, df)
    if df == 1.0:
        return math.tan(math.pi * (q - 0.5))
    if df == 2.0:  # noqa: PLR2004
        return (2.0 * q - 1.0) / math.sqrt(2.0 * q * (1.0 - q))
    z = NormalDist().inv_cdf(q)
    start = _cornish_fisher(z, df)  # z itself for infinite df
    return start if df >= T_EXACT_BELOW else _t_newton(1.0 - q, df, max(z, start))


def _t_newton(p: float, df: float, t: float) -> float:
    """The ``t > 0`` with ``P(T > t) = p``, by Newton's method from ``t``.

    Kept inside a bracket of the root: a step that leaves it bisects (or widens) it.
    """
    low, high = 0.0, math.inf
    for _ in range(200):
        f = _t_upper_tail(t, df) - p
        if f == 0.0:
            break
        if f > 0.0:
            low = t
        else:
            high = t
        new = t + f / _t_pdf(t, df)
        if not low < new < high:
            new = 0.5 * (low + high) if math.isfinite(high) else 2.0 * t
        if abs(new - t) <= 1e-13 * new:
            return new
        t = new
    return t


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
    q = 0.5 + confidence / 2.0
    unique, inverse = np.unique(dfs, return_inverse=True)
    values = np.array([_t_ppf(q, float(v)) for v in unique], dtype=float)
    return values[inverse].reshape(dfs.shape)


@functools.lru_cache(maxsize=1 << 16)
def t_quantile(df: float, confidence: float = CONFIDENCE) -> float:
    """:func:`t_quantiles` of one ``df`` as a float (cached: asked once per run live).

    Raises:
        Nothing.
    """
    return _t_ppf(0.5 + confidence / 2.0, float(df))  # t_quantiles' one value


def t_critical(n: int, confidence: float = CONFIDENCE) -> float:
    """Return the two-sided Student t critical value for ``n`` samples (``n - 1`` df).

    NaN if ``n < 2``.
    """
    if n < 2:  # noqa: PLR2004
        return math.nan
    return t_quantile(float(n - 1), confidence)


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
