"""Device peaks: the datasheet table, lookup by device name, dtype classes.

A :class:`Peaks` is a device's dense compute rate per dtype class and its DRAM
bandwidth: from :data:`PEAKS_TABLE` (datasheet *dense* figures, looked up by device
name with :func:`peaks_for`) or measured (:mod:`nsight_lab.roofline.peaks`). Regions
are placed under them by :mod:`nsight_lab.roofline.placement`.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

logger = logging.getLogger(__name__)

DTYPE_CLASSES: tuple[str, ...] = (
    "fp64",
    "fp64_tensor",
    "fp32",
    "tf32",
    "bf16",
    "fp16",
    "fp8",
)
"""Keys of :attr:`Peaks.flops_per_s`.

``fp64`` and ``fp32`` are CUDA-core (non-tensor) rates; ``fp64_tensor``, ``tf32``,
``bf16``, ``fp16`` and ``fp8`` are dense tensor-core rates.
"""
DEFAULT_DTYPE = "fp32"
"""The compute roof a region is placed under when nothing says otherwise."""

_T = 1e12
_TB = 1e12
_GB = 1e9


@dataclass(frozen=True)
class Peaks:
    """A device's peak compute rate per dtype class and its DRAM bandwidth."""

    device: str
    """Device name, as the driver reports it (or a CPU's model name)."""
    flops_per_s: dict[str, float]
    """Peak FLOP/s by dtype class (keys from :data:`DTYPE_CLASSES`)."""
    dram_bytes_per_s: float
    """Peak DRAM bandwidth, bytes read plus written per second."""
    source: str
    """Where the numbers come from, e.g. a datasheet or a dated measurement."""
    notes: tuple[str, ...] = ()
    """Caveats: dtypes a measurement skipped, and why."""

    def ridge_intensity(self, dtype: str) -> float:
        """FLOP/byte where the memory roof meets the ``dtype`` compute roof.

        Raises:
            ValueError: ``dtype`` is not a dtype class or this device has no peak
                for it.
        """
        return self.peak_flops_per_s(dtype) / self.dram_bytes_per_s

    def peak_flops_per_s(self, dtype: str) -> float:
        """Peak FLOP/s of ``dtype``.

        Raises:
            ValueError: ``dtype`` is not a dtype class or this device has no peak
                for it.
        """
        if dtype not in DTYPE_CLASSES:
            known = ", ".join(repr(d) for d in DTYPE_CLASSES)
            msg = f"unknown dtype class {dtype!r}; expected one of {known}"
            raise ValueError(msg)
        if dtype not in self.flops_per_s:
            have = ", ".join(repr(d) for d in self.flops_per_s) or "none"
            msg = (
                f"no {dtype!r} peak for {self.device!r} ({self.source}); "
                f"peaks known for it: {have}"
            )
            raise ValueError(msg)
        return self.flops_per_s[dtype]


def _tf(**values: float) -> dict[str, float]:
    return {k: v * _T for k, v in values.items()}


# Datasheet DENSE figures (the sparse ones NVIDIA also prints are twice these).
# Tensor-core rates for tf32/bf16/fp16/fp8, CUDA-core rates for fp32/fp64.
_H100_SXM = _tf(
    fp64=34, fp64_tensor=67, fp32=67, tf32=494.5, bf16=989.5, fp16=989.5, fp8=1979
)
_A100 = _tf(fp64=9.7, fp64_tensor=19.5, fp32=19.5, tf32=156, bf16=312, fp16=312)

PEAKS_TABLE: dict[str, Peaks] = {
    # NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column (sparse / 2).
    "H200 SXM": Peaks(
        device="NVIDIA H200",
        flops_per_s=dict(_H100_SXM),
        dram_bytes_per_s=4.8 * _TB,
        source="NVIDIA H200 datasheet (SXM), dense",
    ),
    # NVIDIA H200 datasheet, H200 NVL column (sparse / 2). Less sure than SXM: NVIDIA
    # revised the NVL figures once; these are the 2024 datasheet's.
    "H200 NVL": Peaks(
        device="NVIDIA H200 NVL",
        flops_per_s=_tf(
            fp64=30,
            fp64_tensor=60,
            fp32=60,
            tf32=417.5,
            bf16=835.5,
            fp16=835.5,
            fp8=1670.5,
        ),
        dram_bytes_per_s=4.8 * _TB,
        source="NVIDIA H200 datasheet (NVL), dense",
    ),
    # NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (sparse / 2).
    "H100 SXM": Peaks(
        device="NVIDIA H100 80GB HBM3",
        flops_per_s=dict(_H100_SXM),
        dram_bytes_per_s=3.35 * _TB,
        source="NVIDIA H100 datasheet (SXM), dense",
    ),
    # NVIDIA H100 datasheet, H100 NVL column (sparse / 2); 94 GB HBM3 per GPU.
    "H100 NVL": Peaks(
        device="NVIDIA H100 NVL",
        flops_per_s=_tf(
            fp64=30,
            fp64_tensor=60,
            fp32=60,
            tf32=417.5,
            bf16=835.5,
            fp16=835.5,
            fp8=1670.5,
        ),
        dram_bytes_per_s=3.9 * _TB,
        source="NVIDIA H100 datasheet (NVL), dense",
    ),
    # NVIDIA H100 datasheet, H100 PCIe 80GB (HBM2e) column (sparse / 2).
    "H100 PCIe": Peaks(
        device="NVIDIA H100 PCIe",
        flops_per_s=_tf(
            fp64=26,
            fp64_tensor=51,
            fp32=51,
            tf32=378,
            bf16=756.5,
            fp16=756.5,
            fp8=1513,
        ),
        dram_bytes_per_s=2.0 * _TB,
        source="NVIDIA H100 datasheet (PCIe), dense",
    ),
    # NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column (dense figures).
    "A100 SXM 80GB": Peaks(
        device="NVIDIA A100-SXM4-80GB",
        flops_per_s=dict(_A100),
        dram_bytes_per_s=2039 * _GB,
        source="NVIDIA A100 datasheet (SXM 80GB), dense",
    ),
    # A100 datasheet, A100 80GB PCIe column: same compute, 1,935 GB/s.
    "A100 PCIe 80GB": Peaks(
        device="NVIDIA A100 80GB PCIe",
        flops_per_s=dict(_A100),
        dram_bytes_per_s=1935 * _GB,
        source="NVIDIA A100 datasheet (PCIe 80GB), dense",
    ),
    # A100 40GB (SXM4 and PCIe): same compute, 1,555 GB/s (original A100 datasheet).
    "A100 40GB": Peaks(
        device="NVIDIA A100-SXM4-40GB",
        flops_per_s=dict(_A100),
        dram_bytes_per_s=1555 * _GB,
        source="NVIDIA A100 datasheet (40GB), dense",
    ),
    # NVIDIA L4 Tensor Core GPU datasheet (sparse / 2). No FP64 figure is published
    # (FP64 runs at 1/64 of FP32 on Ada), so none is listed.
    "L4": Peaks(
        device="NVIDIA L4",
        flops_per_s=_tf(fp32=30.3, tf32=60, bf16=121, fp16=121, fp8=242.5),
        dram_bytes_per_s=300 * _GB,
        source="NVIDIA L4 datasheet, dense",
    ),
    # NVIDIA T4 Tensor Core GPU datasheet: FP32 8.1 TFLOPS, mixed FP16/FP32 65 TFLOPS.
    # Turing has no TF32, BF16 or FP8 tensor cores.
    "T4": Peaks(
        device="Tesla T4",
        flops_per_s=_tf(fp32=8.1, fp16=65),
        dram_bytes_per_s=320 * _GB,
        source="NVIDIA T4 datasheet, dense",
    ),
    # NVIDIA Ada Lovelace architecture whitepaper, GeForce RTX 4090 column, dense,
    # FP32-accumulate rates (what PyTorch's matmuls use; GeForce runs FP32
    # accumulation at half the FP16-accumulate rate). Least sure of fp8: 330.3 is
    # the FP32-accumulate figure; FP16-accumulate FP8 is 660.6.
    "RTX 4090": Peaks(
        device="NVIDIA GeForce RTX 4090",
        flops_per_s=_tf(fp32=82.6, tf32=82.6, bf16=165.2, fp16=165.2, fp8=330.3),
        dram_bytes_per_s=1008 * _GB,
        source="NVIDIA Ada Lovelace whitepaper (GeForce RTX 4090), dense",
    ),
}
"""Datasheet peaks by short name; look devices up with :func:`peaks_for`."""

_NAME_PATTERNS: tuple[tuple[str, str], ...] = (
    # Most specific first: the first pattern that matches wins.
    (r"\bh200\b.*\bnvl\b", "H200 NVL"),
    (r"\bh200\b", "H200 SXM"),
    (r"\bh100\b.*\bnvl\b", "H100 NVL"),
    (r"\bh100\b.*\bpcie\b", "H100 PCIe"),
    (r"\bh100\b", "H100 SXM"),
    (r"\ba100\b.*\b40\s*gb\b", "A100 40GB"),
    (r"\ba100\b.*\bpcie\b", "A100 PCIe 80GB"),
    (r"\ba100\b", "A100 SXM 80GB"),
    (r"\bl4\b", "L4"),
    (r"\bt4\b", "T4"),
    (r"\brtx\s*4090\b", "RTX 4090"),
)


def peaks_for(device_name: str) -> Peaks | None:
    """Return the datasheet peaks of the device named ``device_name``, if known.

    Matching is case-insensitive on the name the driver reports ("NVIDIA H200",
    "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "Tesla T4", ...), most specific
    variant first; an H100 or A100 whose form factor the name does not give is taken
    as the SXM part. The returned :attr:`Peaks.device` is ``device_name`` itself.

    Raises:
        Nothing: an unknown device gives ``None``.
    """
    name = re.sub(r"[-_]", " ", device_name.lower())
    for pattern, key in _NAME_PATTERNS:
        if re.search(pattern, name):
            entry = PEAKS_TABLE[key]
            return Peaks(
                device=device_name,
                flops_per_s=dict(entry.flops_per_s),
                dram_bytes_per_s=entry.dram_bytes_per_s,
                source=entry.source,
                notes=entry.notes,
            )
    return None


_TORCH_DTYPES: dict[str, str] = {
    "float64": "fp64",
    "double": "fp64",
    "float32": "fp32",
    "float": "fp32",
    "tf32": "tf32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
}


def dtype_class(torch_dtype_name: str) -> str:
    """Map a torch dtype name to its dtype class.

    ``"torch.float32"``/``"float32"`` -> ``"fp32"``, ``bfloat16`` -> ``"bf16"``,
    ``float16``/``half`` -> ``"fp16"``, ``float64``/``double`` -> ``"fp64"``, any
    ``float8*`` -> ``"fp8"``. A dtype class (``"bf16"``) is returned unchanged.

    Raises:
        ValueError: The name is neither a floating torch dtype nor a dtype class.
    """
    name = torch_dtype_name.strip().lower().removeprefix("torch.")
    if name in DTYPE_CLASSES:
        return name
    if name.startswith("float8"):
        return "fp8"
    if name in _TORCH_DTYPES:
        return _TORCH_DTYPES[name]
    known = ", ".join(repr(d) for d in DTYPE_CLASSES)
    msg = (
        f"unknown dtype {torch_dtype_name!r}; expected a floating torch dtype "
        f"(torch.float32, torch.bfloat16, ...) or one of {known}"
    )
    raise ValueError(msg)
