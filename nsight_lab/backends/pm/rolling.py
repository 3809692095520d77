"""PM sampling decoded while it goes on, on the thread that launches (the default).

:class:`RollingSampler` does not stop sampling during a cell. The pm measurement
calls :meth:`~RollingSampler.pump` at every run boundary and while it waits for the
GPU at a collection: a pump decodes what was sampled since the last one into the
session's image (one CUPTI call), reads those samples' timestamps, evaluates every
one of them into arrays, and initialises the image again once half of it is read.
Where the cell keeps the GPU busy the host is ahead of it, so this work is done while
the GPU works, not while it waits (:class:`~.sampler.PmSampler`'s decode); a
collection then decodes the last interval or two (:meth:`~RollingSampler.drain`).

**Bounded as the stopped drain is.** Before each decode, the samples that may be
waiting (the time since the last decode over the interval, rounded up) must fit in
the image's free part; if not, nothing is decoded: the next collection drops the
batch's counters and says so (:class:`~.sampler.Overflowed`), and sampling begins
afresh. After a pump the image is at most half full, and the interval is chosen so
that one run fills at most a quarter of it (:mod:`.pacing`).

**On the launching thread, not another** (the decoding thread tried before fell
behind, ``benchmarks/README.md``): every CUPTI call here is made by the thread that
holds the GIL anyway, so none waits for it, and no two CUPTI calls on the session
run at once.

**A fresh session each time.** On the H200, after a stop and a start on the same
enabled session, samples decoded live evaluated as invalid metric names; a rolling
sampler samples only on a session enabled and configured afresh (one
``set_config`` with the kept config image), its image initialised before the start,
as the live decodes verified there (``benchmarks/results/pm_decode_probe_h200.json``).
Should a live evaluation still fail, :class:`LiveFailed` tells the measurement to go on
stopped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from nsight_lab.backends.pm import errors, pacing
from nsight_lab.backends.pm.chunk import Chunk
from nsight_lab.backends.pm.sampler import Overflowed, PmSampler
from nsight_lab.errors import MeasurementError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from numpy.typing import NDArray

    from nsight_lab.backends.pm.cupti_api import ImageApi, SamplingApi

CATCH_UP_S = (0.25, 50)
"""A collection waits for a sample past its last kernel at most this long: the larger
of the seconds and the intervals (the GPU is idle: a sample ends each interval)."""
MIN_MEASURED = 32
"""Samples decoded before their measured cost per sample is trusted."""
MIN_PUMPS = 8
"""Pumps before their fixed part is told apart from the per-sample part."""
CATCH_UP_SAMPLES = 32
"""While a collection waits for the GPU, a pump that found fewer waits this many
intervals (at least :data:`~.decoding.CATCH_UP_SLEEP_S`) before the next."""


class LiveFailed(MeasurementError):  # noqa: N818  (a measurement error, named for what happened)
    """CUPTI could not evaluate samples decoded live: decode stopped from now on."""


@dataclass
class PumpStats:
    """What the pumps cost (the interval's choice and the notes use it).

    A pump's time is a fixed part (CUPTI's calls that find little) and a part per
    sample: the least-squares line through the pumps' (samples, seconds) tells
    them apart once the pumps differ enough; until then, time over samples.
    """

    pumps: int = 0
    samples: int = 0
    seconds: float = 0.0
    """Host time decoding, reading timestamps, evaluating, initialising images."""
    reinits: int = 0
    _nn: float = 0.0
    _nt: float = 0.0

    def add(self, samples: int, seconds: float) -> None:
        """Count one pump."""
        self.pumps += 1
        self.samples += samples
        self.seconds += seconds
        self._nn += samples * samples
        self._nt += samples * seconds

    @property
    def per_sample_s(self) -> float:
        """Host seconds per sample (the line's slope); 0 until enough to tell."""
        if self.samples < MIN_MEASURED:
            return 0.0
        mean = self.samples / self.pumps
        spread = self._nn / self.pumps - mean * mean
        if self.pumps >= MIN_PUMPS and spread > (mean / 2) ** 2:
            slope = (self._nt / self.pumps - mean * self.seconds / self.pumps) / spread
            if slope > 0:
                return slope
        return self.seconds / self.samples

    @property
    def per_pump_s(self) -> float:
        """Host seconds a pump costs besides its samples (the line's intercept)."""
        if not self.pumps:
            return 0.0
        fixed = (self.seconds - self.per_sample_s * self.samples) / self.pumps
        return max(0.0, fixed)


class RollingSampler(PmSampler):
    """PM sampling decoded while it goes on (see the module doc).

    Raises (from the constructor):
        BackendUnavailableError: CUPTI refused to enable or configure PM sampling.
    """

    live = True

    def __init__(
        self,
        api: SamplingApi,
        metrics: Sequence[str],
        interval_ns: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        owns_api: bool = False,
    ) -> None:
        """Enable, configure, initialise the image, start at ``interval_ns``."""
        self._used = 0
        self._pending: list[
            tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]
        ] = []
        self._decoded_at = 0.0
        self._handed_at = 0.0
        self._lost: MeasurementError | None = None
        self.pumped = PumpStats()
        super().__init__(api, metrics, interval_ns, clock=clock, owns_api=owns_api)

    def _capacity(self) -> int:
        """The live image's samples (:func:`.pacing.live_capacity`)."""
        return pacing.live_capacity(self.api.bytes_per_sample)

    def _start(self) -> None:
        """Initialise the session's image while stopped, then start sampling."""
        self._release()
        try:
            self._image = self.api.image(self.limit)
        except Exception as exc:
            self.api.disable()
            raise errors.explain(exc, started=False) from exc
        self._used = 0
        super()._start()
        self._decoded_at = self._started_at
        if not self._handed_at:
            self._handed_at = self._started_at

    def sampled_s(self) -> float:
        """Wall time sampled since the samples were last handed out."""
        return self._clock() - self._handed_at if self._running else 0.0

    def forget(self) -> None:
        """What was sampled so far belongs to no run: much of it is dropped.

        Decoded as usual when it is little; else sampling begins afresh.
        """
        waiting = pacing.samples_in(self._clock() - self._decoded_at, self.interval_ns)
        lost = self._lost
        if lost is not None and not isinstance(lost, LiveFailed):
            self._lost = None  # no run's samples were lost
            self.reconfigure(self.interval_ns)
        elif lost is None and waiting > self.limit // 4:
            self.reconfigure(self.interval_ns)
        else:
            self.pump()
        self._pending = []
        self._handed_at = self._clock()

    def pump(self) -> int:
        """Decode, time and evaluate what was sampled since the last pump.

        Returns:
            How many samples it read (0 also when the batch is lost: :meth:`drain`
            says why).
        """
        image = self._image
        if not self._running or self._lost is not None or image is None:
            return 0
        now = self._clock()
        waiting = pacing.samples_in(now - self._decoded_at, self.interval_ns)
        if self._used + waiting >= image.capacity:
            # A decode could fill the image, and what follows a full one has no
            # timestamps: these samples are dropped on a fresh session instead.
            room = image.capacity - self._used
            self._fail(Overflowed(waiting, room, now - self._handed_at))
            return 0
        try:
            found = self._read(image)
        except MeasurementError as exc:
            self._fail(exc)
            return 0
        except Exception as exc:  # noqa: BLE001  (CUPTI's: said at the drain)
            self._fail(MeasurementError(str(errors.explain(exc, started=True))))
            return 0
        self._decoded_at = now
        self.pumped.add(found, self._clock() - now)
        self.stats.largest = max(self.stats.largest, found)
        return found

    def _read(self, image: ImageApi) -> int:
        """One decode into ``image``; its new samples read into the pending arrays.

        Raises:
            MeasurementError: The image filled, or a sample came without its end.
            LiveFailed: CUPTI could not evaluate the samples.
        """
        completed, full = image.decode()
        if full:
            raise MeasurementError(errors.STUCK.format(limit=image.capacity))
        lo = self._used
        if completed <= lo:
            return 0
        starts, ends = image.times(lo, completed)
        if (ends <= 0).any():  # live, every completed sample has its end
            raise MeasurementError(errors.FELL_BEHIND.format(us=self.interval_ns / 1e3))
        self._repair(starts, ends, before_first=self._last_end)
        try:
            values = image.evaluate_rows(np.arange(lo, completed, dtype=np.intp))
        except Exception as exc:
            why = errors.status_name(exc) or f"{type(exc).__name__}: {exc}"
            msg = (
                f"CUPTI could not evaluate PM samples decoded while sampling ({why}); "
                "they are decoded with sampling stopped from now on"
            )
            raise LiveFailed(msg) from exc
        self._pending.append((starts, ends, values))
        self._last_end = int(ends[-1])
        self._used = completed
        if 2 * self._used >= image.capacity:  # read: the image may start over
            image.reinit()
            self._used = 0
            self.pumped.reinits += 1
        return completed - lo

    def _fail(self, why: MeasurementError) -> None:
        """The batch is lost: nothing more is decoded until the drain says why."""
        if self._lost is None:
            self._lost = why
        self._pending = []

    def drain(self, until_ns: int | None = None) -> list[Chunk]:
        """Every sample read since the last drain, up to ``until_ns`` at least.

        ``until_ns`` is the batch's last kernel end: with the GPU idle, a sample
        ends every interval, so waiting for one past it takes an interval or two.

        Raises:
            Overflowed: More samples waited than the image had room for (none is
                handed out; sampling went on afresh).
            LiveFailed: CUPTI could not evaluate the live samples.
            MeasurementError: CUPTI failed, or no sample came past ``until_ns``.
        """
        started = time.perf_counter()
        self._catch_up(until_ns)
        lost, self._lost = self._lost, None
        pending, self._pending = self._pending, []
        if lost is not None:
            if not isinstance(lost, LiveFailed):  # what waits is the lost batch's
                self.reconfigure(self.interval_ns)
            self._handed_at = self._clock()
            raise lost
        self._handed_at = self._clock()
        stats = self.stats
        stats.drains += 1
        stats.decode_s += time.perf_counter() - started
        if not pending:
            return []
        starts = np.concatenate([p[0] for p in pending])
        ends = np.concatenate([p[1] for p in pending])
        table = np.concatenate([p[2] for p in pending])
        stats.samples += len(starts)
        return [Chunk(metrics=self.metrics, starts=starts, ends=ends, table=table)]

    def _catch_up(self, until_ns: int | None) -> None:
        """Pump until a sample ends at ``until_ns`` or later (or the batch is lost)."""
        self.pump()
        if until_ns is None:
            return
        seconds, intervals = CATCH_UP_S
        limit = max(seconds, intervals * self.interval_ns / 1e9)
        since = self._clock()
        while self._lost is None and self._running and self._last_end < until_ns:
            if self._clock() - since > limit:
                us = self.interval_ns / 1e3
                self._fail(MeasurementError(errors.FELL_BEHIND.format(us=us)))
                return
            time.sleep(self.interval_ns / 1e9)
            self.pump()

    def as_stopped(self) -> PmSampler:
        """Sampling on afresh, drained stopped from now on (after :class:`LiveFailed`).

        Raises:
            BackendUnavailableError: CUPTI refused the configuration.
        """
        self._shut()
        return PmSampler(
            self.api,
            self.metrics,
            self.interval_ns,
            clock=self._clock,
            owns_api=self.owns_api,
        )


def open_sampler(  # noqa: PLR0913  (the sampler's parts, keyword-only after them)
    api: SamplingApi,
    metrics: Sequence[str],
    interval_ns: int,
    *,
    live: bool,
    clock: Callable[[], float] = time.monotonic,
    owns_api: bool = False,
) -> PmSampler:
    """A sampler on ``api``: decoded while sampling (``live``) or stopped.

    Raises:
        BackendUnavailableError: CUPTI refused to enable or configure PM sampling.
    """
    kind = RollingSampler if live else PmSampler
    return kind(api, metrics, interval_ns, clock=clock, owns_api=owns_api)
