"""The ``pm`` backend: hardware counters per region from CUPTI PM sampling, in process.

It is the cupti backend (:mod:`nsight_lab.backends.cupti`) plus PM sampling: region
durations and kernel names come from the same CUPTI activity records, whose kernel
start and end times share the GPU global-timer timebase with the PM samples. At each
collection (the GPU synchronized, at most every :attr:`PmMeasurement.flush_interval_s`)
the sampler is drained and every sample is attributed to the regions whose kernels it
overlaps (:mod:`.attribution`); each run's records get the regions' counter totals in
``metrics`` (the names of ``--metrics``, as the ncu backend's records carry them, so
the roofline and the byte-traffic chart use them) and their timelines in ``series``.

**The DRAM-quiet gap.** Before each region (after its L2 flush) and after it, a spin
kernel (``torch.cuda._sleep``) runs for at least one sample interval. It moves no
data, and its launches carry their own external correlation id
(:data:`QUIET_EXTERNAL_ID`) so the attribution leaves it out of every weight: no
sample can then overlap both a region's kernels and its neighbours' (the flush reads
twice the L2, ~100 MB on an H200, just before the region), which is what makes the
per-region totals exact (see :mod:`.attribution` for the bound without it). The cost
is two intervals of GPU time per region and run (40 µs at the default 20 µs); the
region's own time does not include it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nsight_lab.backends.base import Availability
from nsight_lab.backends.cupti import (
    IDS_PER_RUN,
    CuptiMeasurement,
    KernelActivity,
    PendingRun,
    kernels_by_external_id,
)
from nsight_lab.backends.gpu import require_cuda
from nsight_lab.backends.inprocess import InProcessCollector
from nsight_lab.backends.pm import attribution, errors
from nsight_lab.backends.pm.availability import CHECKS, cannot_measure
from nsight_lab.backends.pm.counters import region_counters
from nsight_lab.backends.pm.sampler import (
    Chunk,
    PmSampler,
    cupti_version,
)
from nsight_lab.errors import BackendUnavailableError, OptionError
from nsight_lab.regions import CELL_REGION

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.backends.base import RunTiming
    from nsight_lab.options import ProfileOptions

logger = logging.getLogger(__name__)

QUIET_EXTERNAL_ID = 1
"""External correlation id of the quiet spin kernels: below ``IDS_PER_RUN``, so no
run's region ever claims it (run ids start at ``1 * IDS_PER_RUN``)."""
QUIET_MARGIN = 1.1
"""The spin lasts this multiple of the sample interval at the highest SM clock."""
FALLBACK_CLOCK_MHZ = 3000.0
"""SM clock assumed without NVML: above any GPU's, so the spin is never too short."""
FLUSH_INTERVAL_S = 0.1
"""Drain and attribute at most this often: live, a drain waits for the decoding
thread to reach the batch (14-48 ms on the H200); stopped, it decodes everything
sampled since the last one (at most 10,000 samples: 0.2 s at 20 µs)."""

Key = tuple[int, str]
"""A region of a batch: (run sequence number, region name)."""


class PmBackend(InProcessCollector):
    """Hardware counters per region through CUPTI PM sampling, in this process."""

    id = "pm"

    def probe(self) -> Availability:
        """Available with cupti-python >= 13.4, a CUDA GPU and counter permission.

        Cheap: whether PM sampling really starts, and which metrics it takes, is
        asked only when counters are (``Availability.cannot_measure``).
        """
        problem = errors.version_problem(cupti_version())
        if problem is not None:
            reason, _, hint = problem.partition("; ")
            return Availability(ok=False, reason=reason, hint=hint)
        try:
            require_cuda(self.id)
        except BackendUnavailableError as exc:
            return Availability(ok=False, reason=str(exc).split(": ", 1)[-1])
        from nsight_lab.gpu import stack

        permission = stack.counter_permission()
        if permission.ok is False:
            return Availability(
                ok=False,
                reason="GPU performance counters need permission (ERR_NVGPUCTRPERM)",
                hint=errors.PERMISSION,
            )
        return Availability(
            ok=True,
            reason="CUPTI PM sampling: counters and their timelines, in process",
            cannot_measure=cannot_measure,
        )

    def open(self, options: ProfileOptions) -> PmMeasurement:
        """Start CUPTI activity and PM sampling on the current CUDA device.

        Raises:
            BackendUnavailableError: No CUDA device, no cupti-python >= 13.4, or
                CUPTI refused (permission, nvperf libraries, driver, busy).
            OptionError: The metrics do not fit in one PM sampling pass.
        """
        problem = errors.version_problem(cupti_version())
        if problem is not None:
            raise errors.unavailable(problem)
        return PmMeasurement(options)


@dataclass
class RawBatch:
    """One collection's raw material, kept with ``keep_raw`` (fixtures, benchmarks).

    Attributes:
        metrics: The sampled metrics, in value-column order.
        samples: ``[start_ns, end_ns, *values]`` of every sample.
        regions: ``(run sequence, region name, [[start_ns, end_ns], ...])``.
        busy: Other kernels' ``[start_ns, end_ns]`` (flushes, untagged work).
        quiet: The quiet spin kernels' ``[start_ns, end_ns]``.
    """

    metrics: list[str]
    samples: list[list[float]] = field(default_factory=list)
    regions: list[tuple[int, str, list[list[int]]]] = field(default_factory=list)
    busy: list[list[int]] = field(default_factory=list)
    quiet: list[list[int]] = field(default_factory=list)


@dataclass
class Cost:
    """Where the pm backend's own host time goes (the benchmark reports it)."""

    drains: int = 0
    drain_s: float = 0.0
    """Stopping, decoding and restarting PM sampling."""
    attribute_s: float = 0.0
    """Weighing the samples and evaluating the ones regions need (CUPTI host API)."""
    samples_decoded: int = 0
    samples_evaluated: int = 0

    def add(self, chunks: Sequence[Chunk], drain_s: float, attribute_s: float) -> None:
        """Count one collection."""
        self.drains += 1
        self.drain_s += drain_s
        self.attribute_s += attribute_s
        self.samples_decoded += sum(len(c) for c in chunks)
        self.samples_evaluated += sum(c.evaluated for c in chunks)


class PmMeasurement(CuptiMeasurement):
    """One profile: CUPTI activity for the durations, PM sampling for the counters."""

    flush_interval_s = FLUSH_INTERVAL_S

    def __init__(self, options: ProfileOptions) -> None:
        """Open CUPTI activity and the GPU context, then enable PM sampling.

        Raises:
            BackendUnavailableError: CUPTI refused; everything opened is closed again.
            OptionError: ``--metrics`` do not fit in one PM sampling pass.
        """
        require_cuda("pm")  # say "pm" rather than "cupti" when there is no GPU
        super().__init__(options)
        try:
            self._open_sampler(options)
        except BaseException:
            super().close()
            raise
        self.keep_raw = False
        """Keep every collection's samples and kernel intervals in :attr:`raw`."""
        self.raw: list[RawBatch] = []
        self.quiet_gaps = True
        """False leaves the spins out: only to measure what the gaps buy."""
        self.cost = Cost()

    def _open_sampler(self, options: ProfileOptions) -> None:
        index = int(self._gpu.device)
        chosen, chip = self._choose_metrics(options, index)
        self.metrics = tuple(chosen)
        self.interval_ns = int(options.sample_interval_us) * 1000
        clock_mhz = float(self._gpu.max_sm_clock_mhz or FALLBACK_CLOCK_MHZ)
        self._quiet_cycles = math.ceil(
            self.interval_ns * clock_mhz / 1e3 * QUIET_MARGIN
        )
        self._sampler = PmSampler(index, self.metrics, self.interval_ns)
        self._cell_has_regions: bool | None = None
        self.notes.append(
            f"PM sampling every {options.sample_interval_us} µs on "
            f"{chip}: {', '.join(self.metrics)}; a DRAM-quiet "
            f"{options.sample_interval_us * QUIET_MARGIN:.3g} µs spin before and "
            "after each region (not part of its time)"
        )

    def _choose_metrics(
        self, options: ProfileOptions, index: int
    ) -> tuple[list[str], str]:
        """The metrics to sample (checked ahead where the host API answers) and chip.

        Raises:
            OptionError: ``--metrics`` that PM sampling refuses or that need several
                passes (one line, naming what fits together); or nothing to sample.
        """
        wanted = list(options.extra_metrics)
        given = "--metrics" in options.given
        try:
            check = CHECKS.check(self._torch, index)
            refused = check.why_not(tuple(wanted)) if given else None
            accepted = [] if given else [m for m in wanted if not check.why_not((m,))]
            first = check.groups(accepted)[0] if accepted else []
        except Exception as exc:  # noqa: BLE001  (CUPTI checks them when configuring)
            self.notes.append(
                f"PM sampling metrics not checked ahead ({type(exc).__name__}: "
                f"{exc}); CUPTI checks them when sampling is configured"
            )
            chosen, chip = wanted, "this GPU"
        else:
            if refused:
                raise OptionError(refused)
            chip = check.host.chip
            chosen = wanted if given else first
            left = [m for m in wanted if m not in chosen]
            if left:  # the defaults: what fits in one pass, the rest noted
                self.notes.append(
                    f"PM sampling on {chip} left out {', '.join(left)} (not in "
                    "one pass with the rest); ask for them with --metrics"
                )
        if not chosen:
            msg = "--metrics: no metric left to PM-sample; name some with --metrics"
            raise OptionError(msg)
        return chosen, chip

    # -- the quiet gap ---------------------------------------------------------------

    def _quiet(self) -> None:
        """Launch the DRAM-quiet spin, tagged so the attribution leaves it out."""
        if not self.quiet_gaps:
            return
        self._push(QUIET_EXTERNAL_ID)
        try:
            self._torch.cuda._sleep(self._quiet_cycles)  # noqa: SLF001
        finally:
            self._pop()

    def _before_run(self) -> None:
        """A cell without regions is one span: flush and go quiet before it."""
        if self._cell_has_regions is not True:
            self._gpu.flush_l2()
            self._quiet()

    def _before_region(self) -> None:
        """Flush the L2, then a quiet gap, before the region's own kernels."""
        self._gpu.flush_l2()
        self._quiet()

    def _after_region(self) -> None:
        """A quiet gap after the region's kernels."""
        self._quiet()

    def _after_run(self, run: PendingRun) -> None:
        """Close a region-less run's span with a quiet gap; learn the cell's shape."""
        if not run.regions:
            self._quiet()
        self._cell_has_regions = bool(run.regions)

    # -- counters --------------------------------------------------------------------

    def _timings(
        self,
        kernels: list[KernelActivity],
        external_ids: dict[int, int],
        runs: list[PendingRun],
    ) -> list[RunTiming]:
        """The cupti timings, each region given its counters and timeline."""
        timings = super()._timings(kernels, external_ids, runs)
        started = time.perf_counter()
        # Every sample up to the batch's last kernel end: live, the decoding thread
        # has to get there; the GPU is idle, so nothing later belongs to the batch.
        until = max((k.end_ns for k in kernels), default=0)
        chunks = self._sampler.drain(until_ns=until)
        drained = time.perf_counter()
        if self._sampler.note is not None and self._sampler.note not in self.notes:
            self.notes.append(self._sampler.note)
        layout, quiet = self._layout(kernels, external_ids, runs)
        totals = region_counters(chunks, layout, self.metrics)
        self.cost.add(chunks, drained - started, time.perf_counter() - drained)
        if self.keep_raw:
            self.raw.append(self._raw(chunks, layout, quiet))
        out = []
        for run, timing in zip(runs, timings, strict=True):
            values: dict[str, dict[str, float]] = {}
            packed: dict[str, bytes] = {}
            for name in run.regions or [CELL_REGION]:
                found = totals.get((run.seq, name))
                if found is None:
                    continue
                values[name] = found.values(self.metrics)
                blob = found.packed_series(self.metrics)
                if blob is not None:
                    packed[name] = blob
            out.append(dataclasses.replace(timing, counters=values, series=packed))
        return out

    def _layout(
        self,
        kernels: Sequence[KernelActivity],
        external_ids: dict[int, int],
        runs: Sequence[PendingRun],
    ) -> tuple[attribution.Layout[Key], list[attribution.Span]]:
        """Each region's kernel intervals, the other busy kernels, the quiet spins."""
        by_id = kernels_by_external_id(kernels, external_ids)
        # --ignore-kernels: an ignored kernel is no part of its region; what it moves
        # goes to outside, as any other kernel's.
        keep = getattr(self._combine, "keep", None) or (lambda _: True)
        regions: dict[Key, list[attribution.Span]] = {}
        claimed: set[int] = set()
        for run in runs:
            base = run.seq * IDS_PER_RUN
            slots = (
                enumerate(run.regions, start=1) if run.regions else [(0, CELL_REGION)]
            )
            for slot, name in slots:
                claimed.add(base + slot)
                regions[(run.seq, name)] = [
                    (k.start_ns, k.end_ns)
                    for k in by_id.get(base + slot, [])
                    if keep(k.name)
                ]
        busy = [
            (k.start_ns, k.end_ns)
            for k in kernels
            if (ext := external_ids.get(k.correlation_id)) != QUIET_EXTERNAL_ID
            and (ext not in claimed or not keep(k.name))
        ]
        quiet = [(k.start_ns, k.end_ns) for k in by_id.get(QUIET_EXTERNAL_ID, [])]
        return attribution.Layout(regions=regions, busy=busy), quiet

    def _raw(
        self,
        chunks: Sequence[Chunk],
        layout: attribution.Layout[Key],
        quiet: list[attribution.Span],
    ) -> RawBatch:
        batch = RawBatch(metrics=list(self.metrics))
        for chunk in chunks:
            values = chunk.all_values()
            batch.samples += [
                [int(a), int(b), *map(float, row)]
                for a, b, row in zip(chunk.starts, chunk.ends, values, strict=True)
            ]
        batch.regions = [
            (seq, name, [[int(a), int(b)] for a, b in spans])
            for (seq, name), spans in layout.regions.items()
        ]
        batch.busy = [[int(a), int(b)] for a, b in layout.busy]
        batch.quiet = [[int(a), int(b)] for a, b in quiet]
        return batch

    def close(self) -> None:
        """Stop PM sampling, then CUPTI activity and the GPU context."""
        sampler = getattr(self, "_sampler", None)
        try:
            if sampler is not None:
                with contextlib.suppress(Exception):
                    sampler.close()
        finally:
            super().close()
