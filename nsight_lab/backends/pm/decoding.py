"""How a pm measurement decodes its samples: kept parts, live pumps, the fall-back.

:class:`Decoding` is that part of :class:`~.collector.PmMeasurement`. It takes the
sampling parts of its device, chip and metrics from its owner's
:class:`~.keep.Keeper` (the prober's, handed over with the verdict; its own
otherwise) and opens a sampler on them: decoded while sampling goes on
(:mod:`.rolling`, with ``NSIGHT_LAB_PM_DECODE=live``) or stopped (:mod:`.sampler`:
the default, and once a live decode failed for the chip and metrics; see
:data:`DECODE_ENV`). It pumps the live decode at run boundaries and while a
collection waits for the GPU, measures each config's warm-up run for the interval
(:class:`~.pacing.RunShape`), and at close leaves what the cell measured (its
interval, the decode's cost per sample) to the next cell, or drops the kept parts
after a CUPTI error. The stopped decode's cost is calibrated once per kept parts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from typing import TYPE_CHECKING, Any

from nsight_lab.backends.pm import pacing
from nsight_lab.backends.pm.attribution import merge_spans
from nsight_lab.backends.pm.keep import Keeper, Kept
from nsight_lab.backends.pm.rolling import (
    CATCH_UP_SAMPLES,
    LiveFailed,
    RollingSampler,
    open_sampler,
)
from nsight_lab.backends.pm.sampler import Overflowed, new_cupti_api
from nsight_lab.errors import MeasurementError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from nsight_lab.backends.clock import CuptiClock
    from nsight_lab.backends.cupti import KernelActivity, PendingRun
    from nsight_lab.backends.pm.attribution import Span
    from nsight_lab.backends.pm.chunk import Chunk
    from nsight_lab.backends.pm.sampler import PmSampler

DECODE_ENV = "NSIGHT_LAB_PM_DECODE"
"""``live`` decodes while sampling goes on and keeps the sampling parts from cell to
cell (the issue 32 work); anything else, or unset, decodes only while sampling is
stopped, on parts made for the cell: the path measured on the H100 and H200. Live
stays opt-in until a device run shows its bytes equal the stopped decode's
(``benchmarks/pm_cost.py``): a live decode on a restarted session read 54 % of the
bytes on the H200 once, with no error to tell."""


def live_asked() -> bool:
    """Whether the environment asks for the live decode (and kept parts)."""
    return os.environ.get(DECODE_ENV, "").strip().lower() == "live"


LIVE_PER_SAMPLE_S = 15e-6
"""A live decode's host cost per sample before one is measured (the H200's DRAM pair:
decode 6.5, timestamps 0.5, evaluation 4.7, the image's initialisation 2 µs)."""
CATCH_UP_SLEEP_S = 0.0002
"""Between pumps while a collection waits for the GPU and nothing was sampled."""


def decode_mode(kept: Kept) -> str:
    """``"live"`` or ``"stopped"``: the environment's choice, and what worked before."""
    return "live" if live_asked() and kept.live_ok else "stopped"


class Decoding:
    """A pm measurement's decode (mixed into it, its state there: the module doc)."""

    _sampler: PmSampler
    _torch: Any
    _done_events: list[Any]
    _floor_ns: int
    _tune: bool
    metrics: tuple[str, ...]
    notes: list[str]
    interval_ns: int
    per_sample_s: float
    lost_runs: int
    _clock: CuptiClock
    """:class:`~nsight_lab.backends.cupti.CuptiMeasurement`'s: CUPTI's ticks in ns."""
    _cupti: Any
    """cupti-python's ``cupti`` module (its clock: ``get_timestamp``)."""
    _calibrate: Callable[[], float]
    """:class:`~.interval.SamplingInterval`'s."""
    _overflowed: Callable[[Overflowed, Sequence[PendingRun]], None]
    """:class:`~.interval.SamplingInterval`'s."""

    def _decoding_state(self) -> None:
        """The state before a sampler opens (a measurement built in tests has it)."""
        self._keeper: Keeper | None = None
        self._owns_keeper = False
        self._kept: Kept | None = None
        self._mode = "stopped"
        self._cupti_failed = False
        self._samples_in_ticks: bool | None = None
        """Whether the samples run on CUPTI's ticks, not ns (another client's clock:
        :meth:`_on_kernel_clock`); None until a drain tells."""
        self._host_started = 0.0
        self._idle_since: float | None = None
        """When the last run with none pending began (a config's first, say)."""
        self._host_s: dict[int, float] = {}
        """Run sequence -> the host's time from its begin to its end."""
        self._shapes: dict[int, pacing.RunShape] = {}
        """Config index -> its warm-up run's shape (live decode's interval)."""

    def _open_decoding(self, index: int, chip: str, keeper: Keeper | None) -> None:
        """Take the kept parts of ``(index, chip, metrics)``; open the sampler on them.

        It starts at the interval the last such cell ended at.

        Raises:
            BackendUnavailableError: cupti-python cannot be loaded, or CUPTI refused.
        """
        if not live_asked():  # parts made for this cell, released at its end
            keeper = None
        self._owns_keeper = keeper is None
        self._keeper = Keeper() if keeper is None else keeper
        metrics = self.metrics
        kept = self._keeper.take(
            (index, chip, metrics), lambda: new_cupti_api(index, metrics)
        )
        self._kept = kept
        self._mode = decode_mode(kept)
        start = kept.interval_for(self._floor_ns, tune=self._tune, mode=self._mode)
        try:
            self._sampler = open_sampler(
                kept.api, metrics, start, live=self._mode == "live"
            )
        except BaseException:
            self._keeper.drop(index)
            self._close_keeper()
            raise

    def _decode_cost(self) -> float:
        """Host seconds per sample: measured live, or kept (stopped: calibrated)."""
        kept = self._kept
        known = kept.per_sample_s.get(self._mode) if kept is not None else None
        if self._mode == "stopped":
            if known is None:
                known = self._calibrate()
                if kept is not None:
                    kept.per_sample_s["stopped"] = known
            return known
        pumped = getattr(self._sampler, "pumped", None)
        measured = pumped.per_sample_s if pumped is not None else 0.0
        return measured or known or LIVE_PER_SAMPLE_S

    def _opened(self) -> PmSampler | None:
        """The sampler, once one was opened."""
        return getattr(self, "_sampler", None)

    def _is_live(self) -> bool:
        """Whether the samples are decoded while sampling goes on."""
        return isinstance(self._opened(), RollingSampler)

    def _pump(self) -> None:
        """Decode what was sampled since the last pump (live only)."""
        sampler = self._opened()
        if isinstance(sampler, RollingSampler):
            sampler.pump()

    def _synchronize(self) -> None:
        """Wait for the GPU; decoding what it samples meanwhile (live)."""
        sampler, events = self._sampler, self._done_events
        if isinstance(sampler, RollingSampler):
            nap = max(CATCH_UP_SLEEP_S, CATCH_UP_SAMPLES * sampler.interval_ns / 1e9)
            while events and not events[-1].query():
                if sampler.pump() < CATCH_UP_SAMPLES:
                    time.sleep(nap)
        self._torch.cuda.synchronize()

    def _take_samples(
        self, kernels: Sequence[KernelActivity], runs: Sequence[PendingRun]
    ) -> list[Chunk] | None:
        """The batch's samples; None when they were dropped (said in the notes).

        Raises:
            MeasurementError: CUPTI failed (the kept parts are dropped at close).
        """
        until = max((k.end_ns for k in kernels), default=None)
        clock = getattr(self, "_clock", None)
        if (
            until is not None and clock is not None and not clock.native
        ):  # in the samples' own ticks
            until = clock.ticks(until) if self._samples_in_ticks else None
        try:
            return self._on_kernel_clock(self._sampler.drain(until_ns=until))
        except Overflowed as exc:
            self._overflowed(exc, runs)
        except LiveFailed as exc:
            self._go_stopped(exc, runs)
        except MeasurementError:
            self._cupti_failed = True
            raise
        return None

    def _on_kernel_clock(self, chunks: list[Chunk]) -> list[Chunk]:
        """``chunks`` with their times in the kernels' nanoseconds.

        Another CUPTI client's timestamp callback (Kineto's, after one
        ``torch.profiler`` block) sets the clock of the PM samples too, not only the
        activity records': on the H100 both were in its ticks (2 per ns), and the
        kernels converted to nanoseconds overlapped no sample, so every region read
        no bytes (``benchmarks/results/pm_after_torchprof_h100.json.gz``). Which
        clock the samples run on is told once, from the latest sample's end: it is
        near now in its own clock and seconds or years away in the other.
        """
        clock = getattr(self, "_clock", None)
        if clock is None or clock.native or not chunks or not len(chunks[-1]):
            return chunks
        if self._samples_in_ticks is None:
            ticks = int(self._cupti.get_timestamp())
            last = int(chunks[-1].ends[-1])
            self._samples_in_ticks = abs(last - ticks) < abs(last - clock.ns(ticks))
        if not self._samples_in_ticks:
            return chunks
        return [
            dataclasses.replace(
                c, starts=clock.ns_array(c.starts), ends=clock.ns_array(c.ends)
            )
            for c in chunks
        ]

    def _go_stopped(self, exc: LiveFailed, runs: Sequence[PendingRun]) -> None:
        """Decode stopped from now on, for this chip and metrics (the batch is lost)."""
        sampler = self._sampler
        assert isinstance(sampler, RollingSampler)  # noqa: S101  (only it raises it)
        if self._kept is not None:
            self._kept.live_ok = False
        self._mode = "stopped"
        self._sampler = sampler.as_stopped()
        timed = [r for r in runs if not r.key.warmup]
        self.lost_runs += len(timed)
        self.notes.append(
            f"PM sampling: {exc}; {len(timed)} timed run(s) of that batch have no "
            "counters"
        )
        self.per_sample_s = self._decode_cost()

    def _began_run(self, *, idle: bool) -> None:
        """A run begins: start its host clock (the last run's end pumped already).

        ``idle``: no run is pending, so what was sampled since the last collection
        (the op counter's pass of the cell, the notebook's pause) belongs to no run:
        much of it is dropped rather than decoded (:meth:`PmSampler.forget`).
        """
        forget = getattr(self._opened(), "forget", None)
        if idle and forget is not None:
            forget()
        self._host_started = self._host_now()
        if idle:
            self._idle_since = self._host_started

    def _sampled_for_runs(self, sampled_s: float) -> float:
        """The wall time ``sampled_s`` a batch took, from its first run's begin.

        A batch that began with nothing pending (a config's warm-up, collected
        alone) is timed from there: what was sampled before it (the stopped
        decode's calibration, a pause) is no run's.
        """
        since, self._idle_since = self._idle_since, None
        if since is None:
            return sampled_s
        return min(sampled_s, self._host_now() - since)

    def _ended_run(self, seq: int) -> None:
        """A run's launches are done: its host time."""
        self._host_s[seq] = self._host_now() - self._host_started

    def _host_now(self) -> float:
        """The sampler's clock (the host's time, as the pumps measure theirs)."""
        now = getattr(self._opened(), "now", None)
        return float(now()) if now is not None else time.perf_counter()

    def _measure_shape(
        self,
        kernels: Sequence[KernelActivity],
        quiet: Sequence[Span],
        runs: Sequence[PendingRun],
    ) -> None:
        """A config's warm-up run (collected alone): its host and GPU times.

        Called for every batch: it forgets the host times of the others.
        """
        host = [self._host_s.pop(r.seq, None) for r in runs]
        sizing = getattr(self, "_sizing", None) is not None
        if not (sizing and self._sampler.live and len(runs) == 1 and kernels):
            return
        if host[0] is None:
            return
        busy = merge_spans([(k.start_ns, k.end_ns) for k in kernels])
        spins = sum(b - a for a, b in quiet)
        pumped = getattr(self._sampler, "pumped", None)
        per_pump = pumped.per_pump_s if pumped is not None else 0.0
        self._shapes[runs[0].key.config_index] = pacing.RunShape(
            host_s=host[0] + per_pump,  # and the pump at its end
            gpu_s=float((busy[:, 1] - busy[:, 0]).sum()) / 1e9,
            spin_s=spins / 1e9,
            at_ns=self.interval_ns,
        )

    def _close_decoding(self) -> None:
        """Leave what the cell measured to the next; close the sampler."""
        sampler, kept = getattr(self, "_sampler", None), self._kept
        if sampler is not None:
            if kept is not None and not self._cupti_failed:
                pumped = getattr(sampler, "pumped", None)
                kept.remember(
                    self._floor_ns,
                    tune=self._tune,
                    mode=self._mode,
                    interval_ns=self.interval_ns,
                    per_sample_s=pumped.per_sample_s if pumped is not None else 0.0,
                )
            with contextlib.suppress(Exception):
                sampler.close()
        if kept is not None and self._cupti_failed and self._keeper is not None:
            self._keeper.drop(kept.key[0])
        self._close_keeper()

    def _close_keeper(self) -> None:
        if self._owns_keeper and self._keeper is not None:
            self._keeper.close()
