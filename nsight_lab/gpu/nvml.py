"""NVML device listing: :func:`nvml_devices` and :class:`NvmlDevice`.

Part of :mod:`nsight_lab.gpu.stack`, which re-exports every public name here; import
them from there. ``pynvml`` is imported inside :func:`nvml_devices` only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from nsight_lab.errors import BackendUnavailableError

# Log as before the split, under the public module's name.
logger = logging.getLogger("nsight_lab.gpu.stack")

NVML_INSTALL_HINT = "install it with: pip install nvidia-ml-py"
DRIVER_HINT = (
    "is the NVIDIA driver installed and loaded? `nvidia-smi` should list the GPU"
)


@dataclass(frozen=True)
class NvmlDevice:
    """One GPU as NVML describes it.

    Attributes:
        index: NVML device index.
        name: marketing name, e.g. ``"NVIDIA H200"``.
        uuid: ``"GPU-…"`` identifier.
        driver_version: kernel driver version, e.g. ``"580.159.04"``.
        cuda_driver_version: newest CUDA the driver supports, e.g. ``"13.0"``.
        memory_total_bytes: device memory.
        max_sm_clock_mhz: maximum SM clock, ``None`` where NVML does not report it.
        max_mem_clock_mhz: maximum memory clock, ``None`` where NVML does not report it.
    """

    index: int
    name: str
    uuid: str
    driver_version: str
    cuda_driver_version: str
    memory_total_bytes: int
    max_sm_clock_mhz: int | None
    max_mem_clock_mhz: int | None


def nvml_devices() -> list[NvmlDevice]:
    """List the GPUs NVML sees (``nvmlInit`` is called here, and only here).

    Returns:
        One :class:`NvmlDevice` per GPU, possibly none.

    Raises:
        BackendUnavailableError: nvidia-ml-py is not installed, or NVML could not be
            loaded or queried; the original NVML error is chained as ``__cause__``.
    """
    try:
        import pynvml  # noqa: PLC0415  (optional: nvidia-ml-py)
    except ImportError as exc:
        msg = f"nvidia-ml-py is not installed; {NVML_INSTALL_HINT}"
        raise BackendUnavailableError(msg) from exc

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        msg = f"NVML could not be loaded: {DRIVER_HINT} ({describe_error(exc)})"
        raise BackendUnavailableError(msg) from exc
    try:

        def max_clock(handle: object, clock: int) -> int | None:
            # MIG instances and some vGPUs do not report max clocks.
            try:
                return int(pynvml.nvmlDeviceGetMaxClockInfo(handle, clock))
            except pynvml.NVMLError:
                return None

        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        cuda = _cuda_version_text(pynvml.nvmlSystemGetCudaDriverVersion())
        devices = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            devices.append(
                NvmlDevice(
                    index=index,
                    name=_text(pynvml.nvmlDeviceGetName(handle)),
                    uuid=_text(pynvml.nvmlDeviceGetUUID(handle)),
                    driver_version=driver,
                    cuda_driver_version=cuda,
                    memory_total_bytes=int(
                        pynvml.nvmlDeviceGetMemoryInfo(handle).total
                    ),
                    max_sm_clock_mhz=max_clock(handle, pynvml.NVML_CLOCK_SM),
                    max_mem_clock_mhz=max_clock(handle, pynvml.NVML_CLOCK_MEM),
                )
            )
    except pynvml.NVMLError as exc:
        msg = f"NVML failed while listing devices: {describe_error(exc)}"
        raise BackendUnavailableError(msg) from exc
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError as exc:
            logger.debug("nvmlShutdown failed: %s", exc)
    return devices


def _cuda_version_text(encoded: int) -> str:
    """NVML's CUDA driver version ``13000`` → ``"13.0"``."""
    return f"{encoded // 1000}.{encoded % 1000 // 10}"


def _text(value: str | bytes) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def describe_error(exc: BaseException) -> str:
    """``exc`` in one line: its type, and its message when it has one."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
