"""How one rank stamps its regions on a clock every rank of the host shares.

* :class:`HostClock` (the ``cpu`` backend): ``time.perf_counter_ns`` around each
  region. On Linux it reads ``CLOCK_MONOTONIC``, one clock for every process of the
  host, so the ranks' stamps compare directly.
* :class:`DeviceClock` (the ``events`` backend): CUDA events on the rank's own
  device, with what every GPU backend needs around them
  (:class:`~nsight_lab.backends.gpu.GpuContext`: the L2 flush of
  ``--cache-control all``, ``--clock-control base``, NVML telemetry of *this* GPU,
  the thermal wait). Each run starts, right after the ranks' barrier, with the
  device synchronised and a reference event recorded at a host time ``t0``; a
  region's GPU times are ``t0`` plus their event time after the reference, which
  puts every device's events on the host's common clock (to within the launch of
  the reference on an idle device, a few µs). A short spin kernel after the
  reference, sized to the host's time per run as the events backend sizes it,
  lets the host enqueue the run before the device reaches it, so the host's launch
  latency is not counted in the first region.

A clock is the :class:`~nsight_lab.regions.RegionTracker`'s target (it gets the
region boundaries once the rules are checked); :meth:`end_run` waits for the device
and returns the run's :class:`~nsight_lab.distributed.assemble.RankRun`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from nsight_lab.backends.cpu import cpu_name
from nsight_lab.backends.events import LEAD_MAX_US, LEAD_MIN_US
from nsight_lab.backends.gpu import GpuContext, require_cuda
from nsight_lab.contract.registry import times_the_host
from nsight_lab.distributed.assemble import RankRun
from nsight_lab.distributed.metrics import HOST_DEVICE
from nsight_lab.regions import CELL_REGION

if TYPE_CHECKING:
    from nsight_lab.contract.records import Telemetry
    from nsight_lab.options import ProfileOptions


class RankClock(Protocol):
    """Stamps one rank's regions, run by run."""

    device: int
    device_name: str | None
    notes: list[str]

    def thermal_wait(self) -> float:
        """Wait for thermal headroom before a run; return seconds waited."""

    def begin_run(self) -> None:
        """A run starts now (the ranks just left their barrier)."""

    def enter_region(self, name: str) -> None:
        """Region ``name`` opens."""

    def exit_region(self, name: str) -> None:
        """Region ``name`` closes."""

    def end_run(self, rank: int, failed: tuple[str, ...]) -> RankRun:
        """The cell body finished: the run's stamps, once the device has them."""

    def open_region(self) -> str | None:
        """The region open now, if any (the traffic counter asks)."""

    def close(self) -> None:
        """Release what the clock opened (clock locks), even after errors."""


class HostClock:
    """``perf_counter_ns`` around each region: the host's common monotonic clock."""

    def __init__(self, options: ProfileOptions) -> None:
        """Prepare; ``options`` only feed the notes."""
        self.device = HOST_DEVICE
        self.device_name: str | None = cpu_name()
        self.notes: list[str] = []
        for given, option in (
            (options.cache_control == "all", "--cache-control"),
            (options.clock_control == "base", "--clock-control"),
        ):
            if given:
                self.notes.append(f"cpu backend: {option} has no effect on host timing")
        self._t0 = 0
        self._open: dict[str, int] = {}
        self._regions: dict[str, tuple[int, int]] = {}
        self._current: str | None = None

    def thermal_wait(self) -> float:
        """No thermal control on the host."""
        return 0.0

    def begin_run(self) -> None:
        """Stamp the run's start."""
        self._regions = {}
        self._open = {}
        self._t0 = time.perf_counter_ns()

    def enter_region(self, name: str) -> None:
        """Stamp the region's start."""
        self._current = name
        self._open[name] = time.perf_counter_ns()

    def exit_region(self, name: str) -> None:
        """Stamp the region's end."""
        self._regions[name] = (self._open.pop(name), time.perf_counter_ns())
        self._current = None

    def end_run(self, rank: int, failed: tuple[str, ...]) -> RankRun:
        """The run's stamps (the whole cell as region ``cell`` when it marked none)."""
        regions = self._regions or {CELL_REGION: (self._t0, time.perf_counter_ns())}
        return RankRun(rank=rank, device=self.device, regions=regions, failed=failed)

    def open_region(self) -> str | None:
        """The region open now."""
        return self._current

    def close(self) -> None:
        """Nothing to release."""


class DeviceClock:
    """CUDA events on this rank's device, placed on the host clock (see module)."""

    def __init__(self, options: ProfileOptions) -> None:
        """Open the current device's context (flush buffer, NVML, clock control).

        Raises:
            BackendUnavailableError: PyTorch sees no CUDA device.
        """
        torch = require_cuda("events")
        self._torch = torch
        self._gpu = GpuContext(torch, options)
        self.device: int = int(self._gpu.device)
        self.device_name: str | None = self._gpu.name
        self.notes: list[str] = self._gpu.notes
        self._ref: Any = torch.cuda.Event(enable_timing=True)
        self._start: Any = None
        self._t0 = 0
        self._open: dict[str, Any] = {}
        self._regions: dict[str, tuple[Any, Any]] = {}
        self._current: str | None = None
        self._cycles_per_us = float(self._gpu.max_sm_clock_mhz or 2000.0)
        self._host_run_us = LEAD_MIN_US
        self._host_t0 = 0.0

    def thermal_wait(self) -> float:
        """Wait for thermal headroom on this GPU (``--thermal``)."""
        return self._gpu.thermal_wait(None)

    def _event(self) -> Any:  # noqa: ANN401  (a torch.cuda.Event)
        event = self._torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def begin_run(self) -> None:
        """Synchronise the device, stamp the host time and the reference event."""
        self._torch.cuda.synchronize(self.device)
        self._regions = {}
        self._open = {}
        self._t0 = time.perf_counter_ns()
        self._ref.record()
        lead_us = min(self._host_run_us + LEAD_MIN_US, LEAD_MAX_US)
        self._torch.cuda._sleep(int(lead_us * self._cycles_per_us))  # noqa: SLF001
        self._gpu.flush_l2()  # for a cell without regions (each region flushes too)
        self._start = self._event()
        self._host_t0 = time.perf_counter()

    def enter_region(self, name: str) -> None:
        """Flush the L2 (``--cache-control all``); record the region's start."""
        self._gpu.flush_l2()
        self._current = name
        self._open[name] = self._event()

    def exit_region(self, name: str) -> None:
        """Record the region's end."""
        self._regions[name] = (self._open.pop(name), self._event())
        self._current = None

    def end_run(self, rank: int, failed: tuple[str, ...]) -> RankRun:
        """Wait for the device; the regions' times on the host clock."""
        end = self._event()
        host_us = (time.perf_counter() - self._host_t0) * 1e6
        self._host_run_us = 0.8 * self._host_run_us + 0.2 * host_us
        telemetry: Telemetry = self._gpu.telemetry()
        end.synchronize()

        def at(event: Any) -> int:  # noqa: ANN401
            return self._t0 + round(float(self._ref.elapsed_time(event)) * 1e6)

        regions = {
            name: (at(start), at(stop)) for name, (start, stop) in self._regions.items()
        } or {CELL_REGION: (at(self._start), at(end))}
        return RankRun(
            rank=rank,
            device=self.device,
            regions=regions,
            failed=failed,
            telemetry=telemetry,
        )

    def open_region(self) -> str | None:
        """The region open now."""
        return self._current

    def close(self) -> None:
        """Reset locked clocks, free the flush buffer."""
        self._gpu.close()


def open_clock(backend: str, options: ProfileOptions) -> RankClock:
    """The clock of ``backend`` (``cpu`` or ``events``) for this rank.

    A backend that times the host (the registry's ``on_host``) gets the host clock,
    any other the CUDA-event one.

    Raises:
        BackendUnavailableError: ``events`` where PyTorch sees no CUDA device.
    """
    if times_the_host(backend):
        return HostClock(options)
    return DeviceClock(options)
