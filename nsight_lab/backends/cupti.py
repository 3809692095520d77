"""The ``cupti`` backend: per-kernel GPU durations and names from CUPTI activity.

Each region pushes a CUPTI *external correlation id* (kind CUSTOM2; Kineto uses CUSTOM0
and CUSTOM1) while it runs, so every CUDA API call the opening thread makes inside it,
and the kernels those calls launch, carry the region's id; launches of other threads
(autograd's engine threads run ``backward()``) are given the region open in the process
when they were made (:mod:`nsight_lab.backends.causes`). After a run, the activity
buffers are flushed and kernels (memcpys and memsets too) are grouped into regions;
``--combine`` folds several kernels of a region
(``sum`` of kernel durations, the ``max``, or the ``first`` launched). Unlike the events
backend this excludes launch gaps between kernels, which is how Nsight Compute's
``gpu__time_duration.sum`` sees a region too.

On drivers older than r610 CUPTI allows one activity subscriber per process, so only
one cupti profile runs at a time in a kernel (:data:`~.activity.SUBSCRIBED`; each
measurement owns its :class:`~.activity.ActivityBuffer`) and activity kinds are
disabled again when it ends (``torch.profiler`` works afterwards). The events backend
uses no CUPTI at all.
"""

from __future__ import annotations

__all__ = [
    "IDS_PER_RUN",
    "ActivityBuffer",
    "CuptiBackend",
    "CuptiMeasurement",
    "KernelActivity",
    "PendingRun",
    "attribute",
    "combine_kernels",
    "kernels_by_external_id",
]

import dataclasses
import importlib.util
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nsight_lab.backends.activity import (
    INSTALL_HINT,
    ActivityBuffer,
    KernelActivity,
    external_kind,
)
from nsight_lab.backends.causes import Causes, RegionTimeline, attribute_causes
from nsight_lab.backends.clock import CuptiClock
from nsight_lab.backends.gpu import GpuContext, refuse_beside_profiler, require_cuda
from nsight_lab.backends.inprocess import InProcessCollector
from nsight_lab.backends.shape import region_shapes
from nsight_lab.contract.collector import Availability, RunKey, RunTiming
from nsight_lab.contract.records import Telemetry
from nsight_lab.errors import BackendUnavailableError
from nsight_lab.kernels import KernelFold

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from nsight_lab.options import CombineMode, ProfileOptions

IDS_PER_RUN = 1024
"""External id = run sequence * IDS_PER_RUN + slot; slot 0 is the run, 1.. regions."""
FLUSH_INTERVAL_S = 0.05
MAX_PENDING_RUNS = 64


@dataclass
class PendingRun:
    """A run whose kernels have not been read yet."""

    key: RunKey
    seq: int
    regions: list[str] = field(default_factory=list)
    telemetry: Telemetry = field(default_factory=Telemetry)
    thermal_wait_s: float = 0.0
    host_ns: dict[str, int] = field(default_factory=dict)
    """Region -> its open time on the host (CUPTI's clock)."""


def combine_kernels(
    kernels: Sequence[KernelActivity], how: CombineMode | KernelFold
) -> float:
    """Fold the kernels of one region into one duration (ns).

    ``--ignore-kernels`` are left out; ``--replay-mode range`` takes the span from the
    first kernel's start to the last one's end (see :mod:`nsight_lab.kernels`).
    """
    fold = how if isinstance(how, KernelFold) else KernelFold(combine=how)
    ordered = [
        k for k in sorted(kernels, key=lambda k: k.start_ns) if fold.keep(k.name)
    ]
    if fold.replay_mode == "range" and ordered:
        return float(max(k.end_ns for k in ordered) - ordered[0].start_ns)
    return fold.fold([k.duration_ns for k in ordered])


def kernels_by_external_id(
    kernels: Sequence[KernelActivity], external_ids: dict[int, int]
) -> dict[int, list[KernelActivity]]:
    """External correlation id -> the kernels launched under it (untagged left out)."""
    by_id: dict[int, list[KernelActivity]] = defaultdict(list)
    for kernel in kernels:
        ext = external_ids.get(kernel.correlation_id)
        if ext is not None:
            by_id[ext].append(kernel)
    return by_id


def attribute(
    kernels: Sequence[KernelActivity],
    external_ids: dict[int, int],
    runs: Sequence[PendingRun],
    how: CombineMode | KernelFold,
    causes: Causes | None = None,
) -> list[RunTiming]:
    """Group kernels into the regions of ``runs`` by external correlation id.

    Kernels with no id (the L2 flush, work outside any profiled run) are ignored.
    A run with no regions is the whole cell: every kernel launched during it.
    With ``causes`` (what the ids were resolved from), each region's shape
    (:mod:`nsight_lab.contract.shape`) comes with its timing.
    """
    by_id = kernels_by_external_id(kernels, external_ids)
    keep = how.keep if isinstance(how, KernelFold) else lambda _: True
    timings = []
    for run in runs:
        base = run.seq * IDS_PER_RUN
        regions = {
            name: by_id.get(base + slot, [])
            for slot, name in enumerate(run.regions, start=1)
        }
        everything = [
            k
            for slot in range(len(run.regions) + 1)
            for k in by_id.get(base + slot, [])
        ]
        timings.append(
            RunTiming(
                key=run.key,
                regions={
                    name: combine_kernels(ks, how) for name, ks in regions.items()
                },
                whole_ns=combine_kernels(everything, how),
                kernels={
                    name: tuple(
                        k.name
                        for k in sorted(ks, key=lambda k: k.start_ns)
                        if keep(k.name)
                    )
                    for name, ks in regions.items()
                },
                telemetry=run.telemetry,
                thermal_wait_s=run.thermal_wait_s,
                shape=(region_shapes(regions, run.host_ns, causes) if causes else {}),
            )
        )
    return timings


class CuptiBackend(InProcessCollector):
    """Per-kernel timing of regions through CUPTI's activity API."""

    id = "cupti"

    def probe(self) -> Availability:
        """Available when cupti-python is installed and PyTorch sees a CUDA device."""
        if importlib.util.find_spec("cupti") is None:
            return Availability(
                ok=False, reason="cupti-python is not installed", hint=INSTALL_HINT
            )
        try:
            require_cuda(self.id)
        except BackendUnavailableError as exc:
            return Availability(ok=False, reason=str(exc).split(": ", 1)[-1])
        return Availability(ok=True, reason="CUPTI activity records, per kernel")

    def open(self, options: ProfileOptions) -> CuptiMeasurement:
        """Start a profile on the current CUDA device.

        Raises:
            BackendUnavailableError: No CUDA device, no cupti-python, or CUPTI busy.
        """
        return CuptiMeasurement(options)


class CuptiMeasurement:
    """One profile timed from CUPTI kernel activity.

    Subclasses (the ``pm`` backend) add work around each measured span through the
    ``_before_run``, ``_before_region``, ``_after_region`` and ``_after_run`` hooks
    and add to each run's timing in ``_timings``, on the same activity records.
    """

    flush_interval_s: float = FLUSH_INTERVAL_S
    """Read CUPTI's buffers at most this often (unless waited for)."""

    def __init__(self, options: ProfileOptions) -> None:
        """Start CUPTI activity collection and open the GPU context."""
        self._torch = require_cuda("cupti")
        refuse_beside_profiler(self._torch, "cupti")
        self._activity = ActivityBuffer()
        self._cupti = self._activity.load()
        self._combine = KernelFold.of(options)
        self._activity.start()
        try:
            self._gpu = GpuContext(self._torch, options)
        except BaseException:
            self._activity.stop()
            raise
        self.notes: list[str] = self._gpu.notes
        self.device_name: str | None = self._gpu.name
        self._kind = external_kind(self._cupti)
        self._timeline = RegionTimeline()
        self._clock = CuptiClock(self._cupti.get_timestamp)
        self._opened_ns = 0
        self._seq = 0
        self._depth = 0
        self._current: PendingRun | None = None
        self._pending: list[PendingRun] = []
        self._last_flush = time.monotonic()

    def _push(self, ext: int) -> None:
        self._cupti.activity_push_external_correlation_id(self._kind, ext)
        self._depth += 1

    def _pop(self) -> None:
        self._cupti.activity_pop_external_correlation_id(self._kind)
        self._depth -= 1

    def thermal_wait(self, on_wait: Callable[[float, float], None] | None) -> float:
        """Wait for thermal headroom (``--thermal auto``)."""
        return self._gpu.thermal_wait(on_wait)

    def _before_run(self) -> None:
        """Launch what precedes a run, untagged: the L2 flush."""
        self._gpu.flush_l2()

    def _before_region(self) -> None:
        """Launch what precedes a region (tagged with the run's id): the L2 flush."""
        self._gpu.flush_l2()

    def _after_region(self) -> None:
        """Launch what follows a region (tagged with the run's id): nothing here."""

    def _after_run(self, run: PendingRun) -> None:
        """Launch what follows a run, untagged: nothing here."""

    def begin_run(self, key: RunKey) -> None:
        """Flush the L2 (untagged), then tag the run's own launches."""
        self._seq += 1
        self._before_run()
        self._current = PendingRun(key=key, seq=self._seq)
        self._push(self._seq * IDS_PER_RUN)
        self._timeline.mark(self._now(), self._seq * IDS_PER_RUN)

    def _now(self) -> int:
        """CUPTI's clock: the timebase of its API records."""
        return int(self._cupti.get_timestamp())

    def enter_region(self, name: str) -> None:
        """Flush the L2 and tag the region's launches with its own id."""
        run = self._current
        if run is None:  # pragma: no cover - runner contract
            return
        self._before_region()
        run.regions.append(name)
        self._push(run.seq * IDS_PER_RUN + len(run.regions))
        self._opened_ns = self._now()
        self._timeline.mark(self._opened_ns, run.seq * IDS_PER_RUN + len(run.regions))

    def exit_region(self, name: str) -> None:
        """Stop tagging launches with the region's id."""
        closed = self._now()
        run = self._current
        if run is not None:
            run.host_ns[name] = closed - self._opened_ns
            self._timeline.mark(closed, run.seq * IDS_PER_RUN)
        self._pop()
        self._after_region()

    def end_run(self, thermal_wait_s: float) -> None:
        """Close the run; its kernels are read at the next collection."""
        run = self._current
        if run is None:  # pragma: no cover - runner contract
            return
        self._timeline.mark(self._now(), None)
        self._pop()
        self._after_run(run)
        run.telemetry = self._gpu.telemetry()
        run.thermal_wait_s = thermal_wait_s
        self._pending.append(run)
        self._current = None

    def abandon_run(self) -> None:
        """Unwind the id stack of a run whose cell raised."""
        while self._depth > 0:
            self._pop()
        if self._current is not None:
            self._timeline.mark(self._now(), None)
        self._current = None

    def completed(self, *, wait: bool) -> list[RunTiming]:
        """Flush CUPTI (at most every 50 ms unless ``wait``) and attribute kernels."""
        if not self._pending:
            return []
        due = time.monotonic() - self._last_flush >= self.flush_interval_s
        if not (wait or due or len(self._pending) >= MAX_PENDING_RUNS):
            return []
        self._synchronize()
        kernels, stamped, launches = self._activity.drain()
        self._last_flush = time.monotonic()
        runs, self._pending = self._pending, []
        kernels = self._in_ns(kernels, runs)
        causes = attribute_causes(kernels, stamped, launches, self._timeline)
        if self._current is None:  # between runs: no later launch needs older marks
            self._timeline.forget_before(self._now())
        return self._timings(causes, runs)

    def _synchronize(self) -> None:
        """Wait for the GPU to finish what was launched (pm decodes meanwhile)."""
        self._torch.cuda.synchronize()

    def _in_ns(
        self, kernels: list[KernelActivity], runs: list[PendingRun]
    ) -> list[KernelActivity]:
        """The records and the runs' host spans in ns, whoever set CUPTI's clock.

        The region timeline and the API calls stay in CUPTI's ticks: they are only
        compared with each other.
        """
        clock = self._clock
        clock.update()
        if clock.native:
            return kernels
        note = (
            "CUPTI's clock runs in another client's ticks (torch.profiler's, "
            f"{clock.rate:.3f} per ns): nsight-lab converts its timestamps to ns"
        )
        if note.split(" (", maxsplit=1)[0] not in " ".join(self.notes):
            self.notes.append(note)
        for run in runs:
            run.host_ns = {k: clock.duration_ns(v) for k, v in run.host_ns.items()}
        return [
            dataclasses.replace(
                k, start_ns=clock.ns(k.start_ns), end_ns=clock.ns(k.end_ns)
            )
            for k in kernels
        ]

    def _timings(self, causes: Causes, runs: list[PendingRun]) -> list[RunTiming]:
        """The timings of ``runs`` from the activity read since the last collection.

        Called with the GPU idle (synchronized), every kernel of ``runs`` read.
        """
        return attribute(
            causes.kernels, causes.external_ids, runs, self._combine, causes
        )

    def close(self) -> None:
        """Stop CUPTI collection and release the GPU context (clocks reset)."""
        try:
            self.abandon_run()
        finally:
            self._activity.stop()
            self._gpu.close()
