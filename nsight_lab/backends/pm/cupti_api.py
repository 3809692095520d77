"""The CUPTI calls of PM sampling, behind two small interfaces the sampler uses.

:class:`SamplingApi` is one device's PM sampling session (enable and configure, start,
stop, disable) and the images its samples are decoded into; :class:`ImageApi` is one
counter-data image. :class:`CuptiSampling` and :class:`CuptiImage` implement them on
cupti-python's ``cupti.cupti`` calls, every parameter struct made once; the CPU replay
of the tests implements them with the limits CUPTI showed on the H200
(``benchmarks/README.md``), so CI drives the real sampler and collector.

**The order CUPTI needs, measured on the H200:** a decode appends to the image it is
given; once a decode has *filled* an image, what the next decode gives has zero
timestamps and no counts; after ``stop()`` and ``start()``, samples decoded into an
image made before the stop (or initialised after the start) evaluate as invalid
metric names. So an image is made after each stop, sized for the samples waiting,
decoded into, and released before the next stop (:class:`~.sampler.PmSampler`).
The first sample after a start has no start time (0).
"""

from __future__ import annotations

import contextlib
import ctypes
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

HARDWARE_BUFFER_BYTES = 512 << 20
"""The hardware buffer CUPTI samples into between drains (cupti-python's default)."""


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


def _image_bytes(
    cupti: Any,  # noqa: ANN401  (cupti-python's cupti module)
    pm_object: Any,  # noqa: ANN401
    names_ptr: int,
    count: int,
    capacity: int,
) -> int:
    """Bytes of a counter data image of ``capacity`` samples of ``count`` metrics."""
    size = _struct(
        cupti.PmSamplingGetCounterDataSizeParams(),
        cupti.PM_SAMPLING_GET_COUNTER_DATA_SIZE_PARAMS_STRUCT_SIZE,
        p_pm_sampling_object=pm_object,
        p_metric_names=names_ptr,
        num_metrics=count,
    )
    size.max_samples = capacity
    cupti.pm_sampling_get_counter_data_size(size.ptr)
    return int(size.counter_data_size)


class CuptiImage:
    """:class:`ImageApi` over ``cupti.cupti``'s calls, with every struct kept.

    cupti-python's ``Collector.decode`` makes an image, a profiler host and a
    parameter struct per sample on every call; here each is made once.
    """

    def __init__(
        self,
        collector: Any,  # noqa: ANN401  (an enabled, configured pm_sampling.Collector)
        metrics: Sequence[str],
        capacity: int,
    ) -> None:
        """Make the image, its structs and its evaluator.

        Args:
            collector: An enabled, configured ``cupti.pm_sampling.Collector``.
            metrics: The configured metrics, in value-column order.
            capacity: Samples the image holds.
        """
        from cupti import cupti  # noqa: PLC0415  (optional: cupti-python)

        self._cupti = cupti
        self._full = int(cupti.PmSamplingDecodeStopReason.COUNTER_DATA_FULL)
        pm_object = collector._pm_sampling_object  # noqa: SLF001
        # The names as a C array owned here for as long as the structs point at it.
        self._name_bytes = [m.encode() for m in metrics]
        self._names = (ctypes.c_char_p * len(metrics))(*self._name_bytes)
        names_ptr = ctypes.addressof(self._names)
        self.capacity = int(capacity)
        size = _image_bytes(cupti, pm_object, names_ptr, len(metrics), self.capacity)
        self._image = np.zeros(size, dtype=np.uint8)
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

    @staticmethod
    def bytes_per_sample(collector: Any, metrics: Sequence[str]) -> int:  # noqa: ANN401
        """Image bytes per sample for ``metrics`` (asked for 1,000 samples)."""
        from cupti import cupti  # noqa: PLC0415  (optional: cupti-python)

        names = [m.encode() for m in metrics]
        array = (ctypes.c_char_p * len(names))(*names)
        size = _struct(
            cupti.PmSamplingGetCounterDataSizeParams(),
            cupti.PM_SAMPLING_GET_COUNTER_DATA_SIZE_PARAMS_STRUCT_SIZE,
            p_pm_sampling_object=collector._pm_sampling_object,  # noqa: SLF001
            p_metric_names=ctypes.addressof(array),
            num_metrics=len(names),
            max_samples=1000,
        )
        cupti.pm_sampling_get_counter_data_size(size.ptr)
        return max(1, int(size.counter_data_size) // 1000)

    def _evaluator(self, chip: str, names_ptr: int, count: int) -> None:
        """One profiler host and one evaluation struct, kept for every sample."""
        from cupti import profiler_host  # noqa: PLC0415  (optional: cupti-python)

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


class SamplingApi(Protocol):
    """PM sampling on one device (fakes in tests)."""

    bytes_per_sample: int
    """Host memory an image needs per sample of the configured metrics."""

    def configure(self, interval_ns: int) -> None:
        """Enable PM sampling and set the metrics, the interval and the buffer."""

    def start(self) -> None:
        """Start sampling."""

    def stop(self) -> None:
        """Stop sampling; what was sampled waits to be decoded."""

    def image(self, capacity: int) -> ImageApi:
        """A new, initialised image for ``capacity`` samples (made after a stop)."""

    def disable(self) -> None:
        """Disable PM sampling (what was not decoded is dropped)."""


class CuptiSampling:
    """:class:`SamplingApi` over ``cupti.pm_sampling.Collector``."""

    def __init__(self, device_index: int, metrics: Sequence[str]) -> None:
        """Load cupti-python's PM sampling for ``device_index`` (nothing enabled)."""
        from cupti import pm_sampling  # noqa: PLC0415  (optional: cupti-python)

        self._pm_sampling = pm_sampling
        self.metrics = tuple(metrics)
        self._collector: Any = pm_sampling.Collector(device_index)
        self.bytes_per_sample = 0

    def configure(self, interval_ns: int) -> None:
        """Enable and configure (raises ``ValueError`` for a refused configuration)."""
        self._collector.enable()
        try:
            self._collector.configure(
                metrics=list(self.metrics),
                sampling_interval=int(interval_ns),
                trigger_mode=self._pm_sampling.TriggerMode.GPU_TIME_INTERVAL,
                hardware_buffer_size=HARDWARE_BUFFER_BYTES,
            )
        except BaseException:
            self.disable()
            raise
        self.bytes_per_sample = CuptiImage.bytes_per_sample(
            self._collector, self.metrics
        )

    def start(self) -> None:
        """``Collector.start``."""
        self._collector.start()

    def stop(self) -> None:
        """``Collector.stop``."""
        self._collector.stop()

    def image(self, capacity: int) -> CuptiImage:
        """A :class:`CuptiImage` of ``capacity`` samples."""
        return CuptiImage(self._collector, self.metrics, capacity)

    def disable(self) -> None:
        """``Collector.disable`` (never raises)."""
        with contextlib.suppress(Exception):
            self._collector.disable()
