"""The thin wrapper of ``cupti.pm_sampling`` (cupti-python >= 13.4) and its host API.

:class:`PmSampler` enables PM sampling on one device, configures the metrics and the
interval (GPU time-interval trigger) and starts it. It decodes live, in a thread
(:mod:`.live`), where CUPTI decodes faster than it samples; otherwise each
:meth:`~PmSampler.drain` stops it, decodes everything sampled since the last drain
and starts it again. The collector drains only while the GPU is idle (after a
synchronize), so nothing runs while sampling is stopped.

**Past 10,000 samples.** An image holds at most 10,000 samples
(``decode(max_samples=100000)`` raised ``ERROR_UNKNOWN`` on the H200), and after a
decode has filled one, CUPTI's next decode gives samples without timestamps or
counts, into a new image or the same one initialised again (cupti-python's
``decode`` then silently dropped everything past the 10,000th sample). So no decode
may fill an image: live, the thread decodes every few ms into an image that always
has half its room free, for as many samples as the cell makes; stopped, a
collection may find at most 10,000 (0.2 s at 20 µs; collections come every 0.1 s).
A decode that fills its image is an error (:data:`~.errors.STUCK`), never a
silent cut.

**Evaluating.** A sample's metric values are computed on the host
(``profiler_host_evaluate_to_gpu_values``, which CUPTI notes is expensive), once, as
it is decoded, through one kept struct.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from nsight_lab.backends.pm import errors
from nsight_lab.errors import MeasurementError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

HARDWARE_BUFFER_BYTES = 512 << 20
"""The hardware buffer CUPTI samples into between drains (cupti-python's default)."""


@dataclass
class Chunk:
    """One decode's samples: their timestamps and metric values.

    The live decoder evaluates every sample as it decodes it (``_values``); a
    recorded fixture or a test may give ``_data`` instead, whose items have the
    ``metric_values`` of one sample, evaluated when first asked for.

    Attributes:
        metrics: The metric of each value column.
        starts: Sample start times (ns, GPU global timer).
        ends: Sample end times.
    """

    metrics: tuple[str, ...]
    starts: NDArray[np.int64]
    ends: NDArray[np.int64]
    _data: Any = None
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
                    sample = self._data[index]
                except Exception as exc:
                    msg = (
                        f"CUPTI could not evaluate PM sample {index} "
                        f"({type(exc).__name__}: {exc}); check %nsight doctor"
                    )
                    raise MeasurementError(msg) from exc
                cached = np.asarray(sample.metric_values, dtype=np.float64)
                self._values[index] = cached
            out[row] = cached
        return out

    def all_values(self) -> NDArray[np.float64]:
        """Every sample's values (a fixture or a check of the totals)."""
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


class PmSampler:
    """PM sampling on one device, with metrics and interval fixed when opened.

    Two ways to read the samples, chosen by how fast CUPTI decodes them:

    - **live** (first): sampling runs from open to close and a thread decodes while
      the GPU works (:mod:`.live`); a collection only waits for the thread to pass
      its batch's last kernel.
    - **stopped**: where the live thread cannot keep up (busy more than
      :data:`.live.TOO_SLOW` times the sampled time: the seven default counters at
      20 µs on the H200 took 56-80 µs a sample), each collection stops sampling,
      decodes into an image made after the stop, and starts again. The cell then
      waits for every decode.

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
        """Enable, configure and start PM sampling; judge the pace (see the doc)."""
        try:
            from cupti import pm_sampling
        except Exception as exc:
            raise errors.explain(exc, started=False) from exc
        self.metrics = tuple(metrics)
        self.interval_ns = int(interval_ns)
        self._collector: Any = pm_sampling.Collector(device_index)
        self._running = False
        self._decoder: Any = None
        self.pace: dict[str, Any] = {}
        """The live thread's samples, busy seconds and duty, once it ended."""
        self.stopped_zeros: list[dict[str, Any]] = []
        """Where stopped decodes met zero timestamps (the benchmark reports them)."""
        self.note: str | None = None
        """Why sampling went from live to stopped, once it did."""
        self._pm_sampling, self._buffer_bytes = pm_sampling, buffer_bytes
        self._configure()
        from nsight_lab.backends.pm.live import CuptiImage, LiveDecoder

        try:  # the image predates the start (see .live)
            image = CuptiImage(self._collector, self.metrics, capacity=None)
        except Exception as exc:
            self._disable()
            raise errors.explain(exc, started=False) from exc
        self._decoder = LiveDecoder(image, self.metrics, self.interval_ns)
        self._start()
        try:
            self._calibrate()
        except MeasurementError:
            self.close()
            raise
        except Exception as exc:
            self.close()
            raise errors.explain(exc, started=False) from exc

    def _calibrate(self) -> None:
        """Decode a first stretch of (idle) sampling: live if that keeps up.

        Decoding costs the same per sample busy or idle, and mostly depends on the
        metrics (see the class doc); judged before any run, no region ever sees the
        change from live to stopped. A set is judged too slow only when two
        stretches say so: on the H200 one judgement of the DRAM pair (which keeps
        up, 0.7-1.03) once read above 1.5, the first sampler of a process.
        """
        from nsight_lab.backends.pm.live import CALIBRATE_S, TOO_SLOW

        decoder = self._decoder
        # Never near a full image (after one, CUPTI's samples have no timestamps).
        wait_s = min(CALIBRATE_S, decoder.image.capacity / 8 * self.interval_ns / 1e9)
        time.sleep(wait_s / 2)
        decoder.step()  # the first decode pays CUPTI's first-call costs: not judged
        paces = []
        for _ in range(2):  # a second judgement where the first says too slow
            decoder.samples, decoder.busy_s = 0, 0.0
            time.sleep(wait_s)
            decoder.step()
            paces.append(decoder.duty if decoder.samples else 0.0)
            if paces[-1] <= TOO_SLOW:
                break
        decoder.take()  # idle samples from before the cell
        if min(paces) > TOO_SLOW:
            self._start_over_stopped(decoder)
        else:
            decoder.run()

    def _start_over_stopped(self, decoder: Any) -> None:  # noqa: ANN401  (LiveDecoder)
        """Drop the judged (idle) samples and sample stopped on a fresh session.

        The samples sampled while the judged ones were decoded are left in CUPTI's
        buffer; a slow set's backlog can be larger than the image's free half
        (four counters on the H200: 2,300 samples after 5 ms judged), so PM
        sampling is disabled and enabled again instead of decoding it.
        """
        self._keep_pace(decoder)
        decoder.abandon()
        self._decoder = None
        self._note_slow(decoder)
        with contextlib.suppress(Exception):
            self._collector.stop()
        self._running = False
        self._disable()
        self._configure()
        self._start()

    def _configure(self) -> None:
        """Enable PM sampling and set its metrics, interval and buffer."""
        try:
            self._collector.enable()
        except Exception as exc:
            raise errors.explain(exc, started=False) from exc
        try:
            self._collector.configure(
                metrics=list(self.metrics),
                sampling_interval=self.interval_ns,
                trigger_mode=self._pm_sampling.TriggerMode.GPU_TIME_INTERVAL,
                hardware_buffer_size=self._buffer_bytes,
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

    @property
    def mode(self) -> str:
        """``"live"`` or ``"stopped"`` (see the class doc)."""
        return "live" if self._decoder is not None else "stopped"

    def _start(self) -> None:
        try:
            self._collector.start()
        except Exception as exc:
            if self._decoder is not None:
                self._decoder.abandon()
                self._decoder = None
            self._disable()
            raise errors.explain(exc, started=False) from exc
        self._running = True

    def _stop(self) -> None:
        try:
            self._collector.stop()
        except Exception as exc:
            raise errors.explain(exc, started=True) from exc
        self._running = False

    def drain(self, *, until_ns: int = 0, restart: bool = True) -> list[Chunk]:
        """Every sample not yet handed out, through the GPU time ``until_ns``.

        Call only while the GPU is idle (a batch of runs synchronized). Live, it
        waits for the decoding thread to pass ``until_ns`` (the batch's last kernel
        end); stopped, it stops sampling, decodes everything and starts again (if
        ``restart``): no sample is taken between stop and start.

        Raises:
            MeasurementError: Decoding failed, fell behind or would lose samples.
        """
        decoder = self._decoder
        if decoder is not None:
            if decoder.behind or not decoder.alive:
                return self._go_stopped(restart=restart)
            decoder.wait_past(until_ns)
            return list(decoder.take())
        if not self._running:
            return []
        self._stop()
        chunks = self._decode_stopped()
        if restart:
            self._start()
        return chunks

    def _decode_stopped(self) -> list[Chunk]:
        """Decode everything CUPTI holds after a stop, into an image made now.

        The image is made after the stop and used for this decode only, the order
        cupti-python's ``decode`` uses and the one that read right after restarts
        on the H200 (an image sized to the sampling time since the start filled up
        there: more samples waited than that time implied). More than 10,000
        samples between two collections is an error (see :mod:`.live`): at 20 µs a
        collection comes every 0.1 s, 5,000 samples.
        """
        from nsight_lab.backends.pm.live import CuptiImage, LiveDecoder

        try:
            image = CuptiImage(self._collector, self.metrics)  # 10,000 samples
        except Exception as exc:
            raise errors.explain(exc, started=True) from exc
        decoder = LiveDecoder(image, self.metrics, self.interval_ns)
        try:
            return list(decoder.finish())
        except MeasurementError:
            raise
        except Exception as exc:
            raise errors.explain(exc, started=True) from exc
        finally:
            self.stopped_zeros += decoder.zeros[:4]
            image.close()

    def _go_stopped(self, *, restart: bool) -> list[Chunk]:
        """Leave live decoding: stop, decode what is left, sample stopped from now."""
        decoder = self._decoder
        decoder.halt()  # no decode in flight while CUPTI stops
        self._stop()
        try:
            chunks: list[Chunk] = decoder.finish()
        finally:
            decoder.image.close()
            self._decoder = None
            self._keep_pace(decoder)
        self._note_slow(decoder)
        if restart:
            self._start()
        return chunks

    def _note_slow(self, decoder: Any) -> None:  # noqa: ANN401  (a LiveDecoder)
        self.note = (
            f"PM sampling decoded {len(self.metrics)} metrics at "
            f"{1e6 * decoder.busy_s / max(1, decoder.samples):.3g} µs a sample, too "
            f"slow to keep up with a {self.interval_ns / 1000:g} µs interval while "
            "the cell runs: sampling now stops while each batch is decoded (a slower "
            "cell); fewer --metrics or a longer --sample-interval keep it live"
        )

    def _disable(self) -> None:
        with contextlib.suppress(Exception):
            self._collector.disable()

    def close(self) -> None:
        """Stop and disable PM sampling (what was not drained is dropped)."""
        if self._decoder is not None:  # no decode in flight while CUPTI stops
            self._keep_pace(self._decoder)
            self._decoder.abandon()
            self._decoder = None
        if self._running:
            with contextlib.suppress(Exception):
                self._collector.stop()
            self._running = False
        self._disable()

    def _keep_pace(self, decoder: Any) -> None:  # noqa: ANN401  (a LiveDecoder)
        self.pace = {
            "samples": decoder.samples,
            "busy_s": decoder.busy_s,
            "duty": decoder.duty,
            "reinits": decoder.reinits,
            "repaired": decoder.repaired,
            "zeros": decoder.zeros[:4],
        }
