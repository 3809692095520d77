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

**Bounded by design.** Samples are read at run boundaries (:mod:`.sampler`): a
collection comes before the samples pending by the end of the next run could pass
half an image, and the first run of each config (an untimed warm-up) is collected
alone to measure a run, from which the interval is chosen (:mod:`.pacing`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nsight_lab.backends.cupti import (
    IDS_PER_RUN,
    CuptiMeasurement,
    KernelActivity,
    PendingRun,
    kernels_by_external_id,
)
from nsight_lab.backends.gpu import require_cuda
from nsight_lab.backends.inprocess import InProcessCollector
from nsight_lab.backends.pm import attribution, errors, pacing
from nsight_lab.backends.pm.counters import region_counters
from nsight_lab.backends.pm.sampler import (
    Chunk,
    Overflowed,
    cupti_version,
    open_cupti_sampler,
)
from nsight_lab.contract.collector import Availability
from nsight_lab.contract.probe import MetricVerdict
from nsight_lab.errors import BackendUnavailableError, MeasurementError, OptionError
from nsight_lab.regions import CELL_REGION

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.contract.collector import RunKey, RunTiming
    from nsight_lab.options import ProfileOptions
    from nsight_lab.plan import Plan

logger = logging.getLogger(__name__)

QUIET_EXTERNAL_ID = 1
"""External correlation id of the quiet spin kernels: below ``IDS_PER_RUN``, so no
run's region ever claims it (run ids start at ``1 * IDS_PER_RUN``)."""
FLUSH_EXTERNAL_ID = 2
"""External correlation id of the L2 flush before a region (busy, like any kernel
outside the regions; tagged so the cell's own kernels between regions are told
apart from it)."""
QUIET_MARGIN = 1.1
"""The spin lasts this multiple of the sample interval at the highest SM clock."""
FALLBACK_CLOCK_MHZ = 3000.0
"""SM clock assumed without NVML: above any GPU's, so the spin is never too short."""
FLUSH_INTERVAL_S = 0.25
"""Drain and attribute at least this often while runs go on (the live views' pace);
sooner when the backlog asks (:func:`.pacing.must_collect`)."""
WRITEBACK_SLOT = IDS_PER_RUN // 2
"""A region's write-back sweep is tagged ``run id + WRITEBACK_SLOT + slot``."""
SPINS_PER_REGION = 2
"""Quiet spins per region once the cell is known to launch nothing between regions:
between the region and its write-back sweep, and after the sweep (which then stands
for the next region's flush). A region entered after kernels of the cell's own has a
flush and a third spin before it."""
CALIBRATE_S = (0.004, 0.02)
"""Idle sampling decoded at open, short then long: the decode's cost per sample is
the difference over the difference in samples (the fixed cost of a drain cancels)."""

Key = tuple[int, str]
"""A region of a batch: (run sequence number, region name)."""


class PmBackend(InProcessCollector):
    """Hardware counters per region through CUPTI PM sampling, in this process."""

    id = "pm"

    def probe(self) -> Availability:
        """Available with cupti-python >= 13.4, a CUDA GPU and counter permission.

        Cheap: whether PM sampling really starts, and which metrics it takes, is
        asked only when counters are, by the session's prober
        (:mod:`nsight_lab.backends.probe`), before the plan.
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
        )

    def open(self, options: ProfileOptions) -> PmMeasurement:
        """Start CUPTI activity and PM sampling on the current CUDA device.

        Raises:
            BackendUnavailableError: No CUDA device, no cupti-python >= 13.4, or
                CUPTI refused (permission, nvperf libraries, driver, busy).
            OptionError: The metrics do not fit in one PM sampling pass.
        """
        return self._opened(options, None)

    def measure(self, plan: Plan) -> PmMeasurement:
        """Open with the plan's options and the probe's verdict on its metrics.

        Raises:
            BackendUnavailableError: As :meth:`open`.
        """
        return self._opened(plan.options, plan.metric_verdict)

    def _opened(
        self, options: ProfileOptions, verdict: MetricVerdict | None
    ) -> PmMeasurement:
        problem = errors.version_problem(cupti_version())
        if problem is not None:
            raise errors.unavailable(problem)
        return PmMeasurement(options, verdict)


@dataclass
class RawBatch:
    """One collection's raw material, kept with ``keep_raw`` (fixtures, benchmarks).

    Attributes:
        metrics: The sampled metrics, in value-column order.
        samples: ``[start_ns, end_ns, *values]`` of every sample.
        regions: ``(run sequence, region name, [[start_ns, end_ns], ...])``.
        busy: Other kernels' ``[start_ns, end_ns]`` (flushes, untagged work).
        quiet: The quiet spin kernels' ``[start_ns, end_ns]``.
        writeback: ``(run sequence, region name, [[start_ns, end_ns], ...])`` of each
            region's write-back sweep.
    """

    metrics: list[str]
    samples: list[list[float]] = field(default_factory=list)
    regions: list[tuple[int, str, list[list[int]]]] = field(default_factory=list)
    busy: list[list[int]] = field(default_factory=list)
    quiet: list[list[int]] = field(default_factory=list)
    writeback: list[tuple[int, str, list[list[int]]]] = field(default_factory=list)


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


def _entry_layout(
    kernels: Sequence[KernelActivity], external_ids: dict[int, int]
) -> tuple[dict[int, list[int]], dict[tuple[int, int], int]]:
    """The cell's own kernels' starts per run, and each region's first kernel start."""
    cell_starts: dict[int, list[int]] = {}  # run seq -> its own kernels' starts
    firsts: dict[tuple[int, int], int] = {}  # (run seq, slot) -> first start
    for k in kernels:
        ext = external_ids.get(k.correlation_id)
        if ext is None or ext < IDS_PER_RUN:
            continue
        seq, slot = divmod(ext, IDS_PER_RUN)
        if slot == 0:
            cell_starts.setdefault(seq, []).append(k.start_ns)
        elif slot < WRITEBACK_SLOT:
            key = (seq, slot)
            firsts[key] = min(firsts.get(key, k.start_ns), k.start_ns)
    return cell_starts, firsts


class PmMeasurement(CuptiMeasurement):
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
            OptionError: ``--metrics`` do not fit in one PM sampling pass.
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

    sizes_on_warmup = True
    """The runner gives every config one measured warm-up run (see :attr:`_sizing`)."""

    def _open_sampler(
        self, options: ProfileOptions, verdict: MetricVerdict | None = None
    ) -> None:
        index = int(self._gpu.device)
        chosen, chip = self._choose_metrics(options, verdict)
        self.metrics = tuple(chosen)
        self._chip = chip
        self._floor_ns = int(options.sample_interval_us) * 1000
        self._tune = "--sample-interval" not in options.given
        self._max_clock_mhz = float(self._gpu.max_sm_clock_mhz or FALLBACK_CLOCK_MHZ)
        self._sampler = open_cupti_sampler(index, self.metrics, self._floor_ns)
        self._use_interval(self._floor_ns)
        try:
            self.per_sample_s = self._calibrate()
        except BaseException:
            self._sampler.close()
            raise

    def _use_interval(self, interval_ns: int) -> None:
        """Sample at ``interval_ns`` (the sampler is told by the caller)."""
        self.interval_ns = int(interval_ns)
        self._quiet_cycles = math.ceil(
            self.interval_ns * self._max_clock_mhz / 1e3 * QUIET_MARGIN
        )

    def _calibrate(self) -> float:
        """Host seconds to decode and evaluate one sample, from idle stretches.

        Decoding costs the same per sample busy or idle (it depends on the metrics).
        A first drain pays CUPTI's first-call costs and is not judged; then a short
        and a long stretch: the cost per sample is their difference in time over
        their difference in samples, so a drain's fixed cost (stop, start, the
        image's evaluator) is not spread over the samples.
        """
        self._sampler.drain()
        measured = []
        for stretch in CALIBRATE_S:
            time.sleep(stretch)
            started = time.perf_counter()
            chunks = self._sampler.drain()
            count = sum(len(c) for c in chunks)
            for chunk in chunks:
                chunk.all_values()
            measured.append((count, time.perf_counter() - started))
        (few, short_s), (many, long_s) = measured
        if many > few and long_s > short_s:
            return (long_s - short_s) / (many - few)
        return long_s / many if many else 0.0

    def _interval_note(self, reason: str) -> str:
        us = self.interval_ns / 1000
        why = {
            "asked": "",
            "fit": (
                "; longer than asked, so that one run of the cell fits in a quarter "
                f"of an image of {self._sampler.limit:,} samples"
            ),
            "pace": (
                f"; chosen to balance decoding ({1e6 * self.per_sample_s:.3g} µs a "
                "sample, paid while the GPU waits) against the quiet spins (give "
                "--sample-interval to fix it)"
            ),
        }[reason]
        return (
            f"PM sampling every {us:g} µs on {self._chip}: "
            f"{', '.join(self.metrics)}{why}; a DRAM-quiet {us * QUIET_MARGIN:.3g} µs "
            "spin around each region and its write-back sweep (not part of its time)"
        )

    def _choose_metrics(
        self, options: ProfileOptions, verdict: MetricVerdict | None
    ) -> tuple[list[str], str]:
        """The metrics to sample (as the probe's verdict chose them) and the chip.

        Raises:
            OptionError: ``--metrics`` the verdict refuses (one line, naming what
                fits together); or nothing to sample.
        """
        wanted = tuple(options.extra_metrics)
        if verdict is None or verdict.asked != wanted:
            why = "no probe" if verdict is None else "the probe checked others"
            verdict = MetricVerdict(wanted, given=True, chosen=wanted, unchecked=why)
        if verdict.refused:
            raise OptionError(verdict.refused)
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
            raise OptionError(msg)
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
        super().begin_run(key)

    def _after_run(self, run: PendingRun) -> None:
        """Close a region-less run with its write-back window; learn the cell's shape.

        A CUDA event after the run tells later whether the GPU is past it.
        """
        if not run.regions:
            self._writeback_sweep(0)
        self._cell_has_regions = bool(run.regions)
        self._regions_per_run = max(1, len(run.regions))
        event = self._torch.cuda.Event()
        event.record()
        self._done_events.append(event)

    def completed(self, *, wait: bool) -> list[RunTiming]:
        """Collect when asked, when due, or before the backlog could pass half an image.

        The first run of a config is collected alone: it measures a run.
        """
        if self._pending and not wait:
            wait = self._sizing is not None or self._backlog_full()
        timings = super().completed(wait=wait)
        if not self._pending:  # collected (synchronized): every run's event is done
            self._done_events = []
        return timings

    def _backlog_full(self) -> bool:
        """Whether the next run could take the samples waiting past half an image."""
        config = self._pending[-1].key.config_index
        run_s = self._run_s.get(config, 0.0) * pacing.RUN_MARGIN
        queued = 0
        for event in reversed(self._done_events):  # newest first
            if event.query():
                break
            queued += 1
        return pacing.must_collect(
            sampled_s=self._sampler.sampled_s(),
            queued_s=queued * run_s,
            next_run_s=run_s,
            interval_ns=self.interval_ns,
            limit=self._sampler.limit,
        )

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
        sampled = self._sampler.sampled_s()
        try:
            chunks = self._sampler.drain()
        except Overflowed as exc:
            self._overflowed(exc, runs)
            return timings
        drained = time.perf_counter()
        layout, quiet = self._layout(kernels, external_ids, runs)
        self._learn_entries(kernels, external_ids, runs)
        totals = region_counters(chunks, layout, self.metrics)
        self.cost.add(chunks, drained - started, time.perf_counter() - drained)
        if self.keep_raw:
            self.raw.append(self._raw(chunks, layout, quiet))
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
        cell_starts, firsts = _entry_layout(kernels, external_ids)
        for run in runs:
            if not run.regions:
                continue
            starts = sorted(cell_starts.get(run.seq, []))
            previous_end = 0
            for slot in range(1, len(run.regions) + 1):
                first = firsts.get((run.seq, slot))
                if first is None:
                    continue
                between = any(previous_end <= t < first for t in starts)
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

    def _learn(self, runs: Sequence[PendingRun], sampled_s: float) -> None:
        """Keep the longest run of each config; after a config's first, the interval."""
        per_run = sampled_s / max(1, len(runs))
        for run in runs:
            config = run.key.config_index
            self._run_s[config] = max(self._run_s.get(config, 0.0), per_run)
        sizing, self._sizing = self._sizing, None
        if sizing is not None:
            self._fit_interval(sizing.config_index, first=len(self._run_s) == 1)

    def _fit_interval(self, config: int, *, first: bool) -> None:
        """Choose the interval for ``config``'s runs; sample at it from now on.

        The first config may tune it (see :func:`.pacing.choose_interval`); a later
        one only lengthens it where its runs need a longer one to fit.

        Raises:
            MeasurementError: No interval fits one run (too long to sample).
        """
        try:
            choice = pacing.choose_interval(
                floor_ns=self._floor_ns if first else self.interval_ns,
                run_s=self._run_s[config],
                regions=self._regions_per_run,
                spins_per_region=self._spins_per_region() * QUIET_MARGIN,
                per_sample_s=self.per_sample_s,
                limit=self._sampler.limit,
                tune=self._tune and first,
            )
        except pacing.TooLongError as exc:
            raise MeasurementError(str(exc)) from exc
        if first or choice.interval_ns != self.interval_ns:
            if choice.interval_ns != self._sampler.interval_ns:
                self._sampler.reconfigure(choice.interval_ns)
            self._use_interval(choice.interval_ns)
            self.notes.append(self._interval_note(choice.reason))

    def _spins_per_region(self) -> float:
        """Quiet spins per region as the cell runs now (:data:`SPINS_PER_REGION`)."""
        regions = max(1, self._regions_per_run)
        flushed = regions - len(self._clean_entry)
        return SPINS_PER_REGION + max(0, flushed) / regions

    def _overflowed(self, exc: Overflowed, runs: Sequence[PendingRun]) -> None:
        """A batch's samples did not fit an image: say so, and sample coarser.

        Only a run much longer than the ones measured before it gets here (the
        backlog is kept under half an image): its counters, and those of the runs
        collected with it, are dropped, never cut.
        """
        timed = [r for r in runs if not r.key.warmup]
        self.lost_runs += len(timed)
        config = runs[-1].key.config_index
        self._run_s[config] = max(
            self._run_s.get(config, 0.0), exc.sampled_s / max(1, len(runs))
        )
        self._sizing = None
        before = self.interval_ns
        self._fit_interval(config, first=False)
        if timed:
            self.notes.append(
                f"PM sampling: {len(timed)} timed run(s) of config {config} have no "
                f"counters: {exc.waiting:,} samples waited at {before / 1000:g} µs, "
                f"more than an image holds ({exc.limit:,}); a run took longer than "
                "its warm-up by far. Sampling goes on every "
                f"{self.interval_ns / 1000:g} µs"
            )

    def _layout(
        self,
        kernels: Sequence[KernelActivity],
        external_ids: dict[int, int],
        runs: Sequence[PendingRun],
    ) -> tuple[attribution.Layout[Key], list[attribution.Span]]:
        """Each region's kernels and write-back sweep, other busy kernels, spins."""
        by_id = kernels_by_external_id(kernels, external_ids)
        # --ignore-kernels: an ignored kernel is no part of its region; what it moves
        # goes to outside, as any other kernel's.
        keep = getattr(self._combine, "keep", None) or (lambda _: True)
        regions: dict[Key, list[attribution.Span]] = {}
        writeback: dict[Key, list[attribution.Span]] = {}
        claimed: set[int] = set()
        for run in runs:
            base = run.seq * IDS_PER_RUN
            slots = (
                enumerate(run.regions, start=1) if run.regions else [(0, CELL_REGION)]
            )
            for slot, name in slots:
                claimed.update((base + slot, base + WRITEBACK_SLOT + slot))
                regions[(run.seq, name)] = [
                    (k.start_ns, k.end_ns)
                    for k in by_id.get(base + slot, [])
                    if keep(k.name)
                ]
                writeback[(run.seq, name)] = [
                    (k.start_ns, k.end_ns)
                    for k in by_id.get(base + WRITEBACK_SLOT + slot, [])
                ]
        busy = [
            (k.start_ns, k.end_ns)
            for k in kernels
            if (ext := external_ids.get(k.correlation_id)) != QUIET_EXTERNAL_ID
            and (ext not in claimed or not keep(k.name))
            and not (ext is not None and ext % IDS_PER_RUN >= WRITEBACK_SLOT)
        ]
        quiet = [(k.start_ns, k.end_ns) for k in by_id.get(QUIET_EXTERNAL_ID, [])]
        layout = attribution.Layout(regions=regions, busy=busy, writeback=writeback)
        return layout, quiet

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
        batch.writeback = [
            (seq, name, [[int(a), int(b)] for a, b in spans])
            for (seq, name), spans in layout.writeback.items()
        ]
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
