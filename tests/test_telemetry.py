from __future__ import annotations

from nsight_lab.gpu.telemetry import ThermalGuard, decode_reasons, is_throttled


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


def test_thermal_guard_gives_up_after_timeout() -> None:
    clock = FakeClock()
    guard = ThermalGuard(
        lambda: 2.0, sleep=clock.sleep, clock=lambda: clock.now, timeout_s=3.0
    )
    assert guard.wait() == 3.0


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
