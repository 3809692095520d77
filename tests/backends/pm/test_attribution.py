"""PM samples -> regions (backends/pm/attribution.py), on hand-built timelines.

Each timeline is made of kernels that move bytes at known constant rates; a sample's
value is the exact integral of the rate over its interval, as a perfect counter would
count it. So every region's true total is known, and the tests check the attribution
against it: exact with the collector's DRAM-quiet gaps, within the module's bound
without them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nsight_lab.backends.pm.attribution import (
    Layout,
    attribute,
    covered,
    merge_spans,
    region_means,
    region_sums,
    weigh,
)

US = 1_000  # ns


def sample_timeline(
    kernels: list[tuple[int, int, float]], interval: int, start: int, stop: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Samples every ``interval`` ns over [start, stop): bytes moved in each.

    ``kernels``: (start_ns, end_ns, bytes per ns) of each kernel; they may overlap.
    """
    starts = np.arange(start, stop, interval, dtype=np.int64)
    ends = starts + interval
    values = np.zeros((len(starts), 1))
    for k_start, k_end, rate in kernels:
        merged = merge_spans([(k_start, k_end)])
        values[:, 0] += rate * covered(merged, starts, ends)
    return starts, ends, values


def test_merge_spans_joins_overlapping_and_touching_and_drops_empty() -> None:
    merged = merge_spans([(50, 60), (0, 10), (5, 20), (20, 25), (30, 30), (40, 35)])
    assert merged.tolist() == [[0, 25], [50, 60]]
    assert merge_spans([]).shape == (0, 2)


def test_covered_counts_time_inside_the_spans() -> None:
    merged = merge_spans([(10, 20), (30, 40)])
    got = covered(merged, [0, 15, 25, 0, 45], [5, 35, 28, 100, 50])
    assert got.tolist() == [0.0, 10.0, 0.0, 20.0, 0.0]


def test_the_synthetic_fixture_with_quiet_gaps_is_exact() -> None:
    """flush | quiet | region a | quiet | flush | quiet | region b | quiet, L = 20 µs.

    The flush moves 4 bytes/ns (100 MB-ish in 25 µs), region a 3 bytes/ns for 100 µs
    over two kernels, region b 1 byte/ns for 30 µs (shorter than a sample).
    """
    interval = 20 * US
    quiet = 22 * US
    flush1 = (0, 25 * US, 4.0)
    a1 = (flush1[1] + quiet, flush1[1] + quiet + 60 * US, 3.0)
    a2 = (a1[1] + 2 * US, a1[1] + 42 * US, 3.0)  # a 2 µs launch gap inside the region
    flush2 = (a2[1] + quiet, a2[1] + quiet + 25 * US, 4.0)
    b = (flush2[1] + quiet, flush2[1] + quiet + 30 * US, 1.0)
    kernels = [flush1, a1, a2, flush2, b]
    starts, ends, values = sample_timeline(kernels, interval, -7 * US, b[1] + quiet)
    layout = Layout(
        regions={"a": [a1[:2], a2[:2]], "b": [b[:2]]},
        busy=[flush1[:2], flush2[:2]],
    )
    result = attribute(starts, ends, values, layout)
    assert result.regions["a"][0] == pytest.approx(3.0 * 100 * US)
    assert result.regions["b"][0] == pytest.approx(1.0 * 30 * US)
    assert result.outside[0] == pytest.approx(4.0 * 50 * US)


def test_a_boundary_sample_is_split_by_kernel_time() -> None:
    # One sample [0, 20): 5 ns of region a, 15 ns of the flush; and 10 idle ns after.
    layout = Layout(regions={"a": [(0, 5)]}, busy=[(5, 20)])
    result = attribute([0], [30], [[100.0]], layout)
    assert result.regions["a"][0] == pytest.approx(25.0)  # 5 of 20 busy ns
    assert result.outside[0] == pytest.approx(75.0)


def test_idle_and_quiet_time_carry_nothing() -> None:
    # A sample 5 ns of region a and 15 ns idle (or quiet, which the layout leaves
    # out): the region gets all of it, not a quarter.
    result = attribute([0], [20], [[80.0]], Layout(regions={"a": [(15, 25)]}))
    assert result.regions["a"][0] == pytest.approx(80.0)
    assert result.outside[0] == 0.0


def test_empty_regions_and_samples_touching_nothing() -> None:
    layout = Layout(regions={"a": [], "b": [(100, 100)], "c": [(10, 20)]})
    result = attribute([0, 40], [30, 60], [[7.0], [9.0]], layout)
    assert result.regions["a"].tolist() == [0.0]  # no kernels
    assert result.regions["b"].tolist() == [0.0]  # an empty kernel
    assert result.regions["c"][0] == pytest.approx(7.0)
    assert result.outside[0] == pytest.approx(9.0)  # overlaps no kernel at all


def test_back_to_back_regions_without_a_gap_share_their_boundary_sample() -> None:
    # a: 2 bytes/ns on [0, 50), b: 6 bytes/ns on [50, 100); samples of 20 ns.
    kernels = [(0, 50, 2.0), (50, 100, 6.0)]
    starts, ends, values = sample_timeline(kernels, 20, 0, 100)
    layout = Layout(regions={"a": [(0, 50)], "b": [(50, 100)]})
    result = attribute(starts, ends, values, layout)
    # The sample [40, 60) moved 10*2 + 10*6 = 80 and is split 40/40 by time.
    assert result.regions["a"][0] == pytest.approx(2.0 * 50 + 20.0)
    assert result.regions["b"][0] == pytest.approx(6.0 * 50 - 20.0)
    # The module's bound: L/2 * |rate difference| per boundary sample.
    assert abs(result.regions["a"][0] - 100.0) <= 20 / 2 * abs(6.0 - 2.0)
    assert sum(r[0] for r in result.regions.values()) == pytest.approx(values.sum())


def test_concurrent_region_kernels_share_by_overlap() -> None:
    layout = Layout(regions={"a": [(0, 20)], "b": [(10, 20)]})
    result = attribute([0], [20], [[90.0]], layout)
    assert result.regions["a"][0] == pytest.approx(60.0)
    assert result.regions["b"][0] == pytest.approx(30.0)


def test_weights_name_only_the_samples_that_need_values() -> None:
    layout = Layout(regions={"a": [(100, 150)], "b": [(300, 320)]}, busy=[(0, 50)])
    weights = weigh(np.arange(0, 400, 20), np.arange(20, 420, 20), layout)
    assert weights.needed().tolist() == [5, 6, 7, 15]
    assert weights.busy_ns.tolist() == [50.0, 20.0]
    assert weights.first_ns.tolist() == [100.0, 300.0]
    assert weights.last_ns.tolist() == [150.0, 320.0]
    with pytest.raises(ValueError, match=r"one row per sample of Weights\.needed"):
        region_sums(weights, np.zeros((2, 1)))


def test_unsorted_samples_are_weighed_as_sorted_ones() -> None:
    layout = Layout(regions={"a": [(30, 70)]}, busy=[(0, 30)])
    starts, ends = np.array([40, 0, 20, 60]), np.array([60, 20, 40, 80])
    values = np.array([[1.0], [2.0], [4.0], [8.0]])
    result = attribute(starts, ends, values, layout)
    assert result.regions["a"][0] == pytest.approx(1.0 + 4.0 / 2 + 8.0)


def test_ratio_values_are_averaged_by_overlap() -> None:
    layout = Layout(regions={"a": [(10, 40)], "b": [(100, 120)]})
    weights = weigh([0, 20, 40, 200], [20, 40, 60, 220], layout)
    rows = np.array([[50.0], [80.0]])  # the samples [0, 20) and [20, 40) of a
    means = region_means(weights, rows)
    assert means["a"][0] == pytest.approx((50.0 * 10 + 80.0 * 20) / 30)
    assert math.isnan(means["b"][0])  # no sample overlaps b


spans = st.lists(
    st.tuples(st.integers(0, 2_000), st.integers(1, 300)).map(
        lambda p: (p[0], p[0] + p[1])
    ),
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(
    regions=st.lists(spans, min_size=1, max_size=4),
    busy=spans,
    interval=st.integers(1, 400),
    offset=st.integers(-400, 0),
    values=st.lists(st.floats(0, 1e12), min_size=1, max_size=40),
)
def test_regions_plus_outside_is_every_sample(
    regions: list[list[tuple[int, int]]],
    busy: list[tuple[int, int]],
    interval: int,
    offset: int,
    values: list[float],
) -> None:
    starts = offset + interval * np.arange(len(values))
    ends = starts + interval
    table = np.array(values).reshape(-1, 1)
    layout = Layout(regions=dict(enumerate(regions)), busy=busy)
    result = attribute(starts, ends, table, layout)
    shared = sum(r[0] for r in result.regions.values())
    assert shared + result.outside[0] == pytest.approx(table.sum(), rel=1e-9, abs=1e-3)
    assert all(r[0] >= 0 for r in result.regions.values())
    assert result.outside[0] >= -1e-3 * max(1.0, table.sum())


@settings(max_examples=150, deadline=None)
@given(
    durations=st.lists(st.integers(1, 400), min_size=1, max_size=5),
    rates=st.lists(st.floats(0.0, 10.0), min_size=6, max_size=6),
    interval=st.integers(5, 100),
    phase=st.integers(0, 99),
)
def test_quiet_gaps_of_one_interval_make_the_totals_exact(
    durations: list[int], rates: list[float], interval: int, phase: int
) -> None:
    """Regions of any length, each after a busy neighbour, a quiet gap >= L between."""
    kernels: list[tuple[int, int, float]] = []
    regions: dict[int, list[tuple[int, int]]] = {}
    busy: list[tuple[int, int]] = []
    t = 0
    for i, duration in enumerate(durations):
        neighbour = (t, t + 50, rates[-1] + 1.0)  # a flush
        kernels.append(neighbour)
        busy.append(neighbour[:2])
        t = neighbour[1] + interval  # quiet
        kernels.append((t, t + duration, rates[i]))
        regions[i] = [(t, t + duration)]
        t += duration + interval  # quiet
    starts, ends, values = sample_timeline(kernels, interval, -phase, t + interval)
    result = attribute(starts, ends, values, Layout(regions=regions, busy=busy))
    for i, duration in enumerate(durations):
        assert result.regions[i][0] == pytest.approx(rates[i] * duration, abs=1e-6)


@settings(max_examples=150, deadline=None)
@given(
    first=st.integers(1, 400),
    second=st.integers(1, 400),
    rate_a=st.floats(0.0, 10.0),
    rate_b=st.floats(0.0, 10.0),
    interval=st.integers(5, 100),
    phase=st.integers(0, 99),
)
def test_without_a_gap_the_error_stays_within_the_bound(  # noqa: PLR0913, PLR0917
    first: int, second: int, rate_a: float, rate_b: float, interval: int, phase: int
) -> None:
    kernels = [(0, first, rate_a), (first, first + second, rate_b)]
    starts, ends, values = sample_timeline(
        kernels, interval, -phase, first + second + interval
    )
    layout = Layout(regions={"a": [(0, first)], "b": [(first, first + second)]})
    result = attribute(starts, ends, values, layout)
    bound = interval / 2 * abs(rate_a - rate_b) + 1e-6  # one boundary sample
    assert abs(result.regions["a"][0] - rate_a * first) <= bound
    assert abs(result.regions["b"][0] - rate_b * second) <= bound
