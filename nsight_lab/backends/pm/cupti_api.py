"""Decoding PM samples while sampling goes on: one kept image, one decoder thread.

**Why a thread.** CUPTI decodes a PM sample in ~5-9 µs for the two DRAM counters on the
H200 (``benchmarks/results/pm_decode_probe_h200.json``); at the default 20 µs interval
that is a third of the sampled time. Decoding at each collection, with the GPU idle,
adds all of it to the cell's wall time (the stopped sampler's 25-50x). Decoded in a
thread while the GPU runs the next runs, it costs the cell only the host time the
thread takes from the cell's own Python: ``cupti.cupti``'s calls release the GIL, so
the thread's decode runs beside the kernel launches and the cell's synchronize.

**The order CUPTI needs, measured on the H200** (``pm_decode_probe_h200.json``,
``live_20us``: 39,752 samples decoded live in 61 decodes, no gap between decodes, DRAM
bytes 1.00005x the known total):

- the image and its evaluator are made (and the image initialised) before sampling
  starts, and sampling is never stopped and started again while the image is used
  (after a restart, samples decoded into an image made before it evaluated as
  invalid metric names);
- a decode appends to the image, and an image initialised again before a decode
  is filled from its first slot; but once a decode has *filled* an image, what the
  next one decodes has zero timestamps and no counts
  (``benchmarks/results/pm_live_probe_h200.json``): so the image is initialised
  again whenever it is half used, and a decode that fills it is an error;
- the first sample after the start has no start time (0): it began at most one
  interval before its end.

Every sample is evaluated in the thread as it is decoded (the image is reused), so
the main thread only waits, at a collection, until the thread has decoded past the
batch's last kernel (:meth:`LiveDecoder.wait_past`).
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from nsight_lab.backends.pm import errors
from nsight_lab.backends.pm.sampler import Chunk
from nsight_lab.errors import MeasurementError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

CAPACITY = 10_000
"""Samples per image at most: the largest CUPTI takes."""
IMAGE_BYTES = 64 << 20
"""A live image's size budget: 10,000 samples of the DRAM pair (31.6 MB, ~5 ms to
initialise again, once per 100 ms at 20 µs), ~2,000 of the seven default counters
(an image costs ~32 KB a sample for them)."""
PERIOD_S = 0.004
"""The thread decodes this often (~200 samples at 20 µs)."""
WAIT_S = 10.0
"""A collection waits at most this long for the thread to decode past its batch."""
TOO_SLOW = 1.5
"""A thread busy for more than this multiple of the sampled time cannot keep up: the
sampler decodes stopped (judged at open, before any run, and again at each
collection). Two DRAM counters at 20 µs kept the thread busy for 0.69-1.03 of the
sampled time on the H200 (decode, timestamps, evaluation: 14-20 µs a sample) and
keep up, as the thread catches up while a collection waits for the idle GPU; four
counters took 1.9, seven 2.8-4.1."""
JUDGE_AFTER = 1_000
"""Samples decoded before the thread's pace is judged."""
CALIBRATE_S = 0.005
"""Sampling time decoded at open to judge the pace before any run (250 samples at
20 µs): short, because a set that decodes too slowly leaves a backlog of the judged
samples times its pace, which must fit in the image's free half after the stop."""


class ImageApi(Protocol):
    """One kept counter-data image and the CUPTI calls on it (fakes in tests)."""

    capacity: int

    def reinit(self) -> None:
        """Initialise the image again: empty, the next decode fills it from slot 0."""

    def decode(self) -> tuple[int, bool]:
        """Decode what CUPTI has into the image (appending).

        Returns:
            The completed samples now in the image, and whether it is full.
        """

    def times(self, lo: int, hi: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Start and end times (ns, GPU global timer) of samples ``lo`` .. ``hi``-1."""

    def evaluate(self, index: int) -> NDArray[np.float64]:
        """The metric values of sample ``index`` of the image."""

    def close(self) -> None:
        """Release what the image holds in CUPTI."""


def _struct(params: Any, size: int, **fields: Any) -> Any:  # noqa: ANN401
    """A CUPTI parameter struct with its size and ``fields`` set (kept for reuse)."""
    params.struct_size = size
    for name, value in fields.items():
        setattr(params, name, value)
    return params


class CuptiImage:
    """:class:`ImageApi` over ``cupti.cupti``'s calls, with every struct kept.

    cupti-python's ``Collector.decode`` makes an image, a profiler host and a
    parameter struct per sample on every call; here each is made once.
    """

    def __init__(
        self,
        collector: Any,  # noqa: ANN401  (an enabled, configured pm_sampling.Collector)
        metrics: Sequence[str],
        capacity: int | None = CAPACITY,
    ) -> None:
        """Make the image, its structs and its evaluator.

        Args:
            collector: An enabled, configured ``cupti.pm_sampling.Collector``.
            metrics: The configured metrics, in value-column order.
            capacity: Samples the image holds; None sizes it by
                :data:`IMAGE_BYTES` (at most :data:`CAPACITY`).
        """
        from cupti import cupti

        self._cupti = cupti
        self._full = int(cupti.PmSamplingDecodeStopReason.COUNTER_DATA_FULL)
        pm_object = collector._pm_sampling_object  # noqa: SLF001
        # The names as a C array owned here for as long as the structs point at it.
        self._name_bytes = [m.encode() for m in metrics]
        self._names = (ctypes.c_char_p * len(metrics))(*self._name_bytes)
        names_ptr = ctypes.addressof(self._names)
        size = _struct(
            cupti.PmSamplingGetCounterDataSizeParams(),
            cupti.PM_SAMPLING_GET_COUNTER_DATA_SIZE_PARAMS_STRUCT_SIZE,
            p_pm_sampling_object=pm_object,
            p_metric_names=names_ptr,
            num_metrics=len(metrics),
        )
        if capacity is None:
            size.max_samples = 1000
            cupti.pm_sampling_get_counter_data_size(size.ptr)
            per_sample = max(1, int(size.counter_data_size) // 1000)
            capacity = max(256, min(CAPACITY, IMAGE_BYTES // per_sample))
        size.max_samples = int(capacity)
        cupti.pm_sampling_get_counter_data_size(size.ptr)
        self.capacity = int(capacity)
        self._image = np.zeros(int(size.counter_data_size), dtype=np.uint8)
        address, length = self._image.ctypes.data, len(self._image)
        on_image = {"counter_data_image_size": length, "p_counter_data_image": address}
        self._init = _struct(
            cupti.PmSamplingCounterDataImageInitializeParams(),
            cupti.PM_SAMPLING_COUNTER_DATA_IMAGE_INITIALIZE_PARAMS_STRUCT_SIZE,
            p_pm_sampling_object=pm_object,
            counter_data_size=length,
            p_counter_data=address,
        )
        self._decode = _struct(
            cupti.PmSamplingDecodeDataParams(),
            cupti.PM_SAMPLING_DECODE_DATA_PARAMS_STRUCT_SIZE,
            p_pm_sampling_object=pm_object,
            **on_image,
        )
        self._info = _struct(
            cupti.PmSamplingGetCounterDataInfoParams(),
            cupti.PM_SAMPLING_GET_COUNTER_DATA_INFO_PARAMS_STRUCT_SIZE,
            **on_image,
        )
        self._sample = _struct(
            cupti.PmSamplingCounterDataGetSampleInfoParams(),
            cupti.PM_SAMPLING_COUNTER_DATA_GET_SAMPLE_INFO_PARAMS_STRUCT_SIZE,
            p_pm_sampling_object=pm_object,
            **on_image,
        )
        self.reinit()
        self._evaluator(collector._chip_name, names_ptr, len(metrics))  # noqa: SLF001

    def _evaluator(self, chip: str, names_ptr: int, count: int) -> None:
        """One profiler host and one evaluation struct, kept for every sample."""
        from cupti import profiler_host

        cupti = self._cupti
        self._host = profiler_host.ProfilerHost(
            chip, profiler_host.ProfilerType.PM_SAMPLING
        )
        self._host.initialize()
        self._count = count
        self._evaluate = _struct(
            cupti.ProfilerHostEvaluateToGpuValuesParams(),
            cupti.PROFILER_HOST_EVALUATE_TO_GPU_VALUES_PARAMS_STRUCT_SIZE,
            p_host_object=self._host._p_host_object,  # noqa: SLF001
            p_counter_data_image=self._image.ctypes.data,
            counter_data_image_size=len(self._image),
            pp_metric_names=names_ptr,
            num_metrics=count,
        )

    def reinit(self) -> None:
        """Initialise the image again (CUPTI writes its empty sample records)."""
        self._cupti.pm_sampling_counter_data_image_initialize(self._init.ptr)

    def decode(self) -> tuple[int, bool]:
        """Decode into the image; the completed samples in it and whether it is full."""
        self._cupti.pm_sampling_decode_data(self._decode.ptr)
        self._cupti.pm_sampling_get_counter_data_info(self._info.ptr)
        completed = int(self._info.num_completed_samples)
        full = (
            int(self._decode.decode_stop_reason) == self._full
            or completed >= self.capacity
        )
        return completed, full

    def times(self, lo: int, hi: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Start and end times of samples ``lo`` .. ``hi - 1``, one CUPTI call each."""
        starts = np.empty(max(0, hi - lo), dtype=np.int64)
        ends = np.empty_like(starts)
        sample = self._sample
        call = self._cupti.pm_sampling_counter_data_get_sample_info
        for row, index in enumerate(range(lo, hi)):
            sample.sample_index = index
            call(sample.ptr)
            starts[row] = sample.start_timestamp
            ends[row] = sample.end_timestamp
        return starts, ends

    def evaluate(self, index: int) -> NDArray[np.float64]:
        """Sample ``index``'s metric values (a new array, CUPTI writes into it)."""
        values: NDArray[np.float64] = np.empty(self._count, dtype=np.float64)
        self._evaluate.range_index = index
        self._evaluate.p_metric_values = values.ctypes.data
        self._cupti.profiler_host_evaluate_to_gpu_values(self._evaluate.ptr)
        return values

    def close(self) -> None:
        """Release the profiler host object."""
        with contextlib.suppress(Exception):
            self._host.deinitialize()


class LiveDecoder:
    """Decodes and evaluates PM samples in a thread while sampling goes on.

    Start the sampling after making this (its image must predate the start), then
    :meth:`run`. :meth:`take` hands over the samples decoded so far;
    :meth:`finish` (after sampling stopped) decodes the rest and ends the thread.
    """

    def __init__(
        self,
        image: ImageApi,
        metrics: Sequence[str],
        interval_ns: int,
        *,
        period_s: float = PERIOD_S,
    ) -> None:
        """Decode ``image`` every ``period_s`` once :meth:`run` is called."""
        self.image = image
        self.metrics = tuple(metrics)
        self.interval_ns = int(interval_ns)
        self.period_s = period_s
        self.last_end = 0
        """End time (GPU ns) of the last sample decoded."""
        self.samples = 0
        self.busy_s = 0.0
        """Time the thread spent decoding and evaluating."""
        self.reinits = 0
        self._used = 0
        self.repaired = 0
        """Samples whose missing start time was taken from the one before."""
        self.zeros: list[dict[str, Any]] = []
        """Where CUPTI gave zero timestamps (the benchmark reports them)."""
        self._lock = threading.Lock()
        self._decoded: list[Chunk] = []
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def duty(self) -> float:
        """Decoding time per sampled time (above 1 the thread falls behind)."""
        sampled = self.samples * self.interval_ns / 1e9
        return self.busy_s / sampled if sampled else 0.0

    @property
    def behind(self) -> bool:
        """The thread cannot keep up with the sampling (see :data:`TOO_SLOW`)."""
        return self.samples >= JUDGE_AFTER and self.duty > TOO_SLOW

    @property
    def alive(self) -> bool:
        """The decoding thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def run(self) -> None:
        """Start the decoding thread."""
        self._thread = threading.Thread(
            target=self._loop, name="nsight-lab-pm-decode", daemon=True
        )
        self._thread.start()

    def _loop(self) -> None:
        try:
            while not self._stop.wait(self.period_s):
                self.step()
        except BaseException as exc:  # noqa: BLE001  (handed to the main thread)
            self._error = exc

    def step(self) -> int:
        """Decode what CUPTI has now, evaluate it, keep it; the samples it added.

        Raises:
            MeasurementError: The decode filled the image (more samples were waiting
                than half an image holds).
        """
        started = time.perf_counter()
        if self._used * 2 >= self.image.capacity:
            # Room for half an image before each decode, so that no decode fills
            # it: after a full image, what CUPTI decodes next has no timestamps.
            self.image.reinit()
            self.reinits += 1
            self._used = 0
        completed, full = self.image.decode()
        chunk, self._used = self._read(self._used, completed)
        added = 0 if chunk is None else len(chunk)
        if chunk is not None:
            with self._lock:
                self._decoded.append(chunk)
                self.last_end = max(self.last_end, int(chunk.ends[-1]))
        self.samples += added
        self.busy_s += time.perf_counter() - started
        if full:
            raise MeasurementError(errors.STUCK.format(limit=self.image.capacity))
        return added

    def _read(self, lo: int, hi: int) -> tuple[Chunk | None, int]:
        """Samples ``lo`` .. ``hi``-1 of the image, timestamps and values.

        Returns:
            The chunk (None if empty) and the first slot not taken: samples at the
            end that have no end time yet are left for the next decode.
        """
        if hi <= lo:
            return None, lo
        starts, ends = self.image.times(lo, hi)
        taken = self._complete(starts, ends, lo)
        if taken == 0:
            return None, lo
        starts, ends = starts[:taken], ends[:taken]
        self._repair(starts, ends)
        values = {i: self.image.evaluate(lo + i) for i in range(taken)}
        chunk = Chunk(metrics=self.metrics, starts=starts, ends=ends, _values=values)
        return chunk, lo + taken

    def _complete(
        self, starts: NDArray[np.int64], ends: NDArray[np.int64], lo: int
    ) -> int:
        """How many of these samples are complete (the rest wait or were cut).

        Samples without an end time (0) at the end of what was decoded are taken
        to be intervals CUPTI has not closed yet: they are left for the next
        decode, and dropped at :meth:`finish` (after a stop, such an interval was
        cut short). One without an end followed by samples with one cannot be
        placed: a lost sample (on the H200 they came after a full image).

        Raises:
            MeasurementError: A sample without an end time is followed by others.
        """
        no_start = np.flatnonzero(starts <= 0)
        no_end = np.flatnonzero(ends <= 0)
        if len(no_start) or len(no_end):
            self.zeros.append(
                {
                    "slot": lo,
                    "n": len(starts),
                    "reinits": self.reinits,
                    "decoded": self.samples,
                    "no_start": no_start[:8].tolist(),
                    "no_start_count": len(no_start),
                    "no_end": no_end[:8].tolist(),
                    "no_end_count": len(no_end),
                }
            )
        if len(no_end) == 0:
            return len(ends)
        first = int(no_end[0])
        if len(no_end) != len(ends) - first:  # an end missing before others
            raise MeasurementError(
                errors.FELL_BEHIND.format(us=self.interval_ns / 1000)
            )
        return first

    def _repair(self, starts: NDArray[np.int64], ends: NDArray[np.int64]) -> None:
        """Give a sample with no start time (0) the end of the one before it.

        CUPTI leaves the start of the first sample after a start at 0; samples
        follow each other without gaps, so its start is the last sample's end, or
        one interval before its own end where there is none.
        """
        for i in np.flatnonzero(starts <= 0):
            before = int(ends[i - 1]) if i > 0 else self.last_end
            end = int(ends[i])
            fits = 0 < before < end and end - before <= 2 * self.interval_ns
            starts[i] = before if fits else max(end - self.interval_ns, 0)
            self.repaired += 1

    def _raise_error(self) -> None:
        error = self._error
        if error is None:
            return
        if isinstance(error, MeasurementError):
            raise error
        raise errors.explain(error, started=True) from error

    def wait_past(self, until_ns: int, timeout_s: float = WAIT_S) -> None:
        """Wait until a decoded sample ends at or after ``until_ns`` (GPU ns).

        Raises:
            MeasurementError: The thread failed, or did not get there in time.
        """
        deadline = time.monotonic() + timeout_s
        while self.last_end < until_ns:
            self._raise_error()
            if not self.alive:
                self.step()  # no thread running: decode here
                if self.last_end >= until_ns:
                    break
            if time.monotonic() > deadline:
                msg = errors.FELL_BEHIND.format(us=self.interval_ns / 1000)
                raise MeasurementError(msg)
            time.sleep(self.period_s / 4)
        self._raise_error()

    def take(self) -> list[Chunk]:
        """The samples decoded since the last take, in time order."""
        with self._lock:
            out, self._decoded = self._decoded, []
        return out

    def halt(self) -> None:
        """End the thread (its decode in flight first): call before stopping CUPTI.

        Raises:
            MeasurementError: The thread had failed.
        """
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._raise_error()

    def finish(self) -> list[Chunk]:
        """End the thread, decode what is left (sampling stopped), hand over all.

        Raises:
            MeasurementError: The thread failed, or more was waiting than an image
                holds.
        """
        self.halt()
        while self.step():
            pass
        return self.take()

    def abandon(self) -> None:
        """End the thread without reading further (closing after a failure)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.image.close()
