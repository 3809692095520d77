"""The ``events`` backend: CUDA events around each region, on the current stream.

Timing is asynchronous: events are recorded as the cell enqueues work and read once the
GPU has passed them, so the host keeps the GPU fed the way a bare ``do_bench`` loop
does.
Finished runs are handed out as soon as their last event completes; at most
``MAX_IN_FLIGHT`` runs (or ``MAX_LAG_S`` seconds) may be pending, so results stream.

A start event recorded on an *idle* GPU is stamped at once, so the host's own launch
latency (Python, the op's dispatch, cuBLAS set-up) would be counted in the region. Each
region therefore starts behind a spin kernel (``torch.cuda._sleep``) as long as the
host took to enqueue that region last time, so its events and kernels queue up behind
it and execute back to back -- nvbench's "blocking kernel", with a timed spin in place
of a host flag. The lead is per region, not per run: a run-wide lead covers the first
regions only, and a region's reading then depended on where it stood in the cell. A
region reads the GPU's time with all its launches queued (a synchronized event span
behind such a spin: ``benchmarks/realwork.py``'s truth); where the host takes longer
than that (a launch-bound region), the enqueue shape metric says so.

``--cache-control all`` zeroes a buffer twice the L2 size before each measured region
(nvbench and do_bench do the same); ``--clock-control base`` locks the SM clock through
NVML and always resets it on close. Telemetry is read through NVML after each run is
enqueued, outside the timed regions.
"""

from __future__ import annotations

import collections
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nsight_lab.backends.gpu import GpuContext
from nsight_lab.backends.inprocess import InProcessCollector
from nsight_lab.contract import shape
from nsight_lab.contract.collector import Availability, RunKey, RunTiming
from nsight_lab.contract.records import Telemetry
from nsight_lab.errors import BackendUnavailableError

if TYPE_CHECKING:
    from collections.abc import Callable

    from nsight_lab.options import ProfileOptions

MAX_IN_FLIGHT = 16
MAX_LAG_S = 0.2
LEAD_MIN_US = 15.0
LEAD_MAX_US = 2000.0
REGION_LEAD_MAX_US = 50_000.0
"""A region whose launches take longer than this reads part of the host's time."""
LEAD_FACTOR = 1.0
"""The spin before a run or region covers this multiple of the host's enqueue time."""


class CudaEventsBackend(InProcessCollector):
    """CUDA-event timing of regions through PyTorch."""

    id = "events"

    def probe(self) -> Availability:
        """Available when PyTorch sees a CUDA device."""
        try:
            import torch  # noqa: PLC0415  (optional and heavy: PyTorch)
        except ImportError:
            return Availability(
                ok=False,
                reason="PyTorch is not installed",
                hint="install a CUDA build of PyTorch to time regions with CUDA events",
            )
        if not torch.cuda.is_available():
            return Availability(
                ok=False,
                reason="no CUDA GPU visible (torch.cuda.is_available() is False)",
                hint="run on a machine with an NVIDIA GPU and a CUDA build of PyTorch",
            )
        return Availability(ok=True, reason="CUDA events on the current stream")

    def open(self, options: ProfileOptions) -> EventsMeasurement:
        """Start a profile on the current CUDA device.

        Raises:
            BackendUnavailableError: No CUDA device is visible.
        """
        available = self.probe()
        if not available.ok:
            msg = (
                f"backend 'events' is unavailable: {available.reason}; {available.hint}"
            )
            raise BackendUnavailableError(msg)
        return EventsMeasurement(options)


@dataclass
class _PendingRun:
    key: RunKey
    start: Any = None
    end: Any = None
    regions: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    enqueue_ns: dict[str, float] = field(default_factory=dict)
    telemetry: Telemetry = field(default_factory=Telemetry)
    thermal_wait_s: float = 0.0
    enqueued_at: float = 0.0


class EventsMeasurement:
    """One profile timed with CUDA events."""

    def __init__(self, options: ProfileOptions) -> None:
        """Open the GPU context (flush buffer, NVML, clock control)."""
        import torch  # noqa: PLC0415  (optional and heavy: PyTorch)

        self._torch = torch
        self._gpu = GpuContext(torch, options)
        self.notes: list[str] = self._gpu.notes
        self.device_name: str | None = self._gpu.name
        self._device = self._gpu.device
        self._stream_id: int | None = None
        self._stream_obj: Any = None
        self._cycles_per_us = float(self._gpu.max_sm_clock_mhz or 2000.0)
        self._host_run_us = LEAD_MIN_US
        self._host_t0 = 0.0
        self._free_events: list[Any] = []
        self._pending: collections.deque[_PendingRun] = collections.deque()
        self._current: _PendingRun | None = None
        self._open: dict[str, tuple[Any, int]] = {}
        self._cell_has_regions: bool | None = None
        self._region_host_us: dict[str, float] = {}

    def _stream(self) -> Any:  # noqa: ANN401
        # torch.cuda.current_stream() costs ~20 us in Python; the raw id lookup ~1 us.
        stream_id = self._torch._C._cuda_getCurrentStream(self._device)[0]  # noqa: SLF001
        if stream_id != self._stream_id:
            self._stream_obj = self._torch.cuda.current_stream(self._device)
            self._stream_id = stream_id
        return self._stream_obj

    def _event(self) -> Any:  # noqa: ANN401
        pool = self._free_events
        event = pool.pop() if pool else self._torch.cuda.Event(enable_timing=True)
        event.record(self._stream())
        return event

    def _gpu_idle(self) -> bool:
        return not self._pending or bool(self._pending[-1].end.query())

    def thermal_wait(self, on_wait: Callable[[float, float], None] | None) -> float:
        """Wait for thermal headroom (``--thermal auto``)."""
        return self._gpu.thermal_wait(on_wait)

    def begin_run(self, key: RunKey) -> None:
        """Flush, give the host a head start, and stamp a whole-cell run's start."""
        self._host_t0 = time.perf_counter()
        # Flush once per measured span: before each region when the cell has regions,
        # else before the whole cell. Until the first run tells us, do both.
        whole_cell = self._cell_has_regions is not True
        if whole_cell:
            if self._gpu_idle():
                self._spin(self._host_run_us, LEAD_MAX_US)
            self._gpu.flush_l2()
        self._current = _PendingRun(
            key=key, start=self._event() if whole_cell else None
        )
        self._open = {}

    def _spin(self, host_us: float, most_us: float) -> None:
        lead_us = min(LEAD_FACTOR * host_us + LEAD_MIN_US, most_us)
        self._torch.cuda._sleep(int(lead_us * self._cycles_per_us))  # noqa: SLF001

    def enter_region(self, name: str) -> None:
        """Spin as long as the region's launches took, flush, record its start."""
        host_us = self._region_host_us.get(name, self._host_run_us)
        self._spin(host_us, REGION_LEAD_MAX_US)
        if self._cell_has_regions is not False:  # a whole-cell run flushed at its start
            self._gpu.flush_l2()
        self._open[name] = (self._event(), time.perf_counter_ns())

    def exit_region(self, name: str) -> None:
        """Record the region's end event and the host's time to enqueue it."""
        if self._current is not None:
            start, entered = self._open.pop(name)
            self._current.regions[name] = (start, self._event())
            enqueue_ns = float(time.perf_counter_ns() - entered)
            self._current.enqueue_ns[name] = enqueue_ns
            # The longest of the last and a decayed past: a region whose launches
            # vary is not cut short by one quick run.
            last = self._region_host_us.get(name, 0.0)
            self._region_host_us[name] = max(enqueue_ns / 1e3, 0.8 * last)

    def end_run(self, thermal_wait_s: float) -> None:
        """Record the run's end event and read telemetry while the GPU works."""
        run = self._current
        if run is None:  # pragma: no cover - runner contract
            return
        run.end = self._event()
        run.thermal_wait_s = thermal_wait_s
        run.enqueued_at = time.monotonic()
        run.telemetry = self._gpu.telemetry()
        host_us = (time.perf_counter() - self._host_t0) * 1e6
        self._host_run_us = 0.8 * self._host_run_us + 0.2 * host_us
        self._cell_has_regions = bool(run.regions)
        self._pending.append(run)
        self._current = None

    def abandon_run(self) -> None:
        """Forget the current run (its events may never complete)."""
        self._current = None
        self._open = {}

    def completed(self, *, wait: bool) -> list[RunTiming]:
        """Return runs whose events the GPU has passed, oldest first."""
        done: list[RunTiming] = []
        now = time.monotonic()
        while self._pending:
            run = self._pending[0]
            must_wait = (
                wait
                or len(self._pending) > MAX_IN_FLIGHT
                or now - run.enqueued_at > MAX_LAG_S
            )
            if not must_wait and not run.end.query():
                break
            run.end.synchronize()
            self._pending.popleft()
            done.append(self._timing(run))
            self._recycle(run)
        return done

    def _recycle(self, run: _PendingRun) -> None:
        events = [
            run.start,
            run.end,
            *(e for pair in run.regions.values() for e in pair),
        ]
        self._free_events.extend(e for e in events if e is not None)

    @staticmethod
    def _timing(run: _PendingRun) -> RunTiming:
        ms_to_ns = 1e6
        whole = (
            run.start.elapsed_time(run.end) * ms_to_ns
            if run.start is not None
            else math.nan
        )
        return RunTiming(
            key=run.key,
            regions={
                name: float(start.elapsed_time(end)) * ms_to_ns
                for name, (start, end) in run.regions.items()
            },
            whole_ns=float(whole),
            telemetry=run.telemetry,
            thermal_wait_s=run.thermal_wait_s,
            shape={name: {shape.ENQUEUE_NS: ns} for name, ns in run.enqueue_ns.items()},
        )

    def close(self) -> None:
        """Reset locked clocks and free the flush buffer."""
        self._pending.clear()
        self._free_events.clear()
        self._gpu.close()
