"""Measure a device's achievable peaks with PyTorch: copy bandwidth, matmul FLOP/s.

What a device *achieves*, not its datasheet: the bandwidth of a large ``copy_``
(bytes read plus written) and the FLOP/s of a square matmul per dtype, the best of
several repetitions within a time budget, timed with CUDA events on a GPU and with
``perf_counter`` on the CPU. PyTorch is imported only when measuring (it is
optional). :mod:`nsight_lab.roofline.peaks` caches the result per device.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import math
import platform
import time
from pathlib import Path
from typing import TYPE_CHECKING

from nsight_lab.errors import MeasurementError
from nsight_lab.roofline.devices import DTYPE_CLASSES, Peaks

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    import torch

__all__ = ["DEFAULT_DTYPES", "MEASURED_SOURCE", "device_name", "measure_peaks"]

logger = logging.getLogger(__name__)

DEFAULT_DTYPES: tuple[str, ...] = ("fp32", "bf16", "fp16", "fp64")
MEASURED_SOURCE = "measured by %nsight peaks on {date}"

_TORCH_DTYPE = {
    "fp64": "float64",
    "fp32": "float32",
    "tf32": "float32",
    "bf16": "bfloat16",
    "fp16": "float16",
}
_MAX_N = {"cpu": 2048, "cuda": 8192}
_PROBE_N = {"cpu": 256, "cuda": 2048}
_MIN_N = 256
_COPY_BYTES = {"cpu": 64 << 20, "cuda": 1 << 30}
"""Bytes per copy buffer: well past the CPU's last-level cache and the GPU's L2."""
_MIN_REPS = 3
_MAX_REPS = 200


class _Timer:
    """Times ``fn`` on a device: CUDA events on a GPU, ``perf_counter`` on the CPU."""

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def seconds(self, fn: Callable[[], object]) -> float:
        import torch  # noqa: PLC0415  (torch is optional)

        if self.device.type == "cuda":
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            return float(start.elapsed_time(end)) * 1e-3
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    def best(self, fn: Callable[[], object], budget_s: float) -> tuple[float, int]:
        """(Best time, reps) over at least three reps and about ``budget_s``."""
        self.seconds(fn)  # warm-up: allocator, library handles, kernel selection
        best = math.inf
        reps = 0
        t_end = time.perf_counter() + budget_s
        while reps < _MIN_REPS or (time.perf_counter() < t_end and reps < _MAX_REPS):
            best = min(best, self.seconds(fn))
            reps += 1
        return best, reps


def _check_device(device: str) -> torch.device:
    import torch  # noqa: PLC0415  (torch is optional)

    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        msg = f"unknown device {device!r}; expected 'cpu' or 'cuda' (or 'cuda:N')"
        raise ValueError(msg) from exc
    if dev.type not in _MAX_N:
        msg = f"unknown device {device!r}; expected 'cpu' or 'cuda' (or 'cuda:N')"
        raise ValueError(msg)
    if dev.type == "cuda" and not torch.cuda.is_available():
        msg = (
            f"cannot measure peaks on {device!r}: torch.cuda.is_available() is "
            "False; measure the CPU with device='cpu' or run on a GPU machine"
        )
        raise MeasurementError(msg)
    return dev


def device_name(device: str = "cuda") -> str:
    """Return the name peaks are cached under: the GPU's name or the CPU's model.

    Raises:
        ValueError: ``device`` is neither a CPU nor a CUDA device.
        MeasurementError: CUDA was asked for and is not available.
    """
    import torch  # noqa: PLC0415  (torch is optional)

    dev = _check_device(device)
    if dev.type == "cuda":
        return str(torch.cuda.get_device_name(dev))
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return "CPU " + line.split(":", 1)[1].strip()
    return "CPU " + (platform.processor() or platform.machine() or "unknown")


@contextlib.contextmanager
def _tf32(enabled: bool) -> Iterator[None]:  # noqa: FBT001
    """Allow or forbid TF32 for float32 matmuls on CUDA, restoring the setting."""
    import torch  # noqa: PLC0415  (torch is optional)

    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):  # torch >= 2.9; do not mix with allow_tf32
        old = matmul.fp32_precision
        matmul.fp32_precision = "tf32" if enabled else "ieee"
        try:
            yield
        finally:
            matmul.fp32_precision = old
    else:  # pragma: no cover  (older torch)
        old_allow = matmul.allow_tf32
        matmul.allow_tf32 = enabled
        try:
            yield
        finally:
            matmul.allow_tf32 = old_allow


def _copy_bandwidth(dev: torch.device, timer: _Timer, budget_s: float) -> float:
    import torch  # noqa: PLC0415  (torch is optional)

    nbytes = _COPY_BYTES[dev.type]
    if dev.type == "cuda":
        free, _total = torch.cuda.mem_get_info(dev)
        nbytes = max(16 << 20, min(nbytes, free // 8))
    numel = nbytes // 4
    src = torch.ones(numel, dtype=torch.float32, device=dev)
    dst = torch.empty_like(src)
    best, _ = timer.best(lambda: dst.copy_(src), budget_s)
    return 2.0 * numel * 4 / best


def _matmul_rate(
    dev: torch.device, dtype: str, timer: _Timer, budget_s: float
) -> tuple[float, int, int]:
    """(Best FLOP/s, n, reps) of an n x n matmul in ``dtype``."""
    import torch  # noqa: PLC0415  (torch is optional)

    torch_dtype = getattr(torch, _TORCH_DTYPE[dtype])

    def square(n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        a = torch.randn(n, n, device=dev).to(torch_dtype)
        b = torch.randn(n, n, device=dev).to(torch_dtype)
        return a, b, torch.empty(n, n, device=dev, dtype=torch_dtype)

    # Size the matrix so one multiply takes about a fifth of the budget.
    n = _PROBE_N[dev.type]
    a, b, c = square(n)
    timer.seconds(lambda: torch.mm(a, b, out=c))
    rate = 2.0 * n**3 / max(timer.seconds(lambda: torch.mm(a, b, out=c)), 1e-9)
    target = int((rate * budget_s / 5 / 2) ** (1 / 3)) // _MIN_N * _MIN_N
    n = min(_MAX_N[dev.type], max(_MIN_N, target))
    del a, b, c
    a, b, c = square(n)
    best, reps = timer.best(lambda: torch.mm(a, b, out=c), budget_s)
    return 2.0 * n**3 / best, n, reps


def _has_fp64_tensor_cores(dev: torch.device) -> bool:
    """A100, H100/H200 and B100/B200 (sm_80, sm_90, sm_100) have FP64 tensor cores."""
    import torch  # noqa: PLC0415  (torch is optional)

    if dev.type != "cuda":
        return False
    return tuple(torch.cuda.get_device_capability(dev)) in {(8, 0), (9, 0), (10, 0)}


def _unsupported(dev: torch.device, dtype: str) -> str | None:
    import torch  # noqa: PLC0415  (torch is optional)

    if dtype == "fp8":
        return "fp8 needs scaled matmuls (torch._scaled_mm); not measured"
    if dtype == "fp64_tensor":
        return "fp64_tensor is what fp64 matmuls use on a GPU that has it; see fp64"
    if dtype == "tf32" and dev.type != "cuda":
        return "tf32 is a CUDA tensor-core mode; not on the CPU"
    if dtype == "bf16" and dev.type == "cuda" and not torch.cuda.is_bf16_supported():
        return "bf16 matmuls are not supported on this GPU"
    return None


def _check_request(dtypes: Sequence[str], seconds_per_test: float) -> None:
    """Raise ``ValueError`` for an unknown dtype class or a budget <= 0."""
    unknown = [d for d in dtypes if d not in DTYPE_CLASSES]
    if unknown:
        known = ", ".join(repr(d) for d in DTYPE_CLASSES)
        msg = f"unknown dtype class {unknown[0]!r}; expected one of {known}"
        raise ValueError(msg)
    if not seconds_per_test > 0:
        msg = f"seconds_per_test is {seconds_per_test!r}; expected > 0"
        raise ValueError(msg)


def _measure_dtype(
    dev: torch.device,
    dtype: str,
    timer: _Timer,
    seconds_per_test: float,
    out: tuple[dict[str, float], list[str]],
) -> None:
    """One dtype's matmul rate into ``out``'s FLOP/s, or its note why not."""
    flops, notes = out
    reason = _unsupported(dev, dtype)
    if reason is not None:
        notes.append(f"{dtype} skipped: {reason}")
        return
    try:
        with _tf32(dtype == "tf32") if dev.type == "cuda" else contextlib.nullcontext():
            rate, n, reps = _matmul_rate(dev, dtype, timer, seconds_per_test)
    except (RuntimeError, NotImplementedError) as exc:  # incl. CUDA OOM
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        notes.append(f"{dtype} skipped: {first_line}")
        logger.info("[nsight-lab] peaks: %s matmul failed: %s", dtype, exc)
        return
    key = dtype
    if dtype == "fp64" and _has_fp64_tensor_cores(dev):
        key = "fp64_tensor"  # cuBLAS runs DGEMM on the FP64 tensor cores here
    flops[key] = rate
    notes.append(f"{key}: {n}x{n} {_TORCH_DTYPE[dtype]} matmul, best of {reps}")


def measure_peaks(
    device: str = "cuda",
    *,
    dtypes: Sequence[str] = DEFAULT_DTYPES,
    seconds_per_test: float = 0.3,
) -> Peaks:
    """Measure achievable peaks: copy bandwidth and dense matmul FLOP/s per dtype.

    Each test runs for about ``seconds_per_test`` and keeps its best repetition. On a
    GPU the matmul is up to 8192 x 8192 (smaller when the device is slow) with TF32
    off for ``fp32`` (``tf32`` measures it on); on the CPU it is at most 2048 x 2048.
    Dtypes the device cannot multiply are skipped and said so in ``notes``. On GPUs
    with FP64 tensor cores (sm_80, sm_90, sm_100) the float64 matmul rate is reported
    as ``fp64_tensor``, since that is the unit cuBLAS uses for it.

    Args:
        device: ``"cuda"`` (or ``"cuda:N"``) or ``"cpu"``.
        dtypes: Dtype classes to measure (from
            :data:`~nsight_lab.roofline.placement.DTYPE_CLASSES`).
        seconds_per_test: Time budget of each test.

    Returns:
        The peaks, named after the device, with the date in ``source``.

    Raises:
        ValueError: Unknown device or dtype, or a non-positive time budget.
        MeasurementError: CUDA was asked for and is not available.
    """
    import torch  # noqa: PLC0415  (torch is optional)

    _check_request(dtypes, seconds_per_test)
    dev = _check_device(device)
    timer = _Timer(dev)
    notes: list[str] = [f"device {device!r}, torch {torch.__version__}"]
    bandwidth = _copy_bandwidth(dev, timer, seconds_per_test)
    flops: dict[str, float] = {}
    for dtype in dict.fromkeys(dtypes):
        _measure_dtype(dev, dtype, timer, seconds_per_test, (flops, notes))
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    date = dt.datetime.now(dt.timezone.utc).date().isoformat()
    return Peaks(
        device=device_name(device),
        flops_per_s=flops,
        dram_bytes_per_s=bandwidth,
        source=MEASURED_SOURCE.format(date=date),
        notes=tuple(notes),
    )
