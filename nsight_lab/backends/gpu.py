"""What every GPU backend needs around its timer.

The L2 flush, NVML telemetry, clock control and the thermal guard are opened together
and closed together, so locked clocks are always reset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsight_lab.contract.records import Telemetry
from nsight_lab.errors import BackendUnavailableError
from nsight_lab.gpu.telemetry import GpuMonitor, TelemetrySampler
from nsight_lab.gpu.thermal import (
    THERMAL_RESUME_HEADROOM_C,
    THERMAL_TIMEOUT_S,
    THERMAL_WAIT_HEADROOM_C,
    ThermalGuard,
)
from nsight_lab.options import ThermalSettings

if TYPE_CHECKING:
    from collections.abc import Callable

    from nsight_lab.options import ProfileOptions

MIN_FLUSH_BYTES = 32 * 1024 * 1024


def require_cuda(backend_id: str) -> Any:  # noqa: ANN401  (the torch module)
    """Return torch when it sees a CUDA device.

    Raises:
        BackendUnavailableError: PyTorch is missing or sees no CUDA device.
    """
    try:
        import torch  # noqa: PLC0415  (optional and heavy: PyTorch)
    except ImportError as exc:
        msg = (
            f"backend {backend_id!r} is unavailable: PyTorch is not installed; "
            "install a CUDA build of PyTorch"
        )
        raise BackendUnavailableError(msg) from exc
    if not torch.cuda.is_available():
        msg = (
            f"backend {backend_id!r} is unavailable: no CUDA GPU visible "
            "(torch.cuda.is_available() is False); run on a machine with an NVIDIA GPU"
        )
        raise BackendUnavailableError(msg)
    return torch


def refuse_beside_profiler(torch: Any, backend_id: str) -> None:  # noqa: ANN401
    """Refuse, before anything runs, while ``torch.profiler`` is recording.

    Kineto holds CUPTI's activity callbacks for the profile: a CUPTI backend opened
    inside it would take them away (Kineto's trace loses its kernels) or lose its own.

    Raises:
        BackendUnavailableError: A torch.profiler profile is recording.
    """
    enabled = getattr(torch.autograd.profiler, "_is_profiler_enabled", False)
    if enabled:
        msg = (
            f"backend {backend_id!r} cannot measure inside a running torch.profiler "
            "profile (both need CUPTI's activity records): end the "
            "`with torch.profiler.profile()` block first, or use --backend events"
        )
        raise BackendUnavailableError(msg)


def thermal_guard(
    options: ProfileOptions,
    headroom_c: Callable[[], float | None],
    torch: Any,  # noqa: ANN401  (the torch module)
    device: int,
    notes: list[str],
) -> ThermalGuard | None:
    """The wait for thermal headroom ``--thermal`` asks for, or ``None`` (``off``).

    ``auto`` and ``manual`` both wait by ``--thermal-settings`` (nsight-python's
    defaults where not given: pause at 10 deg C of headroom, resume at 20, time out
    after 180 s); ``auto`` also moves the resume threshold by how fast the GPU heats
    and lowers it at a timeout, as nsight-python's (:class:`ThermalGuard`), where
    ``manual`` raises at the timeout. ``device`` there watches another CUDA
    device than the profiled one (``device``); where it cannot be opened, a note says
    so and the profiled one is watched.
    """
    if options.thermal == "off":
        return None
    settings = options.thermal_settings or ThermalSettings()
    watched = settings.device
    if watched is not None and watched != device:
        try:
            props = torch.cuda.get_device_properties(watched)
            other = GpuMonitor.open(uuid=str(getattr(props, "uuid", "")) or None)
            headroom_c = other.thermal_headroom_c
        except Exception as exc:  # noqa: BLE001  (a bad ordinal, no NVML: say so)
            notes.append(
                f"--thermal-settings device={watched}: cannot watch it ({exc}); "
                "watching the profiled GPU"
            )

    def given(value: float | None, default: float) -> float:
        return default if value is None else value

    return ThermalGuard(
        headroom_c,
        wait_at_c=given(settings.wait_c, THERMAL_WAIT_HEADROOM_C),
        resume_at_c=given(settings.cont_c, THERMAL_RESUME_HEADROOM_C),
        timeout_s=given(settings.timeout_s, THERMAL_TIMEOUT_S),
        adaptive=options.thermal == "auto",
    )


class GpuContext:
    """The current CUDA device with its flush buffer, NVML monitor and controls."""

    def __init__(self, torch: Any, options: ProfileOptions) -> None:  # noqa: ANN401
        """Allocate the flush buffer, open NVML, lock clocks if asked, sample."""
        self.notes: list[str] = []
        self._torch_sum = torch.sum
        self.device = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(self.device)
        self.name: str = props.name
        self._flush_buffer = None
        self._flush_out = None
        if options.cache_control == "all":
            nbytes = max(2 * int(getattr(props, "L2_cache_size", 0)), MIN_FLUSH_BYTES)
            # Written once here; each flush then only reads it (see flush_l2).
            self._flush_buffer = torch.ones(
                nbytes // 4, dtype=torch.float32, device=self.device
            )
            self._flush_out = torch.empty((), dtype=torch.float32, device=self.device)
        self.monitor: GpuMonitor | None = None
        self._sampler: TelemetrySampler | None = None
        self._guard: ThermalGuard | None = None
        try:
            self.monitor = GpuMonitor.open(uuid=str(getattr(props, "uuid", "")) or None)
        except BackendUnavailableError as exc:
            self.notes.append(f"no per-run telemetry: {exc}")
        if self.monitor is not None:
            if options.clock_control == "base":
                _, said = self.monitor.lock_base_clock()
                self.notes.append(said)
            self._sampler = TelemetrySampler(self.monitor)
            self._guard = thermal_guard(
                options, self._sampler.headroom_c, torch, self.device, self.notes
            )
        elif options.clock_control == "base":
            self.notes.append("clocks not locked: NVML is unavailable")

    @property
    def max_sm_clock_mhz(self) -> float | None:
        """The SM clock ceiling NVML reports (None without NVML)."""
        return self.monitor.max_sm_clock_mhz if self.monitor else None

    def flush_l2(self) -> None:
        """Read a buffer twice the L2 size (``--cache-control all``; else nothing).

        A read-only sweep (a sum into a preallocated scalar, on the current stream,
        before the start event) evicts the L2 and leaves it clean. Writing the buffer
        instead (``zero_()``) left dirty lines whose write-back slowed the next
        memory-bound kernel by up to 9 % (``tests/backends/test_events.py`` holds
        the flush to it on a GPU); Nsight Compute's own flush leaves the L2 clean
        too.
        """
        if self._flush_buffer is not None:
            self._torch_sum(self._flush_buffer, 0, out=self._flush_out)

    def telemetry(self) -> Telemetry:
        """The newest telemetry sample (empty without NVML)."""
        return self._sampler.latest() if self._sampler is not None else Telemetry()

    def thermal_wait(self, on_wait: Callable[[float, float], None] | None) -> float:
        """Wait for thermal headroom (``--thermal auto``); return seconds waited."""
        return 0.0 if self._guard is None else self._guard.wait(on_wait)

    def close(self) -> None:
        """Stop sampling, reset locked clocks, free the flush buffer."""
        self._flush_buffer = None
        self._flush_out = None
        if self._sampler is not None:
            self._sampler.close()
        if self.monitor is not None:
            self.monitor.reset_clocks()
