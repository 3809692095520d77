from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sp

from nsight_lab.stats import (
    MIN_BAND_RUNS,
    MIN_RATIO_RUNS,
    T_EXACT_BELOW,
    RunningMean,
    batch_log_variance,
    geomean,
    median_log_variance,
    median_ratio_ci,
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
    # Positive values: the interval of the mean on the log scale (delta method).
    half = sp.t.ppf(0.975, 5) * sp.sem(arr) / arr.mean()
    assert s.ci95_low == pytest.approx(arr.mean() * math.exp(-half))
    assert s.ci95_high == pytest.approx(arr.mean() * math.exp(half))
    # ... which is the t interval to first order for a small spread.
    low, high = sp.t.interval(0.95, 5, loc=arr.mean(), scale=sp.sem(arr))
    assert s.ci95_low == pytest.approx(low, rel=5e-3)
    assert s.ci95_high == pytest.approx(high, rel=5e-3)
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


@pytest.mark.parametrize("confidence", [0.5, 0.8, 0.9, 0.95, 0.99, 0.999, 0.9999])
def test_t_quantiles_match_scipy_without_importing_it(confidence: float) -> None:
    # Given: integer and fractional degrees of freedom, from heavy tails to the normal
    dfs = np.concatenate(
        [np.arange(0.25, 40.0, 0.25), [50.0, 99.0, 299.0, 300.0, 1e3, 1e5, math.inf]]
    )
    # When: nsight-lab's own quantiles are taken (no scipy on the cell's path)
    ours = t_quantiles(dfs, confidence)
    # Then: they are scipy's, within 1e-12 (exact inversion) or 1e-10 (expansion)
    theirs = sp.t.ppf(0.5 + confidence / 2.0, dfs)
    tolerance = np.where(dfs < T_EXACT_BELOW, 1e-12, 1e-10)
    assert np.all(np.abs(ours - theirs) <= tolerance * theirs)


def test_t_quantiles_keep_the_shape_and_refuse_what_is_no_distribution() -> None:
    grid = np.array([[1.0, 2.0], [4.0, -1.0]])
    values = t_quantiles(grid)
    assert values.shape == (2, 2)
    assert values[0, 0] == pytest.approx(12.706204736174698, rel=1e-14)
    assert values[0, 1] == pytest.approx(4.302652729749464, rel=1e-14)
    assert math.isnan(values[1, 1])
    assert math.isnan(t_quantile(math.nan))
    assert t_quantile(5.0, 0.0) == 0.0
    assert t_quantile(5.0, 1.0) == math.inf
    assert math.isnan(t_quantile(5.0, 1.5))


def test_intervals_of_positive_quantities_never_go_below_zero() -> None:
    # Given: a duration series with one slow run, and a bandwidth near zero
    # (nsight-python's t interval gives -1.76e5 ns and -0.73 GB/s for such series)
    durations = [7_200.0, 7_100.0, 7_300.0, 1_000_000.0]
    bandwidth = [0.05, 0.04, 1.9, 0.06]

    # Then
    for values in (durations, bandwidth):
        s = summarize(values)
        arr = np.array(values)
        t_low, _ = sp.t.interval(0.95, arr.size - 1, loc=arr.mean(), scale=sp.sem(arr))
        assert t_low < 0  # what the plain t interval says
        assert 0 < s.ci95_low < s.mean < s.ci95_high
    # A quantity that can be negative keeps the plain t interval.
    signed = [-1.0, 2.0, 0.5, 1.5]
    arr = np.array(signed)
    s = summarize(signed)
    low, high = sp.t.interval(0.95, 3, loc=arr.mean(), scale=sp.sem(arr))
    assert (s.ci95_low, s.ci95_high) == pytest.approx((low, high))
    # Zeros and positive values: log scale around a positive mean; all zero: [0, 0].
    assert summarize([0.0, 4.0, 5.0]).ci95_low > 0
    zeros = summarize([0.0, 0.0, 0.0])
    assert (zeros.ci95_low, zeros.ci95_high) == (0.0, 0.0)


def test_running_mean_ci_is_the_summary_interval_from_min_band_runs_on() -> None:
    low, high = running_mean_ci(DURATIONS)
    assert MIN_BAND_RUNS == 5
    for k in range(MIN_BAND_RUNS - 1):
        assert math.isnan(low[k])
        assert math.isnan(high[k])
    for k in range(MIN_BAND_RUNS, len(DURATIONS) + 1):
        s = summarize(DURATIONS[:k])
        assert low[k - 1] == pytest.approx(s.ci95_low)
        assert high[k - 1] == pytest.approx(s.ci95_high)
    # With min_runs=2 the band starts at the second run.
    low2, _ = running_mean_ci(DURATIONS, min_runs=2)
    assert math.isnan(low2[0])
    assert low2[1] == pytest.approx(summarize(DURATIONS[:2]).ci95_low)


def test_running_band_of_a_slow_first_run_stays_positive() -> None:
    # Given: the case: a slow first run, then ~10 µs runs
    values = [600_000.0] + [10.0] * 9

    # When
    low, high = running_mean_ci(values)

    # Then: nothing before run 5, never below zero after
    assert all(math.isnan(v) for v in low[: MIN_BAND_RUNS - 1])
    assert all(0 < lo < hi for lo, hi in zip(low[4:], high[4:], strict=True))


def test_running_mean_ci_is_stable_for_large_offsets() -> None:
    values = [1e9 + v for v in DURATIONS]
    low, high = running_mean_ci(values)
    s = summarize(values)
    assert (low[-1], high[-1]) == pytest.approx((s.ci95_low, s.ci95_high), rel=1e-12)
    arr = np.array(DURATIONS)
    half = sp.t.ppf(0.975, arr.size - 1) * sp.sem(arr)
    assert high[-1] - low[-1] == pytest.approx(2 * half, rel=1e-6)


def test_running_mean_one_value_at_a_time_is_the_same_band() -> None:
    low, high = running_mean_ci(DURATIONS)
    band = RunningMean()
    steps = [band.add(v) for v in DURATIONS]
    assert steps[: MIN_BAND_RUNS - 1] == [None] * (MIN_BAND_RUNS - 1)
    for k, step in enumerate(steps[MIN_BAND_RUNS - 1 :], start=MIN_BAND_RUNS - 1):
        assert step == pytest.approx((low[k], high[k]))
    signed = [1.0, -2.0, 3.0, 0.5, 2.0, 1.0]
    low, high = running_mean_ci(signed)
    band = RunningMean()
    assert [band.add(v) for v in signed][-1] == pytest.approx((low[-1], high[-1]))


# -- the ratio of medians --------------------------------------------------------------


def _contaminated(rng, n, scale, *, sigma=0.1, outliers=0.05):
    """Lognormal runs, a share of them 3-50x slower (a compile, a clock ramp...)."""
    x = scale * rng.lognormal(0.0, sigma, n)
    slow = rng.random(n) < outliers
    x[slow] *= rng.uniform(3.0, 50.0, int(slow.sum()))
    return x


def _true_median(scale, *, sigma=0.1, outliers=0.05):
    """The median of :func:`_contaminated` (every outlier lies above it)."""
    return scale * math.exp(sigma * sp.norm.ppf(0.5 / (1.0 - outliers)))


@pytest.mark.parametrize(("n", "sigma"), [(5, 0.1), (30, 0.1), (30, 0.3), (200, 0.02)])
def test_median_ratio_ci_covers_the_true_median_ratio_under_outliers(n, sigma):
    # Given: 500 simulated pairs, true ratio of medians 1.2, 5 % slow outliers
    rng = np.random.default_rng(20240610 + n)
    truth = _true_median(1.2, sigma=sigma) / _true_median(1.0, sigma=sigma)
    trials, covered = 500, 0
    for _ in range(trials):
        a = _contaminated(rng, n, 1.0, sigma=sigma)
        b = _contaminated(rng, n, 1.2, sigma=sigma)
        _, low, high = median_ratio_ci(a.tolist(), b.tolist())
        assert low is not None
        assert high is not None
        covered += low <= truth <= high

    # Then: about the nominal 95 % (measured 0.94-0.98; binomial sd ~1 %)
    assert covered / trials >= 0.90


def test_same_code_with_outliers_on_one_side_reads_no_change():
    # Given: the "a + a" sessions: the same distribution, ~7 µs,
    # with slow outliers (0.1-1 s) in one of them; the ratio of means reads ~20x
    rng = np.random.default_rng(10)
    a = 7_200.0 * rng.lognormal(0.0, 0.05, 30)
    b = 7_200.0 * rng.lognormal(0.0, 0.05, 30)
    b[[3, 11]] = [1.0e8, 6.0e8]
    assert b.mean() / a.mean() > 20

    # When
    ratio, low, high = median_ratio_ci(a.tolist(), b.tolist())

    # Then
    assert low is not None
    assert high is not None
    assert low <= 1.0 <= high
    assert ratio == pytest.approx(1.0, abs=0.05)
    assert high / low < 1.1  # the outliers do not widen it either


def test_median_ratio_ci_edge_cases_and_cost():
    # Too few runs for an interval
    assert median_ratio_ci([1.0, 3.0], [2.0, 4.0, 6.0]) == (2.0, None, None)
    assert MIN_RATIO_RUNS == 3
    # No spread in the middle: the interval is the ratio itself
    assert median_ratio_ci([2.0] * 5, [3.0] * 5) == (1.5, 1.5, 1.5)
    # A zero baseline median: no ratio; a negative median: no interval
    assert math.isnan(median_ratio_ci([0.0] * 3, [1.0] * 3)[0])
    assert median_ratio_ci([-1.0, -2.0, -3.0], [1.0, 2.0, 3.0])[1:] == (None, None)
    # Zeros among positive values: the raw-scale variance, still an interval
    ratio, low, high = median_ratio_ci([0.0, 5.0, 6.0, 7.0], [0.0, 6.0, 7.0, 8.0])
    assert low is not None
    assert high is not None
    assert 0 < low < ratio < high
    with pytest.raises(ValueError, match="no values"):
        median_ratio_ci([], [1.0])
    assert math.isnan(median_log_variance([1.0]))
    # Order statistics only, no resampling: the same interval on every call (its
    # pace, 1,000 runs well under 20 ms, is benchmarks/unit_paces.py's)
    rng = np.random.default_rng(3)
    a, b = rng.lognormal(0, 0.1, 1000).tolist(), rng.lognormal(0, 0.1, 1000).tolist()
    first = median_ratio_ci(a, b)
    assert first[1] is not None
    assert all(median_ratio_ci(a, b) == first for _ in range(3))


def test_median_log_variance_matches_price_bonett_by_hand():
    # n = 10: c = round(5.5 - 3.162) = 2, P(Binom(10, 1/2) <= 1) = 11/1024
    values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    z = sp.norm.ppf(1 - 11 / 1024)
    expected = (math.log(9.0 / 2.0) / (2 * z)) ** 2
    assert median_log_variance(values) == pytest.approx(expected)
    ratio, low, high = median_ratio_ci(values, [2 * v for v in values])
    half = sp.norm.ppf(0.975) * math.sqrt(2 * expected)
    assert (ratio, low, high) == pytest.approx(
        (2.0, 2.0 * math.exp(-half), 2.0 * math.exp(half))
    )


def _stretches(rng, n: int, *, sd: float = 0.1, phi: float = 0.97) -> np.ndarray:
    """Runs of one code on a host whose speed wanders and holds for stretches.

    The log of the host's speed is an AR(1) chain (``phi`` 0.97: it holds for ~30
    runs; stationary sd ``sd``), times 1 % noise per run.
    """
    speed = np.empty(n)
    x = sd * rng.standard_normal()
    step = sd * math.sqrt(1.0 - phi**2)
    for i in range(n):
        x = phi * x + step * rng.standard_normal()
        speed[i] = x
    return 230_000.0 * np.exp(speed) * rng.lognormal(0.0, 0.01, n)


@pytest.mark.parametrize(
    ("phi", "as_if_independent", "in_order"),
    [(0.8, 0.4, 0.10), (0.9, 0.5, 0.16), (0.97, 0.7, 0.40)],
)
def test_runs_in_stretches_widen_the_interval(
    phi: float, as_if_independent: float, in_order: float
) -> None:
    # Given: 300 pairs of sessions of the same code, 200 runs each, on a host whose
    # speed holds for stretches of ~1 / (1 - phi) runs
    rng = np.random.default_rng(11)
    pairs = [
        (_stretches(rng, 200, phi=phi), _stretches(rng, 200, phi=phi))
        for _ in range(300)
    ]

    def alarms(ordered: bool) -> float:  # noqa: FBT001
        wrong = 0
        for a, b in pairs:
            _, low, high = median_ratio_ci(a.tolist(), b.tolist(), ordered=ordered)
            assert low is not None
            assert high is not None
            wrong += not low <= 1.0 <= high
        return wrong / len(pairs)

    # Then: judged as if independent, most pairs read a change (measured 0.44, 0.59,
    # 0.80); in time order far fewer (0.07, 0.13 and, for stretches longer than a
    # batch of 25 runs, 0.31: what is left is the between-session drift's to cover)
    assert alarms(ordered=False) > as_if_independent
    assert alarms(ordered=True) < in_order


def test_independent_runs_in_order_keep_their_interval():
    # Given: independent runs: the batch medians estimate the same variance
    rng = np.random.default_rng(12)
    ratios = []
    for _ in range(200):
        a = 1e5 * rng.lognormal(0.0, 0.05, 200)
        b = 1e5 * rng.lognormal(0.0, 0.05, 200)
        _, low, high = median_ratio_ci(a.tolist(), b.tolist())
        _, low_o, high_o = median_ratio_ci(a.tolist(), b.tolist(), ordered=True)
        ratios.append(math.log(high_o / low_o) / math.log(high / low))
    # Then: never narrower, and on average less than a third wider
    assert min(ratios) >= 1.0 - 1e-12
    assert float(np.mean(ratios)) < 1.33


def test_short_sessions_are_not_cut_into_batches():
    values = [float(v) for v in range(1, 40)]  # 39 < BATCHES * MIN_BATCH_RUNS
    assert batch_log_variance(values) is None
    assert median_ratio_ci(values, values, ordered=True) == median_ratio_ci(
        values, values
    )
    assert batch_log_variance([0.0] * 40) is None
