"""Summary statistics of repeated measurements: the one stats module of nsight-lab.

Confidence intervals use Student's t distribution (nsight-python uses the normal 1.96,
which is too narrow for the 5-20 runs a notebook typically takes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
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


def t_critical(n: int, confidence: float = 0.95) -> float:
    """Return the two-sided Student t critical value for ``n`` samples.

    NaN if ``n < 2``.
    """
    if n < 2:  # noqa: PLR2004
        return math.nan
    return float(_scipy_stats.t.ppf(0.5 + confidence / 2.0, n - 1))


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
    half = t_critical(n) * std / math.sqrt(n) if n >= 2 else math.nan  # noqa: PLR2004
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
