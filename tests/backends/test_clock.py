"""CUPTI's clock in ns after another client (Kineto's TSC callback) changed its unit."""

from __future__ import annotations

import time

import pytest

from nsight_lab.backends.activity import KernelActivity
from nsight_lab.backends.clock import CuptiClock
from nsight_lab.backends.cupti import IDS_PER_RUN, CuptiMeasurement, PendingRun
from nsight_lab.contract.collector import RunKey

TSC_PER_NS = 2.08  # Kineto's timestamps on the H100's host: TSC ticks


def tsc() -> int:
    return int(time.perf_counter_ns() * TSC_PER_NS) + 7_000_000_000


def test_cuptis_own_clock_is_left_alone() -> None:
    clock = CuptiClock(time.perf_counter_ns)
    assert clock.native
    assert clock.ns(123_456) == 123_456
    assert clock.duration_ns(1_000) == 1_000


def test_a_tsc_clock_is_measured_and_converted() -> None:
    clock = CuptiClock(tsc)
    assert not clock.native
    assert clock.rate == pytest.approx(TSC_PER_NS, rel=2e-3)
    time.sleep(0.02)
    clock.update()  # a longer baseline: closer still
    assert clock.rate == pytest.approx(TSC_PER_NS, rel=2e-4)
    assert clock.duration_ns(int(1_000_000 * TSC_PER_NS)) == pytest.approx(
        1_000_000, rel=2e-4
    )
    # Timestamps land near the epoch nanoseconds CUPTI's own clock gives (PM
    # samples follow the callback's ticks too: pm converts them the same way).
    assert abs(clock.ns(tsc()) - time.time_ns()) < 1_000_000


def test_the_measurement_converts_records_and_host_spans() -> None:
    m = CuptiMeasurement.__new__(CuptiMeasurement)
    m._clock = CuptiClock(tsc)  # noqa: SLF001
    m.notes = []
    k = KernelActivity("gemm", 0, int(500_000 * TSC_PER_NS), 1)
    run = PendingRun(key=RunKey(0, 0), seq=1, regions=["mm"])
    run.host_ns = {"mm": int(800_000 * TSC_PER_NS)}
    (got,) = m._in_ns([k], [run])  # noqa: SLF001
    assert got.end_ns - got.start_ns == pytest.approx(500_000, rel=1e-3)
    assert run.host_ns["mm"] == pytest.approx(800_000, rel=1e-3)
    assert "torch.profiler" in m.notes[0]
    m._in_ns([k], [])  # noqa: SLF001  (said once)
    assert len(m.notes) == 1
    assert IDS_PER_RUN  # the id space is untouched by the clock
