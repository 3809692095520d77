from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sp

from nsight_lab.stats import geomean, rsd_pct, summarize


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
