"""Per-run GPU telemetry through NVML: clocks, temperature, power and throttle reasons.

Reads happen outside the timed regions (after a run is enqueued), cost about 40 us,
and never raise into a profile: a reading NVML refuses is recorded as ``None``. The
same module owns the two NVML *controls* a profile may apply: clock locking for
``--clock-control base`` and the wait for thermal headroom of ``--thermal auto``.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nsight_lab.contract.records import Telemetry
from nsight_lab.errors import BackendUnavailableError

if TYPE_CHECKING:
    from collections.abc import Callable

log = logging.getLogger(__name__)

THROTTLE_CLOCK_FRACTION = 0.75
"""A run whose SM clock is below this fraction of the ceiling is flagged."""

# NVML clock-event ("throttle") reason bits, decoded to the words users see.
CLOCK_EVENT_REASONS: dict[int, str] = {
    0x1: "gpu idle",
    0x2: "applications clocks setting",
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x10: "sync boost",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
    0x100: "display clock setting",
}
THROTTLE_BITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
"""Reasons that mean the GPU ran slower than it could: power and thermal limits."""


def decode_reasons(mask: int) -> tuple[str, ...]:
    """Return the clock-event reasons set in the NVML bit ``mask``, in words."""
    return tuple(word for bit, word in CLOCK_EVENT_REASONS.items() if mask & bit)


def is_throttled(
    sm_clock_mhz: float | None,
    ceiling_mhz: float | None,
    reasons_mask: int,
) -> bool:
    """Say whether a run should be flagged as throttled.

    Args:
        sm_clock_mhz: The SM clock read for the run.
        ceiling_mhz: The clock the run should have had: the locked clock when clocks
            are locked, else the device's maximum SM clock.
        reasons_mask: NVML clock-event reason bits.

    Returns:
        True when a power/thermal reason bit is set or the clock is below 75% of the
        ceiling.
    """
    if reasons_mask & THROTTLE_BITS:
        return True
    if sm_clock_mhz is None or not ceiling_mhz:
        return False
    return sm_clock_mhz < THROTTLE_CLOCK_FRACTION * ceiling_mhz


def _nvml() -> Any:  # noqa: ANN401  (pynvml is untyped)
    try:
        import pynvml  # noqa: PLC0415  (optional: nvidia-ml-py)
    except ImportError as exc:
        msg = "NVML bindings are missing; install them with: pip install nvidia-ml-py"
        raise BackendUnavailableError(msg) from exc
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        msg = (
            f"NVML could not start ({exc}); is the NVIDIA driver installed and loaded?"
        )
        raise BackendUnavailableError(msg) from exc
    return pynvml


@dataclass
class GpuMonitor:
    """NVML handle of one GPU, with the reads and controls a profile needs."""

    nvml: Any
    handle: Any
    name: str
    max_sm_clock_mhz: float | None
    locked_sm_clock_mhz: float | None = None
    _tdp_locked: bool = False

    @classmethod
    def open(cls, uuid: str | None = None, index: int = 0) -> GpuMonitor:
        """Open the GPU with ``uuid`` (as CUDA reports it) or else NVML ``index``.

        Raises:
            BackendUnavailableError: NVML is missing or cannot see the GPU.
        """
        nvml = _nvml()
        try:
            if uuid:
                text = uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
                handle = nvml.nvmlDeviceGetHandleByUUID(text)
            else:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
            name = nvml.nvmlDeviceGetName(handle)
        except nvml.NVMLError as exc:
            msg = f"NVML cannot open the GPU ({exc}); check nvidia-smi lists it"
            raise BackendUnavailableError(msg) from exc
        name = name.decode() if isinstance(name, bytes) else str(name)
        max_sm = _try(
            lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)
        )
        return cls(nvml=nvml, handle=handle, name=name, max_sm_clock_mhz=max_sm)

    def read(self) -> Telemetry:
        """Read clocks, temperature, power and clock-event reasons now."""
        nvml, h = self.nvml, self.handle
        sm = _try(lambda: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM))
        mem = _try(lambda: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM))
        temp = _try(lambda: nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU))
        power_mw = _try(lambda: nvml.nvmlDeviceGetPowerUsage(h))
        mask = _try(lambda: nvml.nvmlDeviceGetCurrentClocksEventReasons(h)) or 0
        if self._tdp_locked and sm is not None:
            self.locked_sm_clock_mhz = max(self.locked_sm_clock_mhz or 0.0, float(sm))
        ceiling = self.locked_sm_clock_mhz or self.max_sm_clock_mhz
        return Telemetry(
            sm_clock_mhz=sm,
            mem_clock_mhz=mem,
            temperature_c=temp,
            power_w=None if power_mw is None else power_mw / 1000.0,
            clock_event_reasons=decode_reasons(int(mask)),
            throttled=is_throttled(sm, ceiling, int(mask)),
        )

    def thermal_headroom_c(self) -> float | None:
        """Degrees C left before the GPU slows down for heat (None if unknown)."""
        nvml, h = self.nvml, self.handle
        margin: float | None = _try(lambda: nvml.nvmlDeviceGetMarginTemperature(h))
        if margin is not None:
            return margin
        limit: float | None = _try(
            lambda: nvml.nvmlDeviceGetTemperatureThreshold(
                h, nvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN
            )
        )
        temp: float | None = _try(
            lambda: nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU)
        )
        return None if limit is None or temp is None else limit - temp

    def lock_base_clock(self) -> tuple[bool, str]:
        """Lock the GPU clock to its base (TDP) clock, as ``ncu --clock-control base``.

        NVML's ``NVML_CLOCK_LIMIT_ID_TDP`` asks the driver for the clock the board is
        rated to hold at its power limit -- what Nsight Compute locks to for
        ``--clock-control base`` (on the H200 about 1,500 MHz under load). NVML's
        *default applications clock* is another figure (1,980 MHz on the H200): locking
        to it made the events and ncu paths of one cell run at different clocks. Where
        the driver refuses the TDP limit, the default applications clock is the
        fallback, and the message says so.

        Returns:
            Whether the clock is locked, and what happened in words.
        """
        nvml, h = self.nvml, self.handle
        tdp = getattr(nvml, "NVML_CLOCK_LIMIT_ID_TDP", None)
        if tdp is not None:
            try:
                nvml.nvmlDeviceSetGpuLockedClocks(h, tdp, tdp)
            except nvml.NVMLError as exc:
                refused = str(exc)
            else:
                # The driver picks the MHz and NVML does not say which; an idle GPU
                # sits below it. So the ceiling for throttle detection is the highest
                # clock read under the lock (see read()).
                self.locked_sm_clock_mhz = None
                self._tdp_locked = True
                return True, (
                    "SM clock locked to the base (TDP) clock, as ncu --clock-control "
                    "base, for this session"
                )
        else:
            refused = "this nvidia-ml-py has no NVML_CLOCK_LIMIT_ID_TDP"
        base = _try(
            lambda: nvml.nvmlDeviceGetDefaultApplicationsClock(
                h, nvml.NVML_CLOCK_GRAPHICS
            )
        )
        if base is None:
            said = (
                f"clocks not locked: the driver refused the base (TDP) clock "
                f"({refused}) and NVML reports no default applications clock"
            )
            return False, said
        return self.lock_sm_clock(
            int(base),
            what=f"NVML's default applications clock (base (TDP) refused: {refused})",
        )

    def lock_sm_clock(self, mhz: int, what: str = "") -> tuple[bool, str]:
        """Lock the SM clock to ``mhz`` until :meth:`reset_clocks`.

        Returns:
            Whether the clock is locked, and what happened in words.
        """
        label = f"{what} {mhz} MHz" if what else f"{mhz} MHz"
        try:
            self.nvml.nvmlDeviceSetGpuLockedClocks(self.handle, int(mhz), int(mhz))
        except self.nvml.NVMLError as exc:
            return False, (
                f"SM clock not locked to {label} ({exc}); runs use the default clocks. "
                "Locking needs root (or nvidia-smi -lgc by an admin)"
            )
        self.locked_sm_clock_mhz = float(mhz)
        return True, f"SM clock locked to {label} for this session"

    def reset_clocks(self) -> None:
        """Undo :meth:`lock_base_clock` (safe to call when nothing was locked)."""
        if self.locked_sm_clock_mhz is None and not self._tdp_locked:
            return
        try:
            self.nvml.nvmlDeviceResetGpuLockedClocks(self.handle)
        except self.nvml.NVMLError as exc:  # pragma: no cover - needs a failing driver
            log.warning("[nsight-lab] could not reset locked clocks: %s", exc)
        self.locked_sm_clock_mhz = None
        self._tdp_locked = False


def _try(read: Callable[[], Any]) -> Any:  # noqa: ANN401
    try:
        value = read()
    except Exception:  # noqa: BLE001  (NVML raises a zoo of NotSupported/NoPermission)
        return None
    return float(value) if isinstance(value, int | float) else value


class TelemetrySampler:
    """Samples a :class:`GpuMonitor` on a background thread.

    NVML calls cost tens of microseconds each (more on virtualised hosts); reading them
    on the profiling thread would stall the launch of the next run and leave the GPU
    idle. The sampler reads every ``period_s`` (NVML releases the GIL), and each run is
    given the newest sample when it ends, so per-run telemetry is the GPU state seen
    while the run's work was queued or running.
    """

    def __init__(
        self,
        monitor: GpuMonitor,
        period_s: float = 0.005,
        headroom_every_s: float = 0.1,
    ) -> None:
        """Start sampling ``monitor``; the first sample is taken before returning."""
        self.monitor = monitor
        self.period_s = period_s
        self.headroom_every_s = headroom_every_s
        self._latest = monitor.read()
        self._headroom = monitor.thermal_headroom_c()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name="nsight-lab-nvml", daemon=True
        )
        self._thread.start()

    def latest(self) -> Telemetry:
        """Return the newest sample."""
        return self._latest

    def headroom_c(self) -> float | None:
        """Return the newest thermal headroom reading (deg C)."""
        return self._headroom

    def close(self) -> None:
        """Stop the thread."""
        self._stop.set()
        self._thread.join(timeout=1.0)

    def _loop(self) -> None:
        last_headroom = time.monotonic()
        while not self._stop.wait(self.period_s):
            self._latest = self.monitor.read()
            now = time.monotonic()
            if now - last_headroom >= self.headroom_every_s:
                self._headroom = self.monitor.thermal_headroom_c()
                last_headroom = now
