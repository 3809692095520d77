"""CUPTI PM sampling on one device, decoded into one kept image (cupti-python >= 13.4).

:class:`PmSampler` enables PM sampling and configures the metrics and the interval (GPU
time-interval trigger). It samples while runs go on: :meth:`~PmSampler.resume` when a
run begins, and :meth:`~PmSampler.drain` at each collection (the GPU idle) stops it
and decodes every sample since into a counter-data image that is kept and reused,
returning their timestamps as :class:`Chunk` objects; metric values are evaluated on
demand, only for the samples a region needs. Between regions of a long run,
:meth:`~PmSampler.pump` decodes while sampling goes on, so CUPTI's hardware buffer
never holds more than a fraction of a second.

**Why this shape.** Measured on the H200 (2026-12-01,
``benchmarks/results/pm_decode_probe_h200.json`` and ``pm_decode_variants_h200.json``):

- cupti-python's ``Collector.decode()`` builds a new image per call (31.6 MB for
  10,000 samples of the two DRAM metrics, 318 MB for the seven default counters: 20 ms
  and 186 ms just to allocate and initialise) and a new parameter struct per sample.
  With one kept image and kept structs the timestamps cost ~0.5 µs a sample and the
  evaluation of two metrics 2-5 µs.
- A decode appends to the image it is given; a full image reports
  ``COUNTER_DATA_FULL`` and, initialised again, the next decode continues where it
  stopped, live and after a stop alike (after a stop: 10,000 + 5,141 samples, DRAM
  bytes 1.00002 x the known total).
- Decoding costs ~5.5 µs a sample for the DRAM pair and ~40 µs for the seven default
  counters, so at a 20 µs interval live decoding cannot keep up with an idle GPU's
  samples: sampling is stopped while no run is going on, and nothing idle is decoded.
- The first sample after a start has no start time (0); it is taken to start one
  interval before its end.
- The kept image serves one start: samples decoded into it after a stop and a new
  start read as invalid metric names on evaluation, so every start gets a new image
  and evaluator (made while sampling is stopped, initialised after the start, as the
  first one is), sized by :data:`IMAGE_BYTES` so that making one costs a few ms.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.metadata
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from nsight_lab.backends.pm import errors
from nsight_lab.errors import MeasurementError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from numpy.typing import NDArray

    Needed = Callable[["Chunk"], NDArray[np.intp]]
    """Which samples of a chunk some region overlaps (their indices)."""

IMAGE_BYTES = 16 << 20
"""The counter-data image's size budget: its capacity in samples is what fits."""
MIN_CAPACITY = 256
MAX_CAPACITY = 10_000
"""Samples per image, whatever the budget: CUPTI refused much larger images."""
HARDWARE_BUFFER_BYTES = 512 << 20
"""The hardware buffer CUPTI samples into between decodes (cupti-python's default)."""
PUMP_S = 0.02
"""Between regions, decode if nothing was decoded for this long."""


class ImageApi(Protocol):
    """One kept counter-data image and the CUPTI calls on it (fakes in tests)."""

    @property
    def capacity(self) -> int:
        """How many samples the image holds."""

    def reinit(self) -> None:
        """Initialise the image again: empty, the next decode fills it from slot 0."""

    def decode(self) -> tuple[int, bool]:
        """Decode what CUPTI has into the image.

        Returns:
            The completed samples now in the image (all decodes since the last
            :meth:`reinit`), and whether the image is full.
        """

    def times(self, lo: int, hi: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Start and end times (ns, GPU global timer) of samples ``lo`` to ``hi``-1."""

    def evaluate(self, index: int) -> NDArray[np.float64]:
        """The metric values of sample ``index`` of the image."""


class ImageView:
    """Evaluates one chunk's samples in the image while it holds them."""

    def __init__(self, sampler: PmSampler, generation: int, offset: int) -> None:
        """The chunk's first sample is slot ``offset`` of image ``generation``."""
        self._sampler = sampler
        self._generation = generation
        self._offset = offset

    def __getitem__(self, index: int) -> NDArray[np.float64]:
        """The values of the chunk's ``index``-th sample.

        Raises:
            MeasurementError: The image was initialised again since (a chunk is
                readable until the next run begins).
        """
        if self._sampler.generation != self._generation:
            msg = "PM samples read after the next run began (their image was reused)"
            raise MeasurementError(msg)
        return self._sampler.image.evaluate(self._offset + index)


@dataclass
class Chunk:
    """One drain's samples of one image: timestamps at once, values on demand.

    Attributes:
        metrics: The metric of each value column.
        starts: Sample start times (ns, GPU global timer).
        ends: Sample end times.
        full: The image filled up during this decode (more samples followed).
    """

    metrics: tuple[str, ...]
    starts: NDArray[np.int64]
    ends: NDArray[np.int64]
    full: bool = False
    _data: Any = None
    """``_data[i]``: the values of sample ``i`` (an :class:`ImageView`, or in tests a
    stand-in whose items have ``metric_values``)."""
    _values: dict[int, NDArray[np.float64]] = field(default_factory=dict)

    def __len__(self) -> int:
        """The number of samples."""
        return len(self.starts)

    @property
    def evaluated(self) -> int:
        """How many samples' metric values have been evaluated."""
        return len(self._values)

    def values(self, indices: Sequence[int] | NDArray[np.intp]) -> NDArray[np.float64]:
        """The metric values of the samples ``indices`` (one row each), evaluated once.

        Raises:
            MeasurementError: CUPTI could not evaluate a sample.
        """
        width = len(self.metrics)
        out = np.zeros((len(indices), width))
        for row, index in enumerate(int(i) for i in indices):
            cached = self._values.get(index)
            if cached is None:
                if self._data is None:
                    msg = "PM sample values are gone (the chunk was released)"
                    raise MeasurementError(msg)
                try:
                    got = self._data[index]
                except MeasurementError:
                    raise
                except Exception as exc:
                    msg = (
                        f"CUPTI could not evaluate PM sample {index} "
                        f"({type(exc).__name__}: {exc}); check %nsight doctor"
                    )
                    raise MeasurementError(msg) from exc
                got = getattr(got, "metric_values", got)
                cached = np.asarray(got, dtype=np.float64)
                self._values[index] = cached
            out[row] = cached
        return out

    def all_values(self) -> NDArray[np.float64]:
        """Every sample's values (a fixture, a check of the totals, a full image)."""
        return self.values(np.arange(len(self)))


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


class CuptiImage:
    """:class:`ImageApi` over ``cupti.cupti``'s calls, with every struct kept.

    cupti-python's ``Collector.decode`` allocates an image and a parameter struct per
    sample on every call; these are made once here (see the module doc for why).
    """

    def __init__(self, collector: Any, metrics: Sequence[str]) -> None:  # noqa: ANN401
        """Size the image by :data:`IMAGE_BYTES` and make the structs.

        Args:
            collector: An enabled, configured ``cupti.pm_sampling.Collector``.
            metrics: The configured metrics, in value-column order.
        """
        from cupti import cupti

        self._cupti = cupti
        self._full = cupti.PmSamplingDecodeStopReason.COUNTER_DATA_FULL
        pm_object = collector._pm_sampling_object  # noqa: SLF001
        # The metric names as a C array owned here, for as long as the image lives
        # (the evaluation struct keeps pointing at it).
        self._name_bytes = [m.encode() for m in metrics]
        self._names = (ctypes.c_char_p * len(metrics))(*self._name_bytes)
        names_ptr = ctypes.addressof(self._names)
        size = cupti.PmSamplingGetCounterDataSizeParams()
        size.struct_size = cupti.PM_SAMPLING_GET_COUNTER_DATA_SIZE_PARAMS_STRUCT_SIZE
        size.p_pm_sampling_object = pm_object
        size.p_metric_names = names_ptr
        size.num_metrics = len(metrics)
        size.max_samples = 1000
        cupti.pm_sampling_get_counter_data_size(size.ptr)
        per_sample = max(1, int(size.counter_data_size) // 1000)
        self.capacity = int(
            min(MAX_CAPACITY, max(MIN_CAPACITY, IMAGE_BYTES // per_sample))
        )
        size.max_samples = self.capacity
        cupti.pm_sampling_get_counter_data_size(size.ptr)
        self._image = np.zeros(int(size.counter_data_size), dtype=np.uint8)
        self._structs(pm_object)
        self._evaluator(collector._chip_name, names_ptr, len(metrics))  # noqa: SLF001

    def _structs(self, pm_object: int) -> None:
        """The image's initialise, decode, info and sample-info parameter structs."""
        cupti = self._cupti
        address, length = self._image.ctypes.data, len(self._image)
        init = cupti.PmSamplingCounterDataImageInitializeParams()
        init.struct_size = (
            cupti.PM_SAMPLING_COUNTER_DATA_IMAGE_INITIALIZE_PARAMS_STRUCT_SIZE
        )
        init.p_pm_sampling_object = pm_object
        init.counter_data_size = length
        init.p_counter_data = address
        self._init = init
        decode = cupti.PmSamplingDecodeDataParams()
        decode.struct_size = cupti.PM_SAMPLING_DECODE_DATA_PARAMS_STRUCT_SIZE
        decode.p_pm_sampling_object = pm_object
        decode.p_counter_data_image = address
        decode.counter_data_image_size = length
        self._decode = decode
        info = cupti.PmSamplingGetCounterDataInfoParams()
        info.struct_size = cupti.PM_SAMPLING_GET_COUNTER_DATA_INFO_PARAMS_STRUCT_SIZE
        info.p_counter_data_image = address
        info.counter_data_image_size = length
        self._info = info
        sample = cupti.PmSamplingCounterDataGetSampleInfoParams()
        sample.struct_size = (
            cupti.PM_SAMPLING_COUNTER_DATA_GET_SAMPLE_INFO_PARAMS_STRUCT_SIZE
        )
        sample.p_pm_sampling_object = pm_object
        sample.p_counter_data_image = address
        sample.counter_data_image_size = length
        self._sample = sample

    def _evaluator(self, chip: str, names_ptr: int, count: int) -> None:
        """One profiler host and one evaluation struct, kept for every sample."""
        from cupti import profiler_host

        cupti = self._cupti
        self._host = profiler_host.ProfilerHost(
            chip, profiler_host.ProfilerType.PM_SAMPLING
        )
        self._host.initialize()
        self._values = np.zeros(count, dtype=np.float64)
        evaluate = cupti.ProfilerHostEvaluateToGpuValuesParams()
        evaluate.struct_size = (
            cupti.PROFILER_HOST_EVALUATE_TO_GPU_VALUES_PARAMS_STRUCT_SIZE
        )
        evaluate.p_host_object = self._host._p_host_object  # noqa: SLF001
        evaluate.p_counter_data_image = self._image.ctypes.data
        evaluate.counter_data_image_size = len(self._image)
        evaluate.pp_metric_names = names_ptr
        evaluate.num_metrics = count
        evaluate.p_metric_values = self._values.ctypes.data
        self._evaluate = evaluate

    def reinit(self) -> None:
        """Initialise the image again (CUPTI writes its empty sample records)."""
        self._cupti.pm_sampling_counter_data_image_initialize(self._init.ptr)

    def decode(self) -> tuple[int, bool]:
        """Decode into the image; the completed samples in it and whether it is full."""
        self._cupti.pm_sampling_decode_data(self._decode.ptr)
        self._cupti.pm_sampling_get_counter_data_info(self._info.ptr)
        completed = int(self._info.num_completed_samples)
        full = (
            int(self._decode.decode_stop_reason) == int(self._full)
            or completed >= self.capacity
        )
        return completed, full

    def times(self, lo: int, hi: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Start and end times of samples ``lo`` .. ``hi - 1``, one CUPTI call each."""
        starts = np.empty(max(0, hi - lo), dtype=np.int64)
        ends = np.empty_like(starts)
        sample, call = (
            self._sample,
            self._cupti.pm_sampling_counter_data_get_sample_info,
        )
        for row, index in enumerate(range(lo, hi)):
            sample.sample_index = index
            call(sample.ptr)
            starts[row] = sample.start_timestamp
            ends[row] = sample.end_timestamp
        return starts, ends

    def evaluate(self, index: int) -> NDArray[np.float64]:
        """Sample ``index``'s metric values (a copy)."""
        self._evaluate.range_index = index
        self._cupti.profiler_host_evaluate_to_gpu_values(self._evaluate.ptr)
        values: NDArray[np.float64] = self._values.copy()
        return values

    def close(self) -> None:
        """Release the profiler host object."""
        with contextlib.suppress(Exception):
            self._host.deinitialize()


@dataclass
class DrainStats:
    """How drains went (the benchmark and the cost report read it)."""

    decodes: int = 0
    reinits: int = 0
    flushes: int = 0
    """Drains that had to stop sampling to reach the batch's end."""
    eager_samples: int = 0
    """Samples evaluated ahead because their image filled up mid-drain."""


class PmSampler:
    """PM sampling on one device, with metrics and interval fixed when opened.

    Raises (from the constructor):
        BackendUnavailableError: CUPTI refused to enable or configure PM sampling
            (permission, nvperf libraries, old driver or GPU, busy).
    """

    def __init__(
        self,
        device_index: int,
        metrics: Sequence[str],
        interval_ns: int,
        *,
        buffer_bytes: int = HARDWARE_BUFFER_BYTES,
    ) -> None:
        """Enable, configure and start PM sampling on CUDA device ``device_index``."""
        try:
            from cupti import pm_sampling
        except Exception as exc:
            raise errors.explain(exc, started=False) from exc
        self._setup(
            pm_sampling.Collector(device_index),
            metrics,
            interval_ns,
            configure={
                "hardware_buffer_size": buffer_bytes,
                "trigger_mode": pm_sampling.TriggerMode.GPU_TIME_INTERVAL,
            },
        )

    @classmethod
    def over(
        cls,
        collector: Any,  # noqa: ANN401
        metrics: Sequence[str],
        interval_ns: int,
        image: ImageApi,
    ) -> PmSampler:
        """A sampler over a given collector and image (stand-ins in tests)."""
        sampler = cls.__new__(cls)
        sampler._setup(collector, metrics, interval_ns, configure={}, image=image)  # noqa: SLF001
        return sampler

    def _setup(
        self,
        collector: Any,  # noqa: ANN401
        metrics: Sequence[str],
        interval_ns: int,
        *,
        configure: dict[str, Any],
        image: ImageApi | None = None,
    ) -> None:
        self.metrics = tuple(metrics)
        self.interval_ns = int(interval_ns)
        self.stats = DrainStats()
        self.generation = 0
        self._running = False
        self._used = 0
        """Slots of the image already handed out in chunks."""
        self._last_decode = time.monotonic()
        self._pumped: list[Chunk] = []
        """Chunks decoded by :meth:`pump` since the last drain."""
        self._collector: Any = collector
        try:
            self._collector.enable()
        except Exception as exc:
            raise errors.explain(exc, started=False) from exc
        try:
            self._collector.configure(
                metrics=list(self.metrics),
                sampling_interval=self.interval_ns,
                **configure,
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
        self._given_image = image
        self._next_image: ImageApi | None = None
        try:
            self.image: ImageApi = self._new_image()
        except Exception as exc:
            self._disable()
            raise errors.explain(exc, started=False) from exc
        self._start()

    def _new_image(self) -> ImageApi:
        """A new image and evaluator, not initialised yet (tests: the stand-in)."""
        if self._given_image is not None:
            return self._given_image
        return CuptiImage(self._collector, self.metrics)

    def _start(self) -> None:
        try:
            self._collector.start()
            self._reinit()  # as measured on the H200: initialised after the start
        except Exception as exc:
            self._disable()
            raise errors.explain(exc, started=False) from exc
        self._running = True

    def _reinit(self) -> None:
        self.image.reinit()
        self.generation += 1
        self._used = 0
        self.stats.reinits += 1

    def _decode(self) -> tuple[int, bool]:
        try:
            got = self.image.decode()
        except Exception as exc:
            if errors.status_name(exc) == "ERROR_OUT_OF_MEMORY":
                raise MeasurementError(errors.OVERFLOW) from exc
            raise errors.explain(exc, started=True) from exc
        self.stats.decodes += 1
        self._last_decode = time.monotonic()
        return got

    def _evaluate_held(
        self, chunks: Sequence[Chunk], needed: Needed | None = None
    ) -> None:
        """Read the samples of ``chunks`` still in the image, before it is reused.

        Only those ``needed`` picks (the ones some region overlaps), else all.
        """
        for held in chunks:
            if not isinstance(held._data, ImageView):  # noqa: SLF001
                continue
            indices = needed(held) if needed is not None else np.arange(len(held))
            held.values(indices)
            self.stats.eager_samples += len(indices)
            held._data = None  # noqa: SLF001  (what was not read is not needed)

    def pump(self, *, every_s: float = PUMP_S) -> None:
        """Decode what CUPTI has now, if nothing was decoded for ``every_s``.

        Called between regions of a long run, so the hardware buffer is read while
        the run goes on; the samples are returned by the next :meth:`drain`.
        """
        if not self._running or time.monotonic() - self._last_decode < every_s:
            return
        completed, full = self._decode()
        chunk = self._take(completed, full=full)
        if chunk is not None:
            self._pumped.append(chunk)
        if full:
            self._evaluate_held(self._pumped)
            self._reinit()

    def _take(self, completed: int, *, full: bool) -> Chunk | None:
        """The samples decoded since the last take, as a chunk."""
        lo, hi = self._used, completed
        self._used = max(self._used, completed)
        if hi <= lo:
            return None
        starts, ends = self.image.times(lo, hi)
        # The first sample after a start has no start time (0 on the H200): it
        # began when sampling did, at most one interval before its end.
        unknown = starts <= 0
        starts[unknown] = np.maximum(ends[unknown] - self.interval_ns, 0)
        return Chunk(
            metrics=self.metrics,
            starts=starts,
            ends=ends,
            full=full,
            _data=ImageView(self, self.generation, lo),
        )

    def resume(self) -> None:
        """Sample again (a run begins), on an emptied image; nothing if sampling."""
        if self._running:
            return
        # After a stop and a start, samples decoded into the image of the last start
        # read as invalid metric names on the H200: each start gets the new image
        # made while sampling was stopped, initialised after the start, as the
        # first start's image is.
        fresh = self._next_image or self._new_image()
        self._next_image = None
        try:
            self._collector.start()
        except Exception as exc:
            raise errors.explain(exc, started=True) from exc
        old, self.image = self.image, fresh
        if old is not fresh:
            close = getattr(old, "close", None)
            if close is not None:
                close()
        self._running = True
        try:
            self._reinit()
        except Exception as exc:
            raise errors.explain(exc, started=True) from exc

    def drain(self, needed: Needed | None = None) -> list[Chunk]:
        """Stop sampling and decode every sample not yet handed out.

        Called with the GPU idle (a batch of runs is done): the stop makes CUPTI hand
        over every record, which is decoded image after image until the end;
        sampling stays stopped until :meth:`resume`, so the idle time before the
        next run is not sampled (or decoded) at all.

        Args:
            needed: Which samples of a chunk will be read (the ones overlapping a
                region): evaluated ahead when the image fills up mid-drain.

        Returns:
            The chunks in time order; their values are readable until the next
            :meth:`resume`.

        Raises:
            MeasurementError: Decoding failed, or the hardware buffer overflowed.
        """
        chunks, self._pumped = self._pumped, []
        if not self._running:
            return chunks
        try:
            self._collector.stop()
        except Exception as exc:
            raise errors.explain(exc, started=True) from exc
        self._running = False
        while True:
            completed, full = self._decode()
            chunk = self._take(completed, full=full)
            if chunk is not None:
                chunks.append(chunk)
            if not full:
                break
            # Read what the full image holds before it is used again.
            self._evaluate_held(chunks, needed)
            self._reinit()
        try:
            self._next_image = self._new_image()  # for the next start (see resume)
        except Exception as exc:
            raise errors.explain(exc, started=True) from exc
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
        for image in (getattr(self, "image", None), getattr(self, "_next_image", None)):
            close = getattr(image, "close", None)
            if close is not None:
                close()
        self._disable()
