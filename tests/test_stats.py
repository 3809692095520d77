from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sp

from nsight_lab.stats import (
    RunningMean,
    geomean,
    rsd_pct,
    running_mean_ci,
    summarize,
    t_critical,
    t_quantile,
    t_quantiles,
)

DURATIONS = [100.0, 102.0, 98.0, 130.0, 101.0, 99.5]


def test_summary_matches_numpy_and_scipy() -> None:
    values = [10.0, 12.0, 11.5, 9.8, 10.7, 11.1]
    s = summarize(values)
    arr = np.array(values)
    assert s.n == 6
    assert s.mean == pytest.approx(arr.mean())
    assert s.std == pytest.approx(arr.std(ddof=1))
    assert s.median == pytest.approx(np.median(arr))
    assert (s.min, s.max) == (9.8, 12.0)
    low, high = sp.t.interval(0.95, 5, loc=arr.mean(), scale=sp.sem(arr))
    assert s.ci95_low == pytest.approx(low)
    assert s.ci95_high == pytest.approx(high)
    assert s.rsd_pct == pytest.approx(arr.std(ddof=1) / arr.mean() * 100)
    assert s.stable is False  # about 7 % RSD


def test_single_value_has_no_spread() -> None:
    s = summarize([5.0])
    assert s.mean == 5.0
    assert math.isnan(s.std)
    assert math.isnan(s.ci95_low)
    assert not s.stable


def test_stable_and_geomean() -> None:
    assert summarize([100.0, 100.5, 99.5, 100.2]).stable
    assert geomean([1.0, 4.0, 16.0]) == pytest.approx(4.0)
    assert math.isnan(geomean([]))
    assert math.isnan(rsd_pct([0.0, 0.0]))
    with pytest.raises(ValueError, match="no values"):
        summarize([])


def test_t_quantile_is_scipys_and_nan_without_degrees_of_freedom() -> None:
    assert t_quantile(4.0) == pytest.approx(sp.t.ppf(0.975, 4))
    assert t_quantile(7.3, 0.9) == pytest.approx(sp.t.ppf(0.95, 7.3))
    assert t_critical(5) == t_quantile(4.0)
    assert math.isnan(t_quantile(0.0))
    assert math.isnan(t_critical(1))
    values = t_quantiles(np.array([0.0, 1.0, 30.0]))
    assert math.isnan(values[0])
    assert list(values[1:]) == pytest.approx([sp.t.ppf(0.975, 1), sp.t.ppf(0.975, 30)])


def test_running_mean_ci_matches_scipy_t() -> None:
    low, high = running_mean_ci(DURATIONS)
    assert math.isnan(low[0])
    assert math.isnan(high[0])
    for k in range(2, len(DURATIONS) + 1):
        arr = np.array(DURATIONS[:k])
        lo, hi = sp.t.interval(0.95, k - 1, loc=arr.mean(), scale=sp.sem(arr))
        assert low[k - 1] == pytest.approx(lo)
        assert high[k - 1] == pytest.approx(hi)
    # The last element is the summary's interval.
    s = summarize(DURATIONS)
    assert (low[-1], high[-1]) == pytest.approx((s.ci95_low, s.ci95_high))


def test_running_mean_ci_is_stable_for_large_offsets() -> None:
    values = [1e9 + v for v in DURATIONS]
    low, high = running_mean_ci(values)
    arr = np.array(DURATIONS)
    half = sp.t.ppf(0.975, arr.size - 1) * sp.sem(arr)
    assert high[-1] - low[-1] == pytest.approx(2 * half, rel=1e-6)


def test_running_mean_one_value_at_a_time_is_the_same_band() -> None:
    low, high = running_mean_ci(DURATIONS)
    band = RunningMean()
    steps = [band.add(v) for v in DURATIONS]
    assert steps[0] is None
    for k, step in enumerate(steps[1:], start=1):
        assert step == pytest.approx((low[k], high[k]))
