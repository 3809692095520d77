"""The CUPTI calls of PM sampling, behind two small interfaces the samplers use.

:class:`SamplingApi` is one device's PM sampling for one metric set (enable and
configure, start, stop, disable) and the images its samples are decoded into;
:class:`ImageApi` is one counter-data image. :class:`CuptiSampling` and
:class:`CuptiImage` implement them on cupti-python's ``cupti.cupti`` calls; the CPU
replay of the tests implements them with the limits CUPTI showed on the H200
(``benchmarks/README.md``), so CI drives the real samplers and collector.

**Made once, kept** (the owner keeps a :class:`CuptiSampling` between cells,
:mod:`.keep`): the config image (the profiler host's scheduling of the metrics on the
chip), the profiler host that evaluates samples, every parameter struct, and the
image's memory. Enabling PM sampling (cupti-python's ``Collector.enable``/``disable``,
as before) and ``pm_sampling_set_config`` with the kept config image are what a
sampling session still costs; nothing stays enabled between cells.

**The order CUPTI needs, measured on the H200:** a decode appends to the image it is
given; once a decode has *filled* an image, what the next decode gives has zero
timestamps and no counts; after ``stop()`` and ``start()``, samples decoded *live*
(while sampling) evaluated as invalid metric names, and samples decoded into an image
made before the stop did too. So a stopped drain initialises an image after each
stop, decodes into it, and starts again (:class:`~.sampler.PmSampler`); a live decode
runs only on a session enabled and configured afresh, its image initialised before
the start (:class:`~.rolling.RollingSampler`). The first sample after a start has no
start time (0).
"""

from __future__ import annotations

import contextlib
import ctypes
from collections import Counter
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

HARDWARE_BUFFER_BYTES = 512 << 20
"""The hardware buffer CUPTI samples into between drains (cupti-python's default)."""
KEEP_IMAGE_BYTES = 64 << 20
"""Image memory kept between sessions; a larger one (a heavy metric set's) is freed
when its session ends."""


class ImageApi(Protocol):
    """One counter-data image and the CUPTI calls on it (fakes in tests)."""

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

    def evaluate_rows(self, indices: NDArray[np.intp]) -> NDArray[np.float64]:
        """The metric values of the samples ``indices``, one row each."""

    def close(self) -> None:
        """Done with this image (its memory and evaluator stay with the session)."""


class SamplingApi(Protocol):
    """PM sampling of one metric set on one device (fakes in tests)."""

    bytes_per_sample: int
    """Host memory an image needs per sample of the configured metrics."""

    def configure(self, interval_ns: int) -> None:
        """Enable PM sampling and set the metrics, the interval and the buffer."""

    def start(self) -> None:
        """Start sampling."""

    def stop(self) -> None:
        """Stop sampling; what was sampled waits to be decoded."""

    def image(self, capacity: int) -> ImageApi:
        """An initialised image for ``capacity`` samples."""

    def disable(self) -> None:
        """Disable PM sampling (what was not decoded is dropped); never raises."""

    def release(self) -> None:
        """Disable, and free what was kept (the owner is done with it)."""


def _struct(params: Any, size: int, **fields: Any) -> Any:  # noqa: ANN401
    """A CUPTI parameter struct with its size and ``fields`` set (kept for reuse)."""
    params.struct_size = size
    for name, value in fields.items():
        setattr(params, name, value)
    return params


class CuptiImage:
    """:class:`ImageApi` over the session's kept memory, structs and evaluator."""

    def __init__(self, owner: CuptiSampling, capacity: int, size: int) -> None:
        """Point the kept structs at the first ``size`` bytes; initialise them."""
        self._owner = owner
        self._cupti = owner.cupti
        self.capacity = int(capacity)
        self._closed = False
        address = owner.memory.ctypes.data
        for params in owner.image_structs():
            params.p_counter_data_image = address
            params.counter_data_image_size = size
        owner.init_params.p_counter_data = address
        owner.init_params.counter_data_size = size
        self._decode, self._info, self._sample, self._evaluate = (
            owner.decode_params,
            owner.info_params,
            owner.sample_params,
            owner.evaluate_params,
        )
        self.reinit()

    def reinit(self) -> None:
        """Initialise the image again (CUPTI writes its empty sample records)."""
        self._cupti.pm_sampling_counter_data_image_initialize(
            self._owner.init_params.ptr
        )

    def decode(self) -> tuple[int, bool]:
        """Decode into the image; the completed samples in it and whether it is full."""
        self._cupti.pm_sampling_decode_data(self._decode.ptr)
        self._cupti.pm_sampling_get_counter_data_info(self._info.ptr)
        completed = int(self._info.num_completed_samples)
        full = (
            int(self._decode.decode_stop_reason) == self._owner.full_reason
            or completed >= self.capacity
        )
        return completed, full

    def times(self, lo: int, hi: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Start and end times of samples ``lo`` .. ``hi - 1``, one CUPTI call each."""
        starts = np.empty(max(0, hi - lo), dtype=np.int64)
        ends = np.empty_like(starts)
        sample = self._sample
        call, ptr = self._cupti.pm_sampling_counter_data_get_sample_info, sample.ptr
        for row, index in enumerate(range(lo, hi)):
            sample.sample_index = index
            call(ptr)
            starts[row] = sample.start_timestamp
            ends[row] = sample.end_timestamp
        return starts, ends

    def evaluate(self, index: int) -> NDArray[np.float64]:
        """Sample ``index``'s metric values (a new array, CUPTI writes into it)."""
        row: NDArray[np.float64] = self.evaluate_rows(np.array([index], dtype=np.intp))[
            0
        ]
        return row

    def evaluate_rows(self, indices: NDArray[np.intp]) -> NDArray[np.float64]:
        """The values of ``indices``: CUPTI writes each row in place, one call each.

        Raises:
            RuntimeError: The image was closed (its memory holds another image now).
        """
        if self._closed:
            msg = "ERROR_INVALID_PARAMETER: the image was released"
            raise RuntimeError(msg)
        width = self._owner.width
        out: NDArray[np.float64] = np.empty((len(indices), width), dtype=np.float64)
        params, call = self._evaluate, self._cupti.profiler_host_evaluate_to_gpu_values
        base, step, ptr = out.ctypes.data, 8 * width, params.ptr
        for row, index in enumerate(indices.tolist()):
            params.range_index = index
            params.p_metric_values = base + row * step
            call(ptr)
        return out

    def close(self) -> None:
        """No more evaluations: the memory and the evaluator go on with the session."""
        self._closed = True


class CuptiSampling:
    """:class:`SamplingApi` over cupti-python, its costly parts made once (module doc).

    ``calls`` counts the CUPTI calls that set a session up (the benchmark's record).
    """

    def __init__(self, device_index: int, metrics: Sequence[str]) -> None:
        """Load cupti-python's PM sampling for ``device_index`` (nothing enabled)."""
        from cupti import cupti, pm_sampling  # noqa: PLC0415  (optional: cupti-python)

        self.cupti = cupti
        self._pm_sampling = pm_sampling
        self.metrics = tuple(metrics)
        self.width = len(self.metrics)
        self._collector: Any = pm_sampling.Collector(device_index)
        self._enabled = False
        self.bytes_per_sample = 0
        self.calls: Counter[str] = Counter()
        self.full_reason = int(cupti.PmSamplingDecodeStopReason.COUNTER_DATA_FULL)
        # The names as a C array owned here for as long as the structs point at it.
        self._name_bytes = [m.encode() for m in self.metrics]
        self._names = (ctypes.c_char_p * self.width)(*self._name_bytes)
        self._config: NDArray[np.uint8] | None = None
        self._host: Any = None
        self.memory: NDArray[np.uint8] = np.zeros(0, dtype=np.uint8)
        self._pm_object: int | None = None

    def configure(self, interval_ns: int) -> None:
        """Enable, then set the kept config image at ``interval_ns``.

        Raises:
            ValueError: CUPTI refused the configuration (not one pass, not supported).
        """
        if not self._enabled:
            self._collector.enable()
            self._enabled = True
            self.calls["enable"] += 1
        try:
            self._set_config(int(interval_ns))
        except BaseException:
            self.disable()
            raise

    def _set_config(self, interval_ns: int) -> None:
        cupti = self.cupti
        pm_object = self._collector._pm_sampling_object  # noqa: SLF001
        if pm_object != self._pm_object:  # a new session: its object in the structs
            self._pm_object = pm_object
            self._make_structs(pm_object)
        if self._config is None:
            self._config = self._config_image()
        params = self._set_params
        params.sampling_interval = interval_ns
        try:
            cupti.pm_sampling_set_config(params.ptr)
        except cupti.cuptiError as exc:
            if exc.status == cupti.Result.ERROR_NOT_SUPPORTED:
                msg = "not one pass, or time-interval triggers not supported here"
                raise ValueError(msg) from None
            raise
        self.calls["set_config"] += 1
        if not self.bytes_per_sample:
            self.bytes_per_sample = max(1, self._image_bytes(1000) // 1000)

    def _config_image(self) -> NDArray[np.uint8]:
        """The metrics' config image, from a profiler host of the chip (made once)."""
        from cupti import profiler_host  # noqa: PLC0415  (optional: cupti-python)

        self.calls["config_image"] += 1
        chip = self._collector._chip_name  # noqa: SLF001
        host = profiler_host.ProfilerHost(chip, profiler_host.ProfilerType.PM_SAMPLING)
        host.initialize()
        try:
            image: NDArray[np.uint8] = host.create_config_image(
                metrics=list(self.metrics)
            )
        finally:
            host.deinitialize()
        params = self._set_params
        params.p_config = image.ctypes.data
        params.config_size = len(image)
        return image

    def _make_structs(self, pm_object: int) -> None:
        """Every parameter struct of a session on ``pm_object`` (made once each)."""
        cupti, names = self.cupti, ctypes.addressof(self._names)
        on_object = {"p_pm_sampling_object": pm_object}
        self._set_params = _struct(
            cupti.PmSamplingSetConfigParams(),
            cupti.PM_SAMPLING_SET_CONFIG_PARAMS_STRUCT_SIZE,
            hardware_buffer_size=HARDWARE_BUFFER_BYTES,
            trigger_mode=self._pm_sampling.TriggerMode.GPU_TIME_INTERVAL,
            hw_buffer_append_mode=self._pm_sampling.HardwareBufferAppendMode.KEEP_OLDEST,
            **on_object,
        )
        if self._config is not None:
            self._set_params.p_config = self._config.ctypes.data
            self._set_params.config_size = len(self._config)
        self._start_params = _struct(
            cupti.PmSamplingStartParams(),
            cupti.PM_SAMPLING_START_PARAMS_STRUCT_SIZE,
            **on_object,
        )
        self._stop_params = _struct(
            cupti.PmSamplingStopParams(),
            cupti.PM_SAMPLING_STOP_PARAMS_STRUCT_SIZE,
            **on_object,
        )
        self._size_params = _struct(
            cupti.PmSamplingGetCounterDataSizeParams(),
            cupti.PM_SAMPLING_GET_COUNTER_DATA_SIZE_PARAMS_STRUCT_SIZE,
            p_metric_names=names,
            num_metrics=self.width,
            **on_object,
        )
        self.init_params = _struct(
            cupti.PmSamplingCounterDataImageInitializeParams(),
            cupti.PM_SAMPLING_COUNTER_DATA_IMAGE_INITIALIZE_PARAMS_STRUCT_SIZE,
            **on_object,
        )
        self.decode_params = _struct(
            cupti.PmSamplingDecodeDataParams(),
            cupti.PM_SAMPLING_DECODE_DATA_PARAMS_STRUCT_SIZE,
            **on_object,
        )
        self.info_params = _struct(
            cupti.PmSamplingGetCounterDataInfoParams(),
            cupti.PM_SAMPLING_GET_COUNTER_DATA_INFO_PARAMS_STRUCT_SIZE,
        )
        self.sample_params = _struct(
            cupti.PmSamplingCounterDataGetSampleInfoParams(),
            cupti.PM_SAMPLING_COUNTER_DATA_GET_SAMPLE_INFO_PARAMS_STRUCT_SIZE,
            **on_object,
        )

    def image_structs(self) -> tuple[Any, ...]:
        """The structs that point at the image (the image sets where)."""
        return (
            self.decode_params,
            self.info_params,
            self.sample_params,
            self.evaluate_params,
        )

    @property
    def evaluate_params(self) -> Any:  # noqa: ANN401  (a cupti struct)
        """The evaluation struct of the kept profiler host (made when first asked)."""
        if self._host is None:
            from cupti import profiler_host  # noqa: PLC0415  (optional: cupti-python)

            self.calls["evaluator"] += 1
            chip = self._collector._chip_name  # noqa: SLF001
            self._host = profiler_host.ProfilerHost(
                chip, profiler_host.ProfilerType.PM_SAMPLING
            )
            self._host.initialize()
            self._evaluate = _struct(
                self.cupti.ProfilerHostEvaluateToGpuValuesParams(),
                self.cupti.PROFILER_HOST_EVALUATE_TO_GPU_VALUES_PARAMS_STRUCT_SIZE,
                p_host_object=self._host._p_host_object,  # noqa: SLF001
                pp_metric_names=ctypes.addressof(self._names),
                num_metrics=self.width,
            )
        return self._evaluate

    def _image_bytes(self, capacity: int) -> int:
        """Bytes of an image of ``capacity`` samples of these metrics."""
        self._size_params.max_samples = capacity
        self.cupti.pm_sampling_get_counter_data_size(self._size_params.ptr)
        return int(self._size_params.counter_data_size)

    def start(self) -> None:
        """``pm_sampling_start``."""
        self.cupti.pm_sampling_start(self._start_params.ptr)

    def stop(self) -> None:
        """``pm_sampling_stop``."""
        self.cupti.pm_sampling_stop(self._stop_params.ptr)

    def image(self, capacity: int) -> CuptiImage:
        """An image of ``capacity`` samples in the kept memory, initialised."""
        size = self._image_bytes(capacity)
        if len(self.memory) < size:
            self.memory = np.zeros(size, dtype=np.uint8)
        return CuptiImage(self, capacity, size)

    def disable(self) -> None:
        """``Collector.disable`` (never raises); a large image's memory is freed."""
        if self._enabled:
            self._enabled = False
            self.calls["disable"] += 1
            with contextlib.suppress(Exception):
                self._collector.disable()
        if self.memory.nbytes > KEEP_IMAGE_BYTES:
            self.memory = np.zeros(0, dtype=np.uint8)

    def release(self) -> None:
        """Disable, free the image memory and the profiler host (never raises)."""
        self.disable()
        self.memory = np.zeros(0, dtype=np.uint8)
        host, self._host = self._host, None
        if host is not None:
            with contextlib.suppress(Exception):
                host.deinitialize()
