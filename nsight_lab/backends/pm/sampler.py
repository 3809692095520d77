"""PM sampling on one device, read at run boundaries with a backlog bounded by design.

:class:`PmSampler` samples the configured metrics every ``interval`` of GPU time and
hands the samples out at each :meth:`~PmSampler.drain`: it stops sampling, makes an
image sized for the samples that waited (their number is the sampled time over the
interval, known before the decode), decodes into it, reads the timestamps and starts
sampling again. Metric values are evaluated later, only for the samples some region
needs (:class:`Chunk`), through the image, which is kept until the next drain. Its
decode happens while the GPU waits; :class:`~.rolling.RollingSampler` decodes while
sampling goes on, on the thread that launches (the default).

Why not a thread decoding while sampling goes on (the way tried before,
``benchmarks/README.md``): CUPTI's per-sample calls release and take back the GIL, so
beside a cell that launches kernels from Python a decoding thread got the GIL a few
hundred times a second and fell behind until an image filled; and a decode that fills
an image leaves every later sample without timestamps. Read at run boundaries, the
backlog is whatever time was sampled since the last start: the collector keeps it
under half an image (:mod:`.pacing`), so no decode can fill one.

The CUPTI calls sit behind :class:`~.cupti_api.SamplingApi`; the tests' CPU replay
implements it with the limits the H200 showed.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from nsight_lab.backends.pm import errors, pacing
from nsight_lab.backends.pm.chunk import Chunk
from nsight_lab.backends.pm.cupti_api import CuptiSampling
from nsight_lab.errors import MeasurementError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from numpy.typing import NDArray

    from nsight_lab.backends.pm.cupti_api import ImageApi, SamplingApi

__all__ = [
    "Chunk",
    "DrainStats",
    "Overflowed",
    "PmSampler",
    "new_cupti_api",
    "open_cupti_sampler",
]


class Overflowed(MeasurementError):  # noqa: N818  (a measurement error, named for what happened)
    """More samples waited than one image holds: they were dropped, not decoded."""

    def __init__(self, waiting: int, limit: int, sampled_s: float) -> None:
        """Say how many waited, the limit, and the time sampled."""
        self.waiting, self.limit, self.sampled_s = waiting, limit, sampled_s
        super().__init__(errors.STUCK.format(limit=limit))


@dataclass
class DrainStats:
    """What the drains cost and met (the benchmark and the session notes report it)."""

    drains: int = 0
    samples: int = 0
    decode_s: float = 0.0
    """Stopping, making the image, decoding, reading timestamps, starting again."""
    largest: int = 0
    """The most samples one drain found waiting."""
    capacity: int = 0
    """The samples one image may hold (the sampler's ``limit``); 0 unknown."""
    repaired: int = 0
    """Samples whose missing start time was taken from the one before."""
    cut: int = 0
    """Samples at the end of a drain without an end time (cut by the stop)."""

    @property
    def largest_share(self) -> float:
        """``largest`` over ``capacity``: by design at most about a half (0 unknown)."""
        return self.largest / self.capacity if self.capacity > 0 else 0.0


class PmSampler:
    """PM sampling on one device, drained at run boundaries (see the module doc).

    Raises (from the constructor):
        BackendUnavailableError: CUPTI refused to enable or configure PM sampling
            (permission, nvperf libraries, old driver or GPU, busy).
    """

    live = False
    """Decodes only while sampling is stopped (:class:`~.rolling.RollingSampler`
    decodes while it goes on)."""

    def __init__(
        self,
        api: SamplingApi,
        metrics: Sequence[str],
        interval_ns: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        owns_api: bool = False,
    ) -> None:
        """Enable, configure and start PM sampling at ``interval_ns``.

        ``owns_api``: release ``api`` at :meth:`close` (nobody keeps it for later).
        """
        self.api = api
        self.owns_api = owns_api
        self.metrics = tuple(metrics)
        self.interval_ns = int(interval_ns)
        self._clock = clock
        self._running = False
        self._started_at = 0.0
        self._last_end = 0
        self._image: ImageApi | None = None
        self.stats = DrainStats()
        self._configure()
        self.limit = self._capacity()
        """The samples one image may hold for these metrics (see :mod:`.pacing`)."""
        self.stats.capacity = self.limit
        self._start()

    def _capacity(self) -> int:
        """The samples one image may hold (:func:`.pacing.capacity`)."""
        return pacing.capacity(self.api.bytes_per_sample)

    def _configure(self) -> None:
        try:
            self.api.configure(self.interval_ns)
        except ValueError as exc:
            why = (
                f"PM sampling refused the configuration ({exc}); check the metrics "
                "with %nsight doctor, or use --backend ncu"
            )
            raise errors.unavailable(why) from exc
        except Exception as exc:
            raise errors.explain(exc, started=False) from exc

    def _start(self) -> None:
        try:
            self.api.start()
        except Exception as exc:
            self.api.disable()
            raise errors.explain(exc, started=False) from exc
        self._started_at = self._clock()
        self._running = True

    def now(self) -> float:
        """The sampler's clock (seconds): the host's time, as it measures it."""
        return self._clock()

    def sampled_s(self) -> float:
        """Wall time sampled since the last start (what waits to be decoded)."""
        return self._clock() - self._started_at if self._running else 0.0

    def drain(self, until_ns: int | None = None) -> list[Chunk]:  # noqa: ARG002
        """Every sample since the last drain; sampling starts again at once.

        Call only while the GPU is idle (the batch synchronized): no sample is taken
        between the stop and the start, and every sample up to now (``until_ns``,
        the batch's last kernel end, with it) is handed out.

        Raises:
            Overflowed: More samples waited than an image holds (none is handed
                out; sampling was started again on a fresh session).
            MeasurementError: CUPTI failed.
        """
        if not self._running:
            return []
        started = time.perf_counter()
        self._release()
        try:
            self.api.stop()
        except Exception as exc:
            raise errors.explain(exc, started=True) from exc
        self._running = False
        sampled = self._clock() - self._started_at
        waiting = pacing.samples_in(sampled, self.interval_ns)
        if waiting > self.limit:
            # Decoding would fill the image, and what follows a full image has no
            # timestamps: these samples are dropped on a fresh session instead.
            self.reconfigure(self.interval_ns)
            raise Overflowed(waiting, self.limit, sampled)
        try:
            image = self.api.image(pacing.image_size(waiting, self.limit))
            self._image = image
            chunk = self._decode(image)
        except MeasurementError:
            raise
        except Exception as exc:
            raise errors.explain(exc, started=True) from exc
        self._start()
        found = len(chunk) if chunk is not None else 0
        stats = self.stats
        stats.drains += 1
        stats.samples += found
        stats.decode_s += time.perf_counter() - started
        stats.largest = max(stats.largest, found)
        return [chunk] if chunk is not None else []

    def _decode(self, image: ImageApi) -> Chunk | None:
        """Decode what waits into ``image`` (one decode; it must not fill).

        Raises:
            MeasurementError: The decode filled the image (the sizing failed).
        """
        completed, full = image.decode()
        if full:
            raise MeasurementError(errors.STUCK.format(limit=image.capacity))
        while True:  # what a decode leaves (none seen on the H200) is decoded too
            more, full = image.decode()
            if full:
                raise MeasurementError(errors.STUCK.format(limit=image.capacity))
            if more <= completed:
                break
            completed = more
        if completed <= 0:
            return None
        starts, ends = image.times(0, completed)
        taken = self._complete(ends)
        if taken == 0:
            return None
        starts, ends = starts[:taken], ends[:taken]
        self._repair(starts, ends)
        self._last_end = int(ends[-1])
        return Chunk(
            metrics=self.metrics,
            starts=starts,
            ends=ends,
            _evaluate=image.evaluate,
            _evaluate_rows=image.evaluate_rows,
        )

    def _complete(self, ends: NDArray[np.int64]) -> int:
        """How many samples are whole: after a stop the last may have no end (cut).

        Raises:
            MeasurementError: A sample without an end time is followed by others (a
                lost sample: on the H200 they came only after a full image).
        """
        no_end = np.flatnonzero(ends <= 0)
        if len(no_end) == 0:
            return len(ends)
        first = int(no_end[0])
        if len(no_end) != len(ends) - first:
            raise MeasurementError(
                errors.FELL_BEHIND.format(us=self.interval_ns / 1000)
            )
        self.stats.cut += len(no_end)
        return first

    def _repair(
        self, starts: NDArray[np.int64], ends: NDArray[np.int64], before_first: int = 0
    ) -> None:
        """Give a sample with no start time (0) the end of the one before it.

        CUPTI leaves the start of the first sample after a start at 0: it began at
        most one interval before its end (sampling was stopped before it).
        ``before_first``: the end of the sample before ``starts[0]`` (0 unknown).
        """
        for i in np.flatnonzero(starts <= 0):
            before = int(ends[i - 1]) if i > 0 else before_first
            end = int(ends[i])
            fits = 0 < before < end and end - before <= 2 * self.interval_ns
            starts[i] = before if fits else max(end - self.interval_ns, 0)
            self.stats.repaired += 1

    def forget(self) -> None:
        """What was sampled so far belongs to no run: if it is much, drop it.

        More than a quarter of an image waiting is dropped on a fresh session
        rather than decoded (the next drain would find it with a run's samples).
        """
        if pacing.samples_in(self.sampled_s(), self.interval_ns) > self.limit // 4:
            self.reconfigure(self.interval_ns)

    def reconfigure(self, interval_ns: int) -> None:
        """Sample at ``interval_ns`` from now on a fresh session (nothing waiting kept).

        Raises:
            BackendUnavailableError: CUPTI refused the new configuration.
        """
        self._shut()
        self.interval_ns = int(interval_ns)
        self._configure()
        self._start()

    def _release(self) -> None:
        """Release the last drain's image (its samples were evaluated by now)."""
        if self._image is not None:
            self._image.close()
            self._image = None

    def close(self) -> None:
        """Stop and disable PM sampling (what was not drained is dropped)."""
        self._shut()
        if self.owns_api:
            self.api.release()

    def _shut(self) -> None:
        """Release the image, stop if sampling, disable: nothing waiting is kept."""
        self._release()
        if self._running:
            with contextlib.suppress(Exception):
                self.api.stop()
            self._running = False
        self.api.disable()


def new_cupti_api(device_index: int, metrics: Sequence[str]) -> CuptiSampling:
    """CUPTI's PM sampling of ``metrics`` on CUDA device ``device_index`` (not enabled).

    Raises:
        BackendUnavailableError: cupti-python cannot be loaded.
    """
    try:
        return CuptiSampling(device_index, metrics)
    except Exception as exc:
        raise errors.explain(exc, started=False) from exc


def open_cupti_sampler(
    device_index: int, metrics: Sequence[str], interval_ns: int
) -> PmSampler:
    """A stopped :class:`PmSampler` on CUPTI for ``device_index``, its own api.

    Raises:
        BackendUnavailableError: cupti-python cannot be loaded, or CUPTI refused.
    """
    api = new_cupti_api(device_index, metrics)
    return PmSampler(api, metrics, interval_ns, owns_api=True)
