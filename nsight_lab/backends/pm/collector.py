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
is GPU time per region and run; the region's own time does not include it.

**The write-back window.** A region's writes reach DRAM when L2 evicts the lines it
dirtied, often after its last kernel (a reduction's partial sums, a bmm's 12.6 MB output
that fits the L2), and then belong to no kernel: left there, they were written back
during whatever came next. So after each region, past a quiet gap, the collector sweeps
the L2 with a read (the same flush that precedes a region) tagged with the region's
*write-back* id, then another quiet gap: the DRAM writes of the samples overlapping that
sweep are the region's dirty lines (the sweep itself only reads). They are kept beside
the region's writes as ``dram__bytes_write.sum.writeback``: the write metric itself
stays what Nsight Compute counts (the writes while the kernels ran; on the H200 ncu's
per-kernel count does not include the dirty tail: x * 2 over 256 MiB wrote 241 MB under
ncu), and the write-back says how much that leaves out. The sweep's reads, and every
other counter in it, go to outside (:mod:`.counters`).

**Bounded by design**: :mod:`.interval`.
"""

from __future__ import annotations

import bisect
import dataclasses
import logging
import time
from typing import TYPE_CHECKING, Any

from nsight_lab.backends.cupti import (
    IDS_PER_RUN,
    CuptiMeasurement,
    KernelActivity,
    PendingRun,
)
from nsight_lab.backends.gpu import require_cuda
from nsight_lab.backends.pm.batch import (
    FLUSH_EXTERNAL_ID,
    QUIET_EXTERNAL_ID,
    WRITEBACK_SLOT,
    Cost,
    RawBatch,
    entry_layout,
    kernel_layout,
    raw_batch,
)
from nsight_lab.backends.pm.counters import region_counters
from nsight_lab.backends.pm.decoding import Decoding
from nsight_lab.backends.pm.interval import SamplingInterval
from nsight_lab.backends.pm.keep import Keeper
from nsight_lab.contract.probe import MetricVerdict
from nsight_lab.errors import PlanError
from nsight_lab.regions import CELL_REGION

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.backends.causes import Causes
    from nsight_lab.contract.collector import RunKey, RunTiming
    from nsight_lab.options import ProfileOptions

logger = logging.getLogger(__name__)

FALLBACK_CLOCK_MHZ = 3000.0
"""SM clock assumed without NVML: above any GPU's, so the spin is never too short."""
FLUSH_INTERVAL_S = 0.25
"""Drain and attribute at least this often while runs go on (the live views' pace);
sooner when the backlog asks (:func:`.pacing.must_collect`)."""


class PmMeasurement(SamplingInterval, Decoding, CuptiMeasurement):
    """One profile: CUPTI activity for the durations, PM sampling for the counters."""

    flush_interval_s = FLUSH_INTERVAL_S

    def __init__(
        self, options: ProfileOptions, verdict: MetricVerdict | None = None
    ) -> None:
        """Open CUPTI activity and the GPU context, then enable PM sampling.

        ``verdict`` is the probe's on the metrics (the plan's): what to sample.
        Without one (a measurement opened outside a profile) the metrics are
        sampled as asked and CUPTI checks them when it configures sampling.

        Raises:
            BackendUnavailableError: CUPTI refused; everything opened is closed again.
            PlanError: ``--metrics`` do not fit in one PM sampling pass.
        """
        require_cuda("pm")  # say "pm" rather than "cupti" when there is no GPU
        super().__init__(options)
        self._setup()
        try:
            self._open_sampler(options, verdict)
        except BaseException:
            super().close()
            raise

    def _setup(self) -> None:
        """The state of a measurement before its sampler opens (the tests' too)."""
        self.keep_raw = False
        """Keep every collection's samples and kernel intervals in :attr:`raw`."""
        self.raw: list[RawBatch] = []
        self.quiet_gaps = True
        """False leaves the spins out: only to measure what the gaps buy."""
        self.cost = Cost()
        self._cell_has_regions: bool | None = None
        self._run_s: dict[int, float] = {}
        """Config index -> the longest wall time a run of it was sampled for."""
        self._regions_per_run = 1
        self._sizing: RunKey | None = None
        """The first run of a config, collected alone to measure a run."""
        self._done_events: list[Any] = []
        """A CUDA event recorded after each pending run (is the GPU past it?)."""
        self._tune = False
        self._floor_ns = 0
        self._clean_entry: set[int] = set()
        """Region slots entered right after the previous write-back window, with no
        kernel of the cell's between: they need no flush and spin of their own."""
        self._learned_entries = False
        self.per_sample_s = 0.0
        """Host time to decode and evaluate one sample (measured at open)."""
        self.lost_runs = 0
        """Timed runs whose counters were dropped (a run far longer than its
        warm-up): said in the notes."""
        self._decoding_state()

    sizes_on_warmup = True
    """The runner gives every config one measured warm-up run (see :attr:`_sizing`)."""

    def _open_sampler(
        self, options: ProfileOptions, verdict: MetricVerdict | None = None
    ) -> None:
        index = int(self._gpu.device)
        keeper = getattr(verdict, "keeper", None)
        chosen, chip = self._choose_metrics(options, verdict)
        self.metrics = tuple(chosen)
        self._chip = chip
        self._floor_ns = int(options.sample_interval_us) * 1000
        self._tune = "--sample-interval" not in options.given
        self._max_clock_mhz = float(self._gpu.max_sm_clock_mhz or FALLBACK_CLOCK_MHZ)
        self._open_decoding(index, chip, keeper if isinstance(keeper, Keeper) else None)
        self._use_interval(self._sampler.interval_ns)
        try:
            self.per_sample_s = self._decode_cost()
        except BaseException:
            self._close_decoding()
            raise

    def _choose_metrics(
        self, options: ProfileOptions, verdict: MetricVerdict | None
    ) -> tuple[list[str], str]:
        """The metrics to sample (as the probe's verdict chose them) and the chip.

        Raises:
            PlanError: ``--metrics`` the verdict refuses (one line, naming what
                fits together); or nothing to sample.
        """
        wanted = tuple(options.extra_metrics)
        if verdict is None or verdict.asked != wanted:
            why = "no probe" if verdict is None else "the probe checked others"
            verdict = MetricVerdict(wanted, given=True, chosen=wanted, unchecked=why)
        if verdict.refused:
            raise PlanError(verdict.refused)
        if verdict.unchecked is not None:
            self.notes.append(
                f"PM sampling metrics not checked ahead ({verdict.unchecked}); "
                "CUPTI checks them when sampling is configured"
            )
        elif verdict.left_out:  # the defaults: what fits in one pass, the rest noted
            self.notes.append(
                f"PM sampling on {verdict.where} left out "
                f"{', '.join(verdict.left_out)} (not in one pass with the rest); "
                "ask for them with --metrics"
            )
        if not verdict.chosen:
            msg = "--metrics: no metric left to PM-sample; name some with --metrics"
            raise PlanError(msg)
        return list(verdict.chosen), verdict.where

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

    def _writeback_sweep(self, slot: int) -> None:
        """The write-back window of a region (``slot``; 0 for a region-less run).

        A quiet gap, an L2 read sweep tagged as the region's write-back, a quiet gap
        (see the module doc).
        """
        run = self._current if self._current is not None else None
        seq = run.seq if run is not None else self._seq
        self._quiet()
        self._push(seq * IDS_PER_RUN + WRITEBACK_SLOT + slot)
        try:
            self._gpu.flush_l2()
        finally:
            self._pop()
        self._quiet()

    def _before_run(self) -> None:
        """A cell without regions is one span: flush and go quiet before it."""
        if self._cell_has_regions is not True:
            self._gpu.flush_l2()
            self._quiet()

    def _before_region(self) -> None:
        """Flush the L2, then a quiet gap, before the region's own kernels.

        Not where the cell launches nothing of its own before the region (learned
        from its first run): the write-back window before it left the L2 clean and
        ends with a quiet gap.
        """
        run = self._current
        slot = len(run.regions) + 1 if run is not None else 0
        if slot in self._clean_entry:
            return
        self._push(FLUSH_EXTERNAL_ID)
        try:
            self._gpu.flush_l2()
        finally:
            self._pop()
        self._quiet()

    def _after_region(self) -> None:
        """The region's write-back window."""
        run = self._current
        self._writeback_sweep(len(run.regions) if run is not None else 0)

    def begin_run(self, key: RunKey) -> None:
        """Note the first run of a config (collected alone), then begin as cupti."""
        if key.config_index not in self._run_s and self._sizing is None:
            self._sizing = key
        self._began_run(idle=not self._pending)
        super().begin_run(key)

    def _after_run(self, run: PendingRun) -> None:
        """Close a region-less run with its write-back window; learn the cell's shape.

        A CUDA event after the run tells later whether the GPU is past it.
        """
        if not run.regions:
            self._writeback_sweep(0)
        self._ended_run(run.seq)
        self._cell_has_regions = bool(run.regions)
        self._regions_per_run = max(1, len(run.regions))
        event = self._torch.cuda.Event()
        event.record()
        self._done_events.append(event)

    def completed(self, *, wait: bool) -> list[RunTiming]:
        """Collect when asked, when due, or before the backlog could pass half an image.

        The first run of a config is collected alone: it measures a run.
        """
        live = self._is_live()
        if live:  # decode what the GPU did since the last run boundary
            self._pump()
        if self._pending and not wait:
            # Live, the pumps keep the image's backlog to one run (no backpressure).
            wait = self._sizing is not None or (not live and self._backlog_full())
        timings = super().completed(wait=wait)
        if not self._pending:  # collected (synchronized): every run's event is done
            self._done_events = []
        return timings

    def _timings(self, causes: Causes, runs: list[PendingRun]) -> list[RunTiming]:
        """The cupti timings, each region given its counters and timeline."""
        timings = super()._timings(causes, runs)
        kernels, external_ids = causes.kernels, causes.external_ids
        started = time.perf_counter()
        sampled = self._sampled_for_runs(self._sampler.sampled_s())
        chunks = self._take_samples(kernels, runs)
        if chunks is None:  # dropped, said in the notes
            return timings
        drained = time.perf_counter()
        keep = getattr(self._combine, "keep", None) or (lambda _: True)
        layout, quiet = kernel_layout(kernels, external_ids, runs, keep)
        self._learn_entries(kernels, external_ids, runs)
        self._measure_shape(kernels, quiet, runs)
        if self._sizing is not None and self._is_live():  # as its pumps measured
            self.per_sample_s = self._decode_cost()
        totals = region_counters(chunks, layout, self.metrics)
        self.cost.add(chunks, drained - started, time.perf_counter() - drained)
        if self.keep_raw:
            self.raw.append(raw_batch(self.metrics, chunks, layout, quiet))
        self._learn(runs, sampled)
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

    def _learn_entries(
        self,
        kernels: Sequence[KernelActivity],
        external_ids: dict[int, int],
        runs: Sequence[PendingRun],
    ) -> None:
        """Which regions the cell enters with no kernel of its own before them.

        Learned from the first collection (the config's warm-up, entered with every
        flush); a region later found with the cell's kernels before it gets its flush
        and quiet gap back, said in the notes.
        """
        cell_starts, firsts = entry_layout(kernels, external_ids)
        for run in runs:
            if not run.regions:
                continue
            starts = sorted(cell_starts.get(run.seq, []))
            previous_end = 0
            for slot in range(1, len(run.regions) + 1):
                first = firsts.get((run.seq, slot))
                if first is None:
                    continue
                # A cell kernel starts in [previous_end, first): starts is sorted.
                at = bisect.bisect_left(starts, previous_end)
                between = at < len(starts) and starts[at] < first
                if not self._learned_entries and not between:
                    self._clean_entry.add(slot)
                elif between and slot in self._clean_entry:
                    self._clean_entry.discard(slot)
                    self.notes.append(
                        f"PM sampling: the cell launched kernels of its own before "
                        f"region {run.regions[slot - 1]!r} in a run where the "
                        "first had none; it gets an L2 flush and a quiet gap again "
                        "(that run's counters may include some of their traffic)"
                    )
                previous_end = first
        self._learned_entries = True

    def close(self) -> None:
        """Stop PM sampling, then CUPTI activity and the GPU context."""
        try:
            self._close_decoding()
        finally:
            super().close()
