"""Our own decode of CUPTI PM sampling (cupti-python >= 13.4's low-level calls).

:class:`PmSampler` enables PM sampling on one device through
``cupti.pm_sampling.Collector`` (enable, configure, start, stop, disable), and decodes
with the same ``cupti.cupti`` calls ``Collector.decode`` makes, without its costs:

- **one counter-data image per chunk slot, reused**: ``Collector.decode`` allocates and
  initializes a fresh image per call and builds a ``CounterData`` that initializes a
  profiler host of its own; here the images are allocated once and re-initialized
  per decode, and one profiler host (made at open) evaluates every sample;
- **timestamps read lazily**: ``Collector.decode`` asks
  ``pm_sampling_counter_data_get_sample_info`` for every completed sample (tens of µs
  each from Python, more than the 20 µs the sample covers). A :class:`Chunk` asks only
  for the samples some region can overlap: GPU time-interval samples are ordered in
  time, so the samples overlapping ``[t0, t1)`` are one index range, found by an
  interpolation-guarded binary search (a few probes, each cached);
- **values evaluated on demand** (``profiler_host_evaluate_to_gpu_values``), only for
  the samples some region has a share of;
- **decoding while sampling runs** (NVIDIA's PM sampling sample decodes from another
  thread while sampling goes on), which spares the stop and start. Where CUPTI refuses
  that, the sampler stops, decodes and starts again, and remembers it for the process
  (:data:`LIVE_DECODE`).

**Never more than one image of samples waiting.** A decode fills an image of at most
``max_samples`` samples; 10,000 is the largest seen to work (``max_samples=100000``
raised ``ERROR_UNKNOWN`` on the H200), and a decode that filled its image dropped what
came after it (the next decode did not continue). The collector therefore drains
before ``max_samples`` samples can be waiting (:meth:`PmSampler.waiting_samples`), and
:func:`decode_all` still raises rather than lose samples silently when a chunk comes
back full and the next one does not continue after it (:data:`~.errors.STUCK`).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from nsight_lab.backends.pm import errors
from nsight_lab.errors import MeasurementError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

MAX_DECODE_SAMPLES = 10_000
"""Samples per decode: the largest ``max_samples`` seen to work (see the module doc)."""
MAX_CHUNKS = 64
"""Decodes per drain before giving up (a drain should need one)."""
EXPECTED_SHARE = 0.9
"""A drain that decoded less than this share of the samples its time implies, ending
on a full chunk, lost samples."""
HARDWARE_BUFFER_BYTES = 512 << 20
"""The hardware buffer CUPTI samples into between drains (cupti-python's default)."""
LIVE_RETRIES = 3
"""Decodes while running that may come back short of the batch's last kernel (its
last sample not yet complete) before the sampler stops to decode the rest."""

LIVE_DECODE: dict[str, bool] = {}
"""Per process: whether decoding while sampling runs worked (``"ok"``) or failed."""


class SampleSource(Protocol):
    """Where a :class:`Chunk` reads a sample's timestamps and values (one image)."""

    def info(self, index: int) -> tuple[int, int]:
        """The ``index``-th completed sample's start and end (ns, GPU global timer)."""

    def evaluate(self, index: int) -> NDArray[np.float64]:
        """The ``index``-th completed sample's metric values."""


class ArraySource:
    """Samples already in memory (a fixture, a test, a later cupti-python)."""

    def __init__(
        self,
        starts: Sequence[int] | NDArray[np.int64],
        ends: Sequence[int] | NDArray[np.int64],
        values: NDArray[np.float64] | None = None,
    ) -> None:
        """Hold the timestamps and (optionally) one row of values per sample."""
        self.starts = np.asarray(starts, dtype=np.int64)
        self.ends = np.asarray(ends, dtype=np.int64)
        self.table = values
        self.infos = 0
        """How many timestamps were asked for (tests check the laziness)."""

    def info(self, index: int) -> tuple[int, int]:
        """The sample's timestamps."""
        self.infos += 1
        return int(self.starts[index]), int(self.ends[index])

    def evaluate(self, index: int) -> NDArray[np.float64]:
        """The sample's values.

        Raises:
            MeasurementError: No values were given.
        """
        if self.table is None:
            msg = "PM sample values are not recorded here (timestamps only)"
            raise MeasurementError(msg)
        return np.asarray(self.table[index], dtype=np.float64)


@dataclass
class Chunk:
    """One decode's samples: timestamps and metric values read on demand, cached.

    Attributes:
        metrics: The metric of each value column.
        size: Completed samples in the decode.
        full: The decode filled its image (more samples may have followed).
        source: Where timestamps and values come from.
    """

    metrics: tuple[str, ...]
    size: int
    full: bool
    source: SampleSource
    _starts: dict[int, int] = field(default_factory=dict)
    _ends: dict[int, int] = field(default_factory=dict)
    _values: dict[int, NDArray[np.float64]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        metrics: Sequence[str],
        starts: Sequence[int] | NDArray[np.int64],
        ends: Sequence[int] | NDArray[np.int64],
        values: NDArray[np.float64] | None = None,
        *,
        full: bool = False,
    ) -> Chunk:
        """A chunk over samples in memory (fixtures and tests)."""
        source = ArraySource(starts, ends, values)
        return cls(tuple(metrics), len(source.starts), full, source)

    def __len__(self) -> int:
        """The number of samples."""
        return self.size

    @property
    def evaluated(self) -> int:
        """How many samples' metric values have been evaluated."""
        return len(self._values)

    @property
    def timed(self) -> int:
        """How many samples' timestamps have been read."""
        return len(self._starts)

    def time(self, index: int) -> tuple[int, int]:
        """The ``index``-th sample's start and end (read once).

        Raises:
            MeasurementError: CUPTI could not read it.
        """
        start = self._starts.get(index)
        if start is None:
            try:
                start, end = self.source.info(index)
            except MeasurementError:
                raise
            except Exception as exc:
                msg = (
                    f"CUPTI could not read PM sample {index}'s time "
                    f"({type(exc).__name__}: {exc}); check %nsight doctor"
                )
                raise MeasurementError(msg) from exc
            self._starts[index] = int(start)
            self._ends[index] = int(end)
            return int(start), int(end)
        return start, self._ends[index]

    def _first(self, t: float, *, by_end: bool) -> int:
        """The first index whose end (``by_end``) is > ``t``, or start >= ``t``.

        Samples are ordered in time, so the answer splits the indices in two; an
        interpolation step (samples are nearly evenly spaced) alternates with a
        bisection step, so it takes a few probes and never more than 2 log2(n).
        """

        def key(i: int) -> int:
            start, end = self.time(i)
            return end if by_end else start

        def passes(value: int) -> bool:
            return value > t if by_end else value >= t

        lo, hi = 0, self.size
        step = 0
        while lo < hi:
            guess = (lo + hi) // 2
            if step % 2 == 0 and hi - lo > 2:  # noqa: PLR2004
                first, last = key(lo), key(hi - 1)
                if last > first:
                    share = (t - first) / (last - first)
                    guess = lo + round(share * (hi - 1 - lo))
                    guess = min(max(guess, lo), hi - 1)
            step += 1
            if passes(key(guess)):
                hi = guess
            else:
                lo = guess + 1
        return lo

    def index_range(self, t0: float, t1: float) -> tuple[int, int]:
        """``[lo, hi)``: the samples that can overlap ``[t0, t1)``."""
        if self.size == 0 or t1 <= t0:
            return 0, 0
        lo = self._first(t0, by_end=True)
        hi = self._first(t1, by_end=False)
        return lo, max(lo, hi)

    def times(
        self, indices: Sequence[int] | NDArray[np.intp]
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Starts and ends of the samples ``indices``."""
        pairs = [self.time(int(i)) for i in indices]
        starts = np.array([p[0] for p in pairs], dtype=np.int64)
        ends = np.array([p[1] for p in pairs], dtype=np.int64)
        return starts, ends

    @property
    def starts(self) -> NDArray[np.int64]:
        """Every sample's start (reads every timestamp: fixtures and checks only)."""
        return self.times(range(self.size))[0]

    @property
    def ends(self) -> NDArray[np.int64]:
        """Every sample's end (reads every timestamp: fixtures and checks only)."""
        return self.times(range(self.size))[1]

    def values(self, indices: Sequence[int] | NDArray[np.intp]) -> NDArray[np.float64]:
        """The metric values of the samples ``indices`` (one row each), evaluated once.

        Raises:
            MeasurementError: CUPTI could not evaluate a sample.
        """
        out = np.zeros((len(indices), len(self.metrics)))
        for row, index in enumerate(int(i) for i in indices):
            cached = self._values.get(index)
            if cached is None:
                try:
                    cached = np.asarray(self.source.evaluate(index), dtype=np.float64)
                except MeasurementError:
                    raise
                except Exception as exc:
                    msg = (
                        f"CUPTI could not evaluate PM sample {index} "
                        f"({type(exc).__name__}: {exc}); check %nsight doctor"
                    )
                    raise MeasurementError(msg) from exc
                self._values[index] = cached
            out[row] = cached
        return out

    def all_values(self) -> NDArray[np.float64]:
        """Every sample's values (a fixture or a check of the totals)."""
        return self.values(np.arange(self.size))


class Decoder(Protocol):
    """Decodes the samples waiting in the hardware buffer into image ``slot``."""

    def decode(self, slot: int) -> Chunk:
        """The next samples, at most one image's worth.

        Raises:
            MeasurementError: The hardware buffer overflowed.
        """


def _continues(chunks: list[Chunk], chunk: Chunk, expected: int | None) -> bool:
    """Whether ``chunk`` continues after the full ``chunks[-1]`` (nothing lost)."""
    previous = chunks[-1]
    previous_end = previous.time(len(previous) - 1)[1] if len(previous) else 0
    if len(chunk):
        return chunk.time(0)[0] >= previous_end
    decoded = sum(len(c) for c in chunks)
    return expected is None or decoded >= EXPECTED_SHARE * expected


def decode_all(
    decoder: Decoder,
    *,
    max_chunks: int = MAX_CHUNKS,
    expected: int | None = None,
    first_slot: int = 0,
    explain: bool = True,
) -> list[Chunk]:
    """Decode every sample waiting in the hardware buffer, chunk by chunk.

    A full chunk followed by an empty one is the end only if that many samples were
    expected: with ``expected`` (the sampling time over the interval) and fewer than
    90 % of it decoded, the decode is taken to have stopped early.

    Args:
        decoder: Decodes into image slots.
        max_chunks: Give up after this many full chunks.
        expected: Samples the time since the last drain implies, if known.
        first_slot: The image slot of the first chunk (earlier ones are in use).
        explain: Turn CUPTI's errors into one-line errors (False: raise them as
            they are, for the caller to fall back).

    Returns:
        The chunks in time order (each in its own image slot from ``first_slot``).

    Raises:
        MeasurementError: A full chunk was not followed by one that continues
            after it, there were more than ``max_chunks`` of them, the hardware
            buffer overflowed, or CUPTI failed to decode.
    """
    chunks: list[Chunk] = []
    limit = 0
    while True:
        try:
            chunk = decoder.decode(first_slot + len(chunks))
        except MeasurementError:
            raise
        except Exception as exc:
            if chunks and chunks[-1].full:
                raise MeasurementError(errors.STUCK.format(limit=limit)) from exc
            if not explain:
                raise
            raise errors.explain(exc, started=True) from exc
        if chunks and chunks[-1].full and not _continues(chunks, chunk, expected):
            raise MeasurementError(errors.STUCK.format(limit=limit))
        limit = max(limit, len(chunk))
        if len(chunk):
            chunks.append(chunk)
        if not chunk.full:
            return chunks
        if len(chunks) >= max_chunks:
            raise MeasurementError(
                errors.TOO_MANY_CHUNKS.format(limit=max_chunks * len(chunk))
            )


def cupti_version() -> str | None:
    """The installed cupti-python's version, or None."""
    try:
        return importlib.metadata.version("cupti-python")
    except importlib.metadata.PackageNotFoundError:
        return None


def chip_name(device_index: int) -> str:
    """CUPTI's name of the chip of CUDA device ``device_index`` (``"GH100"``).

    Raises:
        BackendUnavailableError: CUPTI cannot be loaded or does not know the device.
    """
    try:
        from cupti import cupti
    except Exception as exc:
        raise errors.explain(exc, started=False) from exc

    def ask() -> str:
        params = cupti.DeviceGetChipNameParams()
        params.struct_size = cupti.DEVICE_GET_CHIP_NAME_PARAMS_STRUCT_SIZE
        params.device_index = device_index
        cupti.device_get_chip_name(params.ptr)
        return str(params.p_chip_name)

    with contextlib.suppress(Exception):  # asked again with the profiler initialized
        return ask()
    # cupti.pm_sampling.Collector.enable initializes the profiler before it asks;
    # do the same, and undo it (the profiler is initialized again when enabled).
    try:
        init = cupti.ProfilerInitializeParams()
        init.struct_size = cupti.PROFILER_INITIALIZE_PARAMS_STRUCT_SIZE
        cupti.profiler_initialize(init.ptr)
        try:
            return ask()
        finally:
            done = cupti.ProfilerDeInitializeParams()
            done.struct_size = cupti.PROFILER_DEINITIALIZE_PARAMS_STRUCT_SIZE
            cupti.profiler_deinitialize(done.ptr)
    except Exception as exc:
        raise errors.explain(exc, started=False) from exc


class CuptiMetricsHost:
    """The profiler host API of one chip: config images and their passes (no GPU)."""

    def __init__(self, chip: str) -> None:
        """Remember the chip; CUPTI is loaded when first asked."""
        self.chip = chip
        self._names: list[str] | None = None

    def passes(self, metrics: Sequence[str]) -> int:
        """The passes PM sampling needs for ``metrics``.

        Raises:
            ValueError: A metric is unknown on this chip for PM sampling.
        """
        from cupti import profiler_host

        host = profiler_host.ProfilerHost(
            self.chip, profiler_host.ProfilerType.PM_SAMPLING
        )
        host.initialize()
        try:
            image = host.create_config_image(metrics=list(metrics))
            return int(profiler_host.get_num_of_passes(image))
        except ValueError:
            raise
        except Exception as exc:
            # GH100 answered ERROR_INVALID_PARAMETER (not cupti-python's ValueError)
            # for a metric PM sampling does not know: a refusal like any other.
            if errors.status_name(exc) in errors.REFUSED_STATUSES:
                msg = f"PM sampling does not take {', '.join(metrics)} ({exc})"
                raise ValueError(msg) from exc
            raise
        finally:
            host.deinitialize()

    def names(self) -> list[str]:
        """Every metric PM sampling knows on this chip: base metrics and sub-metrics."""
        if self._names is None:
            from cupti import profiler_host

            host = profiler_host.ProfilerHost(
                self.chip, profiler_host.ProfilerType.PM_SAMPLING
            )
            host.initialize()
            found: list[str] = []
            try:
                for kind in profiler_host.MetricType:
                    if kind.name.startswith("_"):
                        continue
                    for base in host.get_base_metrics(kind):
                        found.append(base)
                        with contextlib.suppress(ValueError):
                            found += host.get_sub_metrics(base, kind)
            finally:
                host.deinitialize()
            self._names = sorted(set(found))
        return self._names


class ImageSource:
    """The samples of one decode, read from its image while the image holds them."""

    def __init__(self, decoder: ImageDecoder, slot: int, generation: int) -> None:
        """Read image ``slot`` as long as it is not decoded into again."""
        self.decoder = decoder
        self.slot = slot
        self.generation = generation

    def _check(self) -> None:
        if self.decoder.generations[self.slot] != self.generation:
            msg = (
                "PM samples read after their image was decoded into again "
                "(a bug in nsight-lab: attribute a drain before the next one)"
            )
            raise MeasurementError(msg)

    def info(self, index: int) -> tuple[int, int]:
        """``pm_sampling_counter_data_get_sample_info`` of the sample."""
        self._check()
        return self.decoder.sample_info(self.slot, index)

    def evaluate(self, index: int) -> NDArray[np.float64]:
        """``profiler_host_evaluate_to_gpu_values`` of the sample."""
        self._check()
        return self.decoder.evaluate(self.slot, index)


class ImageDecoder:
    """``Collector.decode``'s calls, into counter-data images kept and reused.

    Raises (from the constructor):
        Exception: What CUPTI raised sizing the image or initializing the host.
    """

    def __init__(
        self,
        collector: Any,  # noqa: ANN401  (an enabled, configured pm_sampling.Collector)
        metrics: Sequence[str],
        max_samples: int = MAX_DECODE_SAMPLES,
    ) -> None:
        """Size the images for ``max_samples`` and open one profiler host."""
        from cupti import cupti, profiler_host
        from cupti.utils import metrics_to_c_array

        self._cupti = cupti
        self._object = collector._pm_sampling_object  # noqa: SLF001
        self.metrics = tuple(metrics)
        self.max_samples = int(max_samples)
        # Keep the C array alive as long as its pointer is used.
        self._names, names_ptr = metrics_to_c_array(list(self.metrics))
        self._names_ptr = names_ptr
        self._values = np.zeros(len(self.metrics), dtype=np.float64)
        self._evaluate: Any = None
        self._evaluated = False
        self.evaluate_error = ""
        """Why the kept evaluation struct was given up, if it was."""
        size = cupti.PmSamplingGetCounterDataSizeParams()
        size.struct_size = cupti.PM_SAMPLING_GET_COUNTER_DATA_SIZE_PARAMS_STRUCT_SIZE
        size.p_pm_sampling_object = self._object
        size.p_metric_names = names_ptr
        size.num_metrics = len(self.metrics)
        size.max_samples = self.max_samples
        cupti.pm_sampling_get_counter_data_size(size.ptr)
        self.image_bytes = int(size.counter_data_size)
        self.images: list[NDArray[np.uint8]] = []
        self.generations: list[int] = []
        self._full = int(cupti.PmSamplingDecodeStopReason.COUNTER_DATA_FULL)
        self._info = cupti.PmSamplingCounterDataGetSampleInfoParams()
        self._info.struct_size = (
            cupti.PM_SAMPLING_COUNTER_DATA_GET_SAMPLE_INFO_PARAMS_STRUCT_SIZE
        )
        self._info.p_pm_sampling_object = self._object
        self._host: Any = profiler_host.ProfilerHost(
            collector._chip_name,  # noqa: SLF001
            profiler_host.ProfilerType.PM_SAMPLING,
        )
        self._host.initialize()
        self.last_stop_reason: int | None = None
        self.last_init_s = 0.0
        """Re-initializing the image of the last decode (the benchmark reads it)."""
        self.last_decode_s = 0.0
        """``pm_sampling_decode_data`` of the last decode."""

    def image(self, slot: int) -> NDArray[np.uint8]:
        """Image ``slot``, (re-)initialized for a decode; allocated the first time."""
        while len(self.images) <= slot:
            self.images.append(np.zeros(self.image_bytes, dtype=np.uint8))
            self.generations.append(0)
        image = self.images[slot]
        self.generations[slot] += 1
        init = self._cupti.PmSamplingCounterDataImageInitializeParams()
        init.struct_size = (
            self._cupti.PM_SAMPLING_COUNTER_DATA_IMAGE_INITIALIZE_PARAMS_STRUCT_SIZE
        )
        init.p_pm_sampling_object = self._object
        init.counter_data_size = len(image)
        init.p_counter_data = image.ctypes.data
        self._cupti.pm_sampling_counter_data_image_initialize(init.ptr)
        return image

    def decode(self, slot: int) -> Chunk:
        """Decode what the hardware buffer holds into image ``slot``.

        Raises:
            MeasurementError: The hardware buffer overflowed.
        """
        cupti = self._cupti
        started = time.perf_counter()
        image = self.image(slot)
        initialized = time.perf_counter()
        params = cupti.PmSamplingDecodeDataParams()
        params.struct_size = cupti.PM_SAMPLING_DECODE_DATA_PARAMS_STRUCT_SIZE
        params.p_pm_sampling_object = self._object
        params.p_counter_data_image = image.ctypes.data
        params.counter_data_image_size = len(image)
        try:
            cupti.pm_sampling_decode_data(params.ptr)
        except cupti.cuptiError as exc:
            if exc.status == cupti.Result.ERROR_OUT_OF_MEMORY:
                raise MeasurementError(errors.OVERFLOW) from exc
            raise
        self.last_init_s = initialized - started
        self.last_decode_s = time.perf_counter() - initialized
        if int(params.overflow):
            raise MeasurementError(errors.OVERFLOW)
        self.last_stop_reason = int(params.decode_stop_reason)
        info = cupti.PmSamplingGetCounterDataInfoParams()
        info.struct_size = cupti.PM_SAMPLING_GET_COUNTER_DATA_INFO_PARAMS_STRUCT_SIZE
        info.p_counter_data_image = image.ctypes.data
        info.counter_data_image_size = len(image)
        cupti.pm_sampling_get_counter_data_info(info.ptr)
        completed = int(info.num_completed_samples)
        full = self.last_stop_reason == self._full or completed >= self.max_samples
        source = ImageSource(self, slot, self.generations[slot])
        return Chunk(self.metrics, completed, full, source)

    def sample_info(self, slot: int, index: int) -> tuple[int, int]:
        """One sample's start and end in image ``slot`` (one reused params struct)."""
        image = self.images[slot]
        params = self._info
        params.p_counter_data_image = image.ctypes.data
        params.counter_data_image_size = len(image)
        params.sample_index = index
        self._cupti.pm_sampling_counter_data_get_sample_info(params.ptr)
        return int(params.start_timestamp), int(params.end_timestamp)

    def _evaluator(self) -> Any:  # noqa: ANN401  (a cupti params struct)
        """One ``profiler_host_evaluate_to_gpu_values`` params struct, kept.

        ``ProfilerHost.evaluate_metric_values`` builds the metric-name array, the
        struct and the output array on every call; a drain evaluates dozens of
        samples, so they are built once here.
        """
        cupti = self._cupti
        params = cupti.ProfilerHostEvaluateToGpuValuesParams()
        params.struct_size = (
            cupti.PROFILER_HOST_EVALUATE_TO_GPU_VALUES_PARAMS_STRUCT_SIZE
        )
        params.p_host_object = self._host._p_host_object  # noqa: SLF001
        params.pp_metric_names = self._names_ptr
        params.num_metrics = len(self.metrics)
        params.p_metric_values = self._values.ctypes.data
        return params

    def evaluate(self, slot: int, index: int) -> NDArray[np.float64]:
        """One sample's metric values in image ``slot``."""
        image = self.images[slot]
        if self._evaluate is None:
            try:
                self._evaluate = self._evaluator()
            except Exception:  # noqa: BLE001  (a later cupti-python: its own call)
                self._evaluate = False
        if self._evaluate is False:
            values = self._host.evaluate_metric_values(
                counter_data_image=image, metrics=list(self.metrics), index=index
            )
            return np.asarray(values, dtype=np.float64)
        params = self._evaluate
        params.p_counter_data_image = image.ctypes.data
        params.counter_data_image_size = len(image)
        params.range_index = index
        try:
            self._cupti.profiler_host_evaluate_to_gpu_values(params.ptr)
        except Exception as exc:
            if self._evaluated:
                raise
            # The kept struct failed on its first use: cupti-python's own call,
            # from now on (and its error, if it fails too).
            self.evaluate_error = f"{type(exc).__name__}: {exc}"
            self._evaluate = False
            return self.evaluate(slot, index)
        self._evaluated = True
        out: NDArray[np.float64] = self._values.copy()
        return out

    def close(self) -> None:
        """Release the profiler host and the images."""
        with contextlib.suppress(Exception):
            self._host.deinitialize()
        self.images.clear()


@dataclass
class SamplerStats:
    """How the drains went (the benchmark reports it)."""

    drains: int = 0
    live_decodes: int = 0
    """Decodes while sampling ran."""
    live_short: int = 0
    """Live decodes that ended before the batch's last kernel (retried)."""
    stops: int = 0
    """Drains that stopped sampling to decode (the fallback)."""
    live_error: str = ""
    holds: int = 0
    """Decodes kept for the next drain (a run longer than one image)."""
    discards: int = 0
    """Decodes dropped (samples of idle time before a run)."""
    discard_resets: int = 0
    """Discards that had to stop and start sampling (too many idle samples)."""
    live_gaps: int = 0
    """Live decodes that did not start where the last one ended (see _check_gap)."""
    live_gap_ns: int = 0
    chunks: int = 0
    full_chunks: int = 0


class PmSampler:
    """PM sampling on one device, with metrics and interval fixed when opened.

    Raises (from the constructor):
        BackendUnavailableError: CUPTI refused to enable or configure PM sampling
            (permission, nvperf libraries, old driver or GPU, busy).
    """

    def __init__(  # noqa: PLR0913  (keyword-only settings)
        self,
        device_index: int,
        metrics: Sequence[str],
        interval_ns: int,
        *,
        buffer_bytes: int = HARDWARE_BUFFER_BYTES,
        max_samples: int = MAX_DECODE_SAMPLES,
        live: bool = True,
    ) -> None:
        """Enable, configure and start PM sampling; size the decode images."""
        try:
            from cupti import pm_sampling
        except Exception as exc:
            raise errors.explain(exc, started=False) from exc
        self.metrics = tuple(metrics)
        self.interval_ns = int(interval_ns)
        self.max_samples = int(max_samples)
        self.live = live
        """Try decoding while sampling runs (unless this process saw it fail)."""
        self.stats = SamplerStats()
        self._held: list[Chunk] = []
        self._last_end: int | None = None
        self._collector: Any = pm_sampling.Collector(device_index)
        self._running = False
        self._since_ns = 0
        try:
            self._collector.enable()
        except Exception as exc:
            raise errors.explain(exc, started=False) from exc
        try:
            self._collector.configure(
                metrics=list(self.metrics),
                sampling_interval=self.interval_ns,
                trigger_mode=pm_sampling.TriggerMode.GPU_TIME_INTERVAL,
                hardware_buffer_size=buffer_bytes,
            )
        except ValueError as exc:
            self._disable()
            why = (
                f"PM sampling refused the configuration ({exc}); check the metrics "
                "with %nsight doctor, or use --backend ncu"
            )
            raise errors.unavailable(why) from exc
        except Exception as exc:
            self._disable()
            raise errors.explain(exc, started=False) from exc
        try:
            self._decoder = ImageDecoder(self._collector, self.metrics, max_samples)
        except Exception as exc:
            self._disable()
            raise errors.explain(exc, started=False) from exc
        self._start()

    def _start(self) -> None:
        try:
            self._collector.start()
        except Exception as exc:
            self._disable()
            raise errors.explain(exc, started=False) from exc
        self._running = True
        self._since_ns = time.perf_counter_ns()

    def waiting_samples(self) -> float:
        """About how many samples wait in the hardware buffer (time over interval)."""
        if not self._running:
            return 0.0
        return (time.perf_counter_ns() - self._since_ns) / self.interval_ns

    def _expected(self, now_ns: int) -> int:
        return int((now_ns - self._since_ns) // self.interval_ns)

    def _decode_live(self, until_ns: int | None, first_slot: int) -> list[Chunk] | None:
        """Decode without stopping; None when CUPTI refused (remembered)."""
        chunks: list[Chunk] = []
        for attempt in range(LIVE_RETRIES + 1):
            now = time.perf_counter_ns()
            try:
                got = decode_all(
                    self._decoder,
                    expected=self._expected(now) if attempt == 0 else None,
                    first_slot=first_slot + len(chunks),
                    explain=False,
                )
            except MeasurementError:
                raise
            except Exception as exc:  # noqa: BLE001  (CUPTI refused: stop instead)
                LIVE_DECODE["ok"] = False
                self.stats.live_error = f"{type(exc).__name__}: {exc}"
                return chunks or None
            self.stats.live_decodes += 1
            self._since_ns = now
            self._check_gap(got)
            chunks += got
            last = chunks[-1].time(len(chunks[-1]) - 1)[1] if chunks else None
            if until_ns is None or (last is not None and last >= until_ns):
                LIVE_DECODE["ok"] = True
                return chunks
            # The sample holding the batch's last kernel end is not complete yet:
            # wait a little longer each time (CUPTI may hand records over late).
            self.stats.live_short += 1
            waits = (2 * self.interval_ns / 1e9, 1e-3, 5e-3)
            time.sleep(waits[min(attempt, len(waits) - 1)])
        return chunks

    def _check_gap(self, chunks: list[Chunk]) -> None:
        """Count samples missing between two decodes while sampling ran.

        Decodes while sampling runs should continue where the last one ended; a
        gap means CUPTI dropped the sample in flight at the decode (harmless when
        the GPU was idle then, as at a drain; not when a hold ran mid-run).
        """
        if not chunks or not len(chunks[0]):
            return
        first = chunks[0].time(0)[0]
        if (
            self._last_end is not None
            and first - self._last_end >= self.interval_ns // 2
        ):
            self.stats.live_gaps += 1
            self.stats.live_gap_ns += first - self._last_end
        self._last_end = (
            chunks[-1].time(len(chunks[-1]) - 1)[1] if len(chunks[-1]) else None
        )

    def drain(
        self, *, until_ns: int | None = None, restart: bool = True
    ) -> list[Chunk]:
        """Decode everything sampled so far (while running, or stopped and restarted).

        The chunks stay readable until the next drain (their images are reused).

        Args:
            until_ns: The last kernel end (GPU global timer) the samples must cover;
                a live decode that ends before it is retried, then sampling is
                stopped to decode the rest.
            restart: Keep sampling afterwards (False: leave it stopped).

        Raises:
            MeasurementError: Decoding failed or would lose samples.
        """
        self.stats.drains += 1
        held, self._held = self._held, []
        chunks = self._drain(until_ns=until_ns, restart=restart, first_slot=len(held))
        return self._count(held + chunks)

    def hold(self) -> None:
        """Decode what waits now and keep it for the next :meth:`drain`.

        For a run that goes on longer than one image of samples: call it with the
        GPU idle (a decode that has to stop sampling takes no samples meanwhile).

        Raises:
            MeasurementError: Decoding failed or would lose samples.
        """
        self.stats.holds += 1
        self._held += self._drain(
            until_ns=None, restart=True, first_slot=len(self._held)
        )

    def discard(self) -> None:
        """Decode and drop what waits (nothing is pending that needs it).

        Raises:
            BackendUnavailableError: Sampling could not be started again.
        """
        self.stats.discards += 1
        try:
            self._drain(until_ns=None, restart=True, first_slot=len(self._held))
        except MeasurementError:
            # Too many idle samples to decode whole: none of them is needed, so
            # start over with an empty buffer instead.
            self.stats.discard_resets += 1
            with contextlib.suppress(Exception):
                self._collector.stop()
            self._running = False
            self._start()

    def _drain(
        self, *, until_ns: int | None, restart: bool, first_slot: int
    ) -> list[Chunk]:
        chunks: list[Chunk] = []
        if self._running and restart and self.live and LIVE_DECODE.get("ok", True):
            live = self._decode_live(until_ns, first_slot)
            if live is not None:
                chunks = live
                last = chunks[-1].time(len(chunks[-1]) - 1)[1] if chunks else None
                if until_ns is None or (last is not None and last >= until_ns):
                    return chunks
                # Decoding while running never reached the batch's end: CUPTI may
                # hand records over only at a stop here. Stop from now on.
                LIVE_DECODE["ok"] = False
                self.stats.live_error = "live decodes ended before the last kernel"
        expected = None
        if self._running:
            try:
                self._collector.stop()
            except Exception as exc:
                raise errors.explain(exc, started=True) from exc
            self._running = False
            self._last_end = None  # no sample while stopped: gaps are expected
            self.stats.stops += 1
            expected = self._expected(time.perf_counter_ns())
        chunks += decode_all(
            self._decoder, expected=expected, first_slot=first_slot + len(chunks)
        )
        if restart:
            try:
                self._collector.start()
            except Exception as exc:
                raise errors.explain(exc, started=True) from exc
            self._running = True
            self._since_ns = time.perf_counter_ns()
        return chunks

    def _count(self, chunks: list[Chunk]) -> list[Chunk]:
        self.stats.chunks += len(chunks)
        self.stats.full_chunks += sum(c.full for c in chunks)
        return chunks

    def _disable(self) -> None:
        with contextlib.suppress(Exception):
            self._collector.disable()

    def close(self) -> None:
        """Stop and disable PM sampling (what was not drained is dropped)."""
        if self._running:
            with contextlib.suppress(Exception):
                self._collector.stop()
            self._running = False
        decoder = getattr(self, "_decoder", None)
        if decoder is not None:
            decoder.close()
        self._disable()
