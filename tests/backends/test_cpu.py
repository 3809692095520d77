"""nsight_lab.backends.cpu: the host timer, driven as the runner drives a measurement.

Whole profiles on it run through the magic in most test files; here: what one
measurement records per run, its notes, and the device name.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from nsight_lab.backends.cpu import CpuTimerBackend, cpu_name
from nsight_lab.contract.collector import RunKey
from nsight_lab.options import ProfileOptions

PAUSE_S = 0.002


def test_the_cpu_backend_is_always_available():
    found = CpuTimerBackend().probe()
    assert found.ok
    assert "perf_counter_ns" in found.reason


def test_a_run_times_each_region_and_the_whole_run():
    measurement = CpuTimerBackend().open(ProfileOptions())
    key = RunKey(config_index=1, run_index=0)
    measurement.begin_run(key)
    measurement.enter_region("outer")
    measurement.enter_region("inner")  # regions may nest
    time.sleep(PAUSE_S)
    measurement.exit_region("inner")
    time.sleep(PAUSE_S)
    measurement.exit_region("outer")
    measurement.end_run(thermal_wait_s=0.25)
    [run] = measurement.completed(wait=False)
    assert run.key == key
    assert set(run.regions) == {"outer", "inner"}
    # Lower bounds only: sleep never returns early, and perf_counter_ns is monotonic.
    assert run.regions["inner"] >= PAUSE_S * 1e9
    assert run.regions["outer"] >= run.regions["inner"] + PAUSE_S * 1e9
    assert run.whole_ns >= run.regions["outer"]
    assert run.thermal_wait_s == 0.25
    assert run.kernels == {}  # a host timer sees no kernels
    assert measurement.completed(wait=True) == []  # each run is handed over once


def test_each_run_starts_with_no_regions_and_an_abandoned_run_is_dropped():
    measurement = CpuTimerBackend().open(ProfileOptions())
    measurement.begin_run(RunKey(0, 0))
    measurement.enter_region("a")
    measurement.exit_region("a")
    measurement.end_run(0.0)
    measurement.begin_run(RunKey(0, 1))
    measurement.enter_region("a")
    measurement.abandon_run()  # the cell raised inside the region
    measurement.begin_run(RunKey(0, 2))
    measurement.enter_region("b")
    measurement.exit_region("b")
    measurement.end_run(0.0)
    runs = measurement.completed(wait=False)
    assert [(r.key.run_index, set(r.regions)) for r in runs] == [(0, {"a"}), (2, {"b"})]
    assert measurement.thermal_wait(None) == 0.0
    measurement.close()


@pytest.mark.parametrize(
    ("options", "notes"),
    [
        (ProfileOptions(cache_control="none", clock_control="none"), []),
        (
            ProfileOptions(cache_control="all", clock_control="base"),
            [
                "cpu backend: --cache-control has no effect on host timing",
                "cpu backend: --clock-control has no effect on host timing",
            ],
        ),
    ],
)
def test_gpu_only_options_are_noted_as_without_effect(options, notes):
    measurement = CpuTimerBackend().open(options)
    assert measurement.notes == notes


def test_the_device_is_the_cpus_model_name():
    name = cpu_name()
    assert name
    assert CpuTimerBackend().open(ProfileOptions()).device_name == name
    cpuinfo = Path("/proc/cpuinfo")
    text = cpuinfo.read_text(encoding="utf-8") if cpuinfo.exists() else ""
    models = [ln for ln in text.splitlines() if ln.startswith("model name")]
    if not models:
        pytest.skip("no 'model name' in /proc/cpuinfo here: nothing to compare with")
    assert name == models[0].partition(":")[2].strip()
