"""The ``cpu`` backend: wall-clock time around regions with ``time.perf_counter_ns``.

It needs no GPU and measures what the host sees: for GPU code that is launch time unless
the region synchronizes. It is what CI and laptops run, a real timer, not a mock.

Each run also carries how fast the host was (:mod:`nsight_lab.host_speed`), timed
between runs, outside the regions: the comparison flags sessions the host ran at
different speeds, as it flags a GPU's SM clocks.
"""

from __future__ import annotations

import platform
import time
from typing import TYPE_CHECKING

from nsight_lab.backends.inprocess import InProcessCollector
from nsight_lab.contract.collector import Availability, RunKey, RunTiming
from nsight_lab.host_speed import PROBE_METRIC, HostProbe
from nsight_lab.regions import CELL_REGION

if TYPE_CHECKING:
    from collections.abc import Callable

    from nsight_lab.options import ProfileOptions


def cpu_name() -> str:
    """Return the CPU's model name, else the machine type.

    The model name comes from /proc/cpuinfo on Linux.
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:  # noqa: PTH123
            for line in info:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


class CpuTimerBackend(InProcessCollector):
    """Host wall-clock timing of regions."""

    id = "cpu"

    def probe(self) -> Availability:
        """Always available."""
        return Availability(
            ok=True, reason="host timer (time.perf_counter_ns) always works"
        )

    def open(self, options: ProfileOptions) -> CpuMeasurement:
        """Start a profile."""
        return CpuMeasurement(options)


class CpuMeasurement:
    """One profile timed on the host."""

    def __init__(self, options: ProfileOptions) -> None:
        """Prepare the timer; ``options`` only feed the session notes."""
        self.device_name: str | None = cpu_name()
        self.notes: list[str] = []
        if options.cache_control == "all":
            self.notes.append(
                "cpu backend: --cache-control has no effect on host timing"
            )
        if options.clock_control == "base":
            self.notes.append(
                "cpu backend: --clock-control has no effect on host timing"
            )
        self._key: RunKey | None = None
        self._t0 = 0
        self._open: dict[str, int] = {}
        self._regions: dict[str, float] = {}
        self._done: list[RunTiming] = []
        self._host = HostProbe()
        self._host_ns = 0.0

    def thermal_wait(self, on_wait: Callable[[float, float], None] | None) -> float:  # noqa: ARG002
        """No thermal control on the host."""
        return 0.0

    def begin_run(self, key: RunKey) -> None:
        """Start timing run ``key``."""
        self._key = key
        self._regions = {}
        self._open = {}
        self._host_ns = self._host.latest()  # before the timer: never inside a run
        self._t0 = time.perf_counter_ns()

    def enter_region(self, name: str) -> None:
        """Stamp the region's start."""
        self._open[name] = time.perf_counter_ns()

    def exit_region(self, name: str) -> None:
        """Stamp the region's end."""
        self._regions[name] = float(time.perf_counter_ns() - self._open.pop(name))

    def end_run(self, thermal_wait_s: float) -> None:
        """Close the run; it is complete at once."""
        whole = float(time.perf_counter_ns() - self._t0)
        if self._key is None:  # pragma: no cover - runner contract
            return
        host = {PROBE_METRIC: self._host_ns}
        self._done.append(
            RunTiming(
                self._key,
                dict(self._regions),
                whole,
                thermal_wait_s=thermal_wait_s,
                counters=dict.fromkeys(self._regions or (CELL_REGION,), host),
            )
        )
        self._key = None

    def abandon_run(self) -> None:
        """Forget the current run."""
        self._key = None

    def completed(self, *, wait: bool) -> list[RunTiming]:  # noqa: ARG002
        """Return the runs finished since the last call."""
        done, self._done = self._done, []
        return done

    def close(self) -> None:
        """Nothing to release."""
