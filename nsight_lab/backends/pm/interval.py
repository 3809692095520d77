"""How often a pm measurement samples: chosen from its runs, kept bounded.

**Bounded by design.** Samples are read at run boundaries (:mod:`.sampler`): a
collection comes before the samples pending by the end of the next run could pass
half an image, and the first run of each config (an untimed warm-up) is collected
alone to measure a run, from which the interval is chosen (:mod:`.pacing`).
:class:`SamplingInterval` is that part of :class:`~.collector.PmMeasurement`: the
interval in use, the decode's cost measured at open, the longest run per config,
and what a run too long for its interval does (its counters dropped, said, and the
interval lengthened).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

from nsight_lab.backends.pm import pacing
from nsight_lab.errors import MeasurementError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.backends.cupti import PendingRun
    from nsight_lab.backends.pm.sampler import Overflowed, PmSampler
    from nsight_lab.contract.collector import RunKey

QUIET_MARGIN = 1.1
"""The spin lasts this multiple of the sample interval at the highest SM clock."""
SPINS_PER_REGION = 2
"""Quiet spins per region once the cell is known to launch nothing between regions:
between the region and its write-back sweep, and after the sweep (which then stands
for the next region's flush). A region entered after kernels of the cell's own has a
flush and a third spin before it."""
KEEP_WITHIN = 0.25
"""A tuned interval within this share of the one in use keeps the one in use."""
CALIBRATE_S = (0.004, 0.02)
"""Idle sampling decoded at open, short then long: the decode's cost per sample is
the difference over the difference in samples (the fixed cost of a drain cancels)."""


class SamplingInterval:
    """The sampling interval of a pm measurement (mixed into it; its state there)."""

    _sampler: PmSampler
    metrics: tuple[str, ...]
    notes: list[str]
    interval_ns: int
    per_sample_s: float
    lost_runs: int
    _chip: str
    _quiet_cycles: int
    _max_clock_mhz: float
    _floor_ns: int
    _tune: bool
    _run_s: dict[int, float]
    _sizing: RunKey | None
    _regions_per_run: int
    _shapes: dict[int, pacing.RunShape]
    _clean_entry: set[int]
    _pending: list[PendingRun]
    _done_events: list[Any]

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
        when = (
            "done at run boundaries while the GPU works"
            if self._sampler.live
            else "paid while the GPU waits"
        )
        why = {
            "asked": "",
            "fit": (
                "; longer than asked, so that one run of the cell fits in a quarter "
                f"of an image of {self._sampler.limit:,} samples"
            ),
            "keep": (
                f"; longer than asked, so that decoding ({1e6 * self.per_sample_s:.3g}"
                " µs a sample, while the cell runs) keeps up with the sampling"
            ),
            "pace": (
                f"; chosen to balance decoding ({1e6 * self.per_sample_s:.3g} µs a "
                f"sample, {when}) against the quiet spins (give "
                "--sample-interval to fix it)"
            ),
        }[reason]
        return (
            f"PM sampling every {us:g} µs on {self._chip}: "
            f"{', '.join(self.metrics)}{why}; a DRAM-quiet {us * QUIET_MARGIN:.3g} µs "
            "spin around each region and its write-back sweep (not part of its time)"
        )

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
        floor = self._floor_ns if first else self.interval_ns
        run_s, tune = self._run_s[config], self._tune and first
        shape = self._shapes.get(config) if self._sampler.live else None
        try:
            if shape is not None:
                choice = pacing.choose_live_interval(
                    floor_ns=floor, run_s=run_s, shape=shape,
                    per_sample_s=self.per_sample_s, limit=self._sampler.limit,
                    tune=tune,
                )  # fmt: skip
            else:
                choice = pacing.choose_interval(
                    floor_ns=floor, run_s=run_s, regions=self._regions_per_run,
                    spins_per_region=self._spins_per_region() * QUIET_MARGIN,
                    per_sample_s=self.per_sample_s, limit=self._sampler.limit,
                    tune=tune,
                )  # fmt: skip
            fit = pacing.fit_interval(run_s, self._sampler.limit)
        except pacing.TooLongError as exc:
            raise MeasurementError(str(exc)) from exc
        now = self.interval_ns
        if (
            tune
            and choice.reason in {"asked", "pace"}  # not a bound: fit, keep up
            and now >= max(floor, fit)
            and abs(choice.interval_ns - now) <= (KEEP_WITHIN * now)
        ):  # close to where the last such cell ended: no new session for it
            choice = pacing.Choice(now, "pace" if now > floor else choice.reason)
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
