"""Student's t quantiles: the one t of nsight-lab, without SciPy.

The exact distribution function (the regularised incomplete beta, Lentz's continued
fraction) inverted by Newton's method below :data:`T_EXACT_BELOW` degrees of freedom,
the Cornish-Fisher expansion above it.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

CONFIDENCE = 0.95
"""The confidence level of every interval nsight-lab shows."""

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
