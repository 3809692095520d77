from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from nsight_lab.errors import CoolingTimeoutError
from nsight_lab.gpu.telemetry import decode_reasons, is_throttled
from nsight_lab.gpu.thermal import ThermalGuard

if TYPE_CHECKING:
    from collections.abc import Callable


def test_decode_reasons_in_words() -> None:
    assert decode_reasons(0) == ()
    assert decode_reasons(0x1) == ("gpu idle",)
    assert decode_reasons(0x4 | 0x40) == (
        "software power cap",
        "hardware thermal slowdown",
    )


def test_throttle_flag() -> None:
    assert not is_throttled(1980, 1980, 0)
    assert is_throttled(1400, 1980, 0)  # below 75 % of the ceiling
    assert not is_throttled(1500, 1980, 0)
    assert is_throttled(1980, 1980, 0x20)  # software thermal slowdown
    # idle / app clocks are not throttling
    assert not is_throttled(1980, 1980, 0x1 | 0x2)
    assert not is_throttled(1365, 1365, 0)  # locked to base: judged against the lock
    assert not is_throttled(None, 1980, 0)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_thermal_guard_waits_for_headroom_and_reports() -> None:
    readings = iter([5.0, 8.0, 14.0, 21.0])
    clock = FakeClock()
    seen: list[tuple[float, float]] = []
    guard = ThermalGuard(
        lambda: next(readings), sleep=clock.sleep, clock=lambda: clock.now
    )
    waited = guard.wait(lambda h, w: seen.append((h, w)))
    assert waited == 1.5  # three polls of 0.5 s
    assert [h for h, _ in seen] == [5.0, 8.0, 14.0]


def test_thermal_guard_does_not_wait_with_headroom_or_without_sensor() -> None:
    clock = FakeClock()
    assert (
        ThermalGuard(lambda: 30.0, sleep=clock.sleep, clock=lambda: clock.now).wait()
        == 0
    )
    assert (
        ThermalGuard(lambda: None, sleep=clock.sleep, clock=lambda: clock.now).wait()
        == 0
    )


def _sequence(first: list[tuple[int, float]], then: float) -> Callable[[], float]:
    """Headroom readings: ``(count, value)`` runs of values, then ``then`` forever."""
    values = [v for count, v in first for _ in range(count)]
    readings = iter(values)
    return lambda: next(readings, then)


def _guard(headroom: Callable[[], float | None], **kwargs: Any) -> ThermalGuard:
    clock = FakeClock()
    return ThermalGuard(headroom, sleep=clock.sleep, clock=lambda: clock.now, **kwargs)


def test_auto_waits_longer_when_the_gpu_heats_in_few_runs() -> None:
    # nsight-python's test_adaptive_thermal_control_increase, reading for reading:
    # cool (25), 3 runs at 15, hot (8) while cooling, cool again.
    guard = _guard(_sequence([(1, 25), (3, 15), (6, 8)], 25), adaptive=True)
    for _ in range(15):
        guard.wait()
    assert guard.resume_at_c == 23  # 20 + 3


def test_auto_waits_less_when_the_gpu_heats_slowly() -> None:
    # nsight-python's test_adaptive_thermal_control_decrease: 55 runs before the pause
    guard = _guard(_sequence([(1, 25), (55, 12), (9, 8)], 25), adaptive=True)
    for _ in range(70):
        guard.wait()
    assert guard.resume_at_c == 17  # 20 - 3


def test_manual_keeps_its_thresholds() -> None:
    # nsight-python's test_fixed_mode_no_adaptation: few runs, no adaptation
    guard = _guard(
        _sequence([(1, 35), (3, 20), (6, 10)], 35), wait_at_c=15, resume_at_c=30
    )
    for _ in range(15):
        guard.wait()
    assert guard.resume_at_c == 30


def test_manual_timeout_raises_nsight_pythons_error() -> None:
    guard = _guard(lambda: 2.0, timeout_s=3.0)
    with pytest.raises(CoolingTimeoutError, match=r"^Timeout after 3s\. Cannot reach "):
        guard.wait()


def test_auto_timeout_lowers_the_resume_threshold_then_raises_at_its_floor() -> None:
    clock = FakeClock()
    guard = ThermalGuard(
        lambda: 11.0 if clock.now < 7.0 else 13.0,
        sleep=clock.sleep,
        clock=lambda: clock.now,
        timeout_s=3.0,
        wait_at_c=11.0,
        adaptive=True,
    )
    # 20 -> 17 at 3 s -> 14 at 6 s; at 7 s the GPU has 13 deg C... still < 14 until
    # 9 s, where the threshold drops to 12 and 13 >= 12 resumes the profile.
    assert guard.wait() == pytest.approx(9.0)
    assert guard.resume_at_c == 12
    stuck = _guard(lambda: 5.0, timeout_s=1.0, adaptive=True)
    with pytest.raises(CoolingTimeoutError, match="reached minimum thermal_cont=12"):
        stuck.wait()
    assert stuck.resume_at_c == 12


NOT_SUPPORTED = "Not Supported"


class _FakeNvml:
    """NVML's clock controls as a driver answers them, refusing the ``refuse`` ids."""

    NVML_CLOCK_LIMIT_ID_TDP = 0xFFFFFF01
    NVML_CLOCK_GRAPHICS = 0
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0

    class NVMLError(Exception):
        pass

    def __init__(self, refuse: set[int]) -> None:
        self.refuse = refuse
        self.locked: list[tuple[int, int]] = []
        self.resets = 0
        self.sm = 345  # idle

    def nvmlDeviceSetGpuLockedClocks(self, _handle: int, low: int, high: int) -> None:  # noqa: N802
        if low in self.refuse:
            raise self.NVMLError(NOT_SUPPORTED)
        self.locked.append((low, high))

    def nvmlDeviceResetGpuLockedClocks(self, _handle: int) -> None:  # noqa: N802
        self.resets += 1

    def nvmlDeviceGetDefaultApplicationsClock(self, _handle: int, _kind: int) -> int:  # noqa: N802
        return 1980

    def nvmlDeviceGetClockInfo(self, _handle: int, kind: int) -> int:  # noqa: N802
        return self.sm if kind == self.NVML_CLOCK_SM else 2619

    def __getattr__(self, _name: str) -> object:
        """Every other read: not supported, as on a GPU without it."""

        def unsupported(*_: object) -> None:
            raise self.NVMLError(NOT_SUPPORTED)

        return unsupported


def test_base_clock_is_the_tdp_clock_as_ncu_locks_it() -> None:
    from nsight_lab.gpu.telemetry import GpuMonitor

    nvml = _FakeNvml(refuse=set())
    monitor = GpuMonitor(nvml=nvml, handle=0, name="H200", max_sm_clock_mhz=1980.0)
    done, said = monitor.lock_base_clock()
    assert done, said
    assert nvml.locked == [(nvml.NVML_CLOCK_LIMIT_ID_TDP,) * 2]
    assert "ncu --clock-control base" in said
    # The throttle ceiling is the highest clock read under the lock, not the 1980 MHz
    # maximum: 1,500 MHz at base is not throttled, 1,000 MHz then is.
    nvml.sm = 1500
    assert not monitor.read().throttled
    nvml.sm = 1000
    assert monitor.read().throttled
    monitor.reset_clocks()
    assert nvml.resets == 1
    assert monitor.locked_sm_clock_mhz is None
    monitor.reset_clocks()  # nothing locked any more: no second reset
    assert nvml.resets == 1


def test_base_clock_falls_back_to_the_default_applications_clock_and_says_so() -> None:
    from nsight_lab.gpu.telemetry import GpuMonitor

    nvml = _FakeNvml(refuse={_FakeNvml.NVML_CLOCK_LIMIT_ID_TDP})
    monitor = GpuMonitor(nvml=nvml, handle=0, name="H200", max_sm_clock_mhz=1980.0)
    done, said = monitor.lock_base_clock()
    assert done
    assert nvml.locked == [(1980, 1980)]
    assert "default applications clock" in said
    assert "Not Supported" in said
    assert monitor.locked_sm_clock_mhz == 1980.0
