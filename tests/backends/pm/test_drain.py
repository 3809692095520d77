"""PmSampler's drains (backends/pm/sampler.py) on the CPU replay of CUPTI's limits."""

from __future__ import annotations

import numpy as np
import pytest

from nsight_lab.backends.pm import pacing
from nsight_lab.backends.pm.sampler import Overflowed, PmSampler
from nsight_lab.errors import BackendUnavailableError, MeasurementError

from .replay import DRAM_PAIR, ReplayActivity, ReplayGpu, ReplaySampling, VirtualClock


def sampler(interval_ns: int = 20_000) -> tuple[PmSampler, ReplaySampling, ReplayGpu]:
    clock = VirtualClock()
    gpu = ReplayGpu(clock, ReplayActivity())
    api = ReplaySampling(gpu, DRAM_PAIR, clock)
    api.costs.start_stop = 0.0  # samples counted from the advances below alone
    return PmSampler(api, DRAM_PAIR, interval_ns, clock=clock.seconds), api, gpu


def test_a_drain_hands_out_every_sample_since_the_last_and_starts_again() -> None:
    s, api, gpu = sampler()
    total_read = 0.0
    for _ in range(20):
        gpu.launch("k", 300_000, reads=1e8, writes=5e7)
        gpu.launch("spin", 30_000)  # quiet before the stop: nothing is cut
        gpu.synchronize()
        chunks = s.drain()
        for chunk in chunks:
            assert (np.diff(chunk.starts) > 0).all()
            total_read += float(chunk.all_values()[:, 0].sum())
    assert total_read == pytest.approx(20 * 1e8)
    assert api.running
    assert api.fills == 0
    assert s.stats.drains == 20


def test_the_image_is_sized_for_what_waits_so_no_decode_fills_it() -> None:
    s, api, gpu = sampler()
    gpu.clock.advance(0.15e9)  # 7,500 samples: more than half an image, less than one
    chunks = s.drain()
    assert sum(len(c) for c in chunks) >= 7_490
    assert api.fills == 0
    assert s.stats.largest_share == pytest.approx(0.75, abs=0.01)


def test_more_than_an_image_waiting_is_dropped_on_a_fresh_session_never_cut() -> None:
    s, api, gpu = sampler()
    gpu.clock.advance(0.25e9)  # 12,500 samples: an image holds 10,000
    with pytest.raises(Overflowed, match="--sample-interval") as caught:
        s.drain()
    assert caught.value.waiting > s.limit
    assert api.fills == 0  # nothing was decoded into a full image
    assert api.configured == [20_000, 20_000]  # enabled again, sampling again
    gpu.launch("k", 100_000, reads=4e7)
    gpu.launch("spin", 30_000)
    gpu.synchronize()
    (chunk,) = s.drain()
    assert float(chunk.all_values()[:, 0].sum()) == pytest.approx(4e7)


def test_the_first_sample_after_a_start_gets_a_start_and_the_cut_one_is_left() -> None:
    s, _api, gpu = sampler()
    gpu.clock.advance(1_010_000)  # 50.5 intervals
    (chunk,) = s.drain()
    assert chunk.starts[0] > 0
    assert chunk.ends[0] - chunk.starts[0] == 20_000
    assert s.stats.repaired == 1
    assert s.stats.cut == 1
    assert len(chunk) == 50


def test_values_are_evaluated_only_when_asked_and_only_once() -> None:
    s, api, gpu = sampler()
    gpu.clock.advance(2_000_000)
    (chunk,) = s.drain()
    chunk.values(np.array([3, 4, 3]))
    assert api.evaluated == 2
    assert chunk.evaluated == 2


def test_a_reconfigure_samples_at_the_new_interval() -> None:
    s, api, gpu = sampler()
    s.reconfigure(50_000)
    gpu.clock.advance(5_000_000)
    (chunk,) = s.drain()
    assert api.configured[-1] == 50_000
    assert len(chunk) == 100  # 100 whole intervals: none cut by the stop
    assert s.interval_ns == 50_000


def test_a_refused_configuration_is_one_line_naming_the_fix() -> None:
    clock = VirtualClock()
    api = ReplaySampling(ReplayGpu(clock, ReplayActivity()), DRAM_PAIR, clock)

    def refuse(_interval_ns: int) -> None:
        msg = "metric not in one pass"
        raise ValueError(msg)

    api.configure = refuse  # type: ignore[method-assign]
    with pytest.raises(BackendUnavailableError, match="--backend ncu") as caught:
        PmSampler(api, DRAM_PAIR, 20_000, clock=clock.seconds)
    assert "\n" not in str(caught.value)


def test_a_lost_sample_in_the_middle_is_an_error_not_a_silent_gap() -> None:
    s, api, gpu = sampler()
    gpu.clock.advance(1_000_000)
    api.stop()
    api.waiting_ends[10] = 0  # an end missing before others: a sample lost
    api.start = lambda: None  # type: ignore[method-assign]
    s.api = api
    api.stop = lambda: None  # type: ignore[method-assign]
    with pytest.raises(MeasurementError, match="--sample-interval"):
        s.drain()


def test_the_capacity_follows_the_metric_sets_image_bytes() -> None:
    assert pacing.capacity(3_162) == 10_000
    assert pacing.capacity(31_780) == (256 << 20) // 31_780
    assert pacing.image_size(10, 10_000) == pacing.MIN_SAMPLES
    assert pacing.image_size(9_000, 10_000) == 10_000
