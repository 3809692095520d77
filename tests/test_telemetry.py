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
