"""Roofline placement: device peaks and where each profiled region sits under them.

Peaks come from :data:`PEAKS_TABLE` (datasheet *dense* figures, looked up by device name
with :func:`peaks_for`) or from an empirical measurement
(:mod:`nsight_lab.roofline.peaks`). A
region's FLOPs and DRAM bytes are *measured* (Nsight Compute counters, see
:mod:`.counters`) when a run collected them, else *modelled* (the ``model__*``
metrics of :mod:`nsight_lab.roofline.workmodel`); every :class:`Placement` says which.
"""

from __future__ import annotations

import logging
import math
import re
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from nsight_lab.contract.registry import counters_source
from nsight_lab.roofline.counters import measured_bytes, measured_flops

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nsight_lab.contract.records import JsonScalar, RunRecord

__all__ = [
    "DTYPE_CLASSES",
    "PEAKS_TABLE",
    "Bound",
    "Peaks",
    "Placement",
    "RegionWork",
    "Source",
    "TrafficComparison",
    "dtype_class",
    "peaks_for",
    "place",
    "place_records",
    "region_work",
    "traffic_comparison",
]

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

Source = Literal["measured", "measured (PM sampling)", "modelled"]
"""Where a region's FLOPs or bytes come from: counters (Nsight Compute's, or CUPTI
PM sampling's: the backend registry's ``measures``,
:func:`~nsight_lab.backends.counters_source`), or the PyTorch work model."""
Bound = Literal["memory", "compute"]

WORK_COLUMNS = (
    "FLOPs",
    "FLOPsSource",
    "BytesRead",
    "BytesWritten",
    "BytesSource",
    "ArithmeticIntensity",
    "AchievedTFLOPs",
    "AchievedGBps",
)
"""The roofline columns that need no peaks: filled whenever FLOPs and bytes are."""
ROOFLINE_COLUMNS = (*WORK_COLUMNS, "RoofTFLOPs", "Bound", "PctOfRoof", "RooflineDtype")
"""Roofline placement of each region (time rows only; see ``place_session``)."""


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


@dataclass(frozen=True)
class Placement:
    """One region (of one config) placed under a device's roofline."""

    annotation: str
    flops: float
    bytes_read: float
    bytes_written: float
    flops_source: Source
    bytes_source: Source
    duration_ns: float
    dtype: str
    intensity: float
    """FLOP per DRAM byte (read + written); ``inf`` with no bytes, 0 with no FLOPs."""
    achieved_flops_per_s: float
    achieved_bytes_per_s: float
    roof_flops_per_s: float
    """``min(peak compute, intensity * bandwidth)``: the attainable FLOP/s here."""
    ridge_intensity: float
    bound: Bound
    pct_of_roof: float
    """Achieved as % of the roof that binds: FLOP/s when compute bound, else bytes/s."""
    peak_flops_per_s: float
    dram_bytes_per_s: float
    config_index: int = 0
    config: dict[str, JsonScalar] = field(default_factory=dict)

    @property
    def bytes_total(self) -> float:
        """DRAM bytes read plus written."""
        return self.bytes_read + self.bytes_written


def place(  # noqa: PLR0913  (every quantity is keyword-only and named)
    annotation: str,
    *,
    flops: float,
    bytes_read: float,
    bytes_written: float,
    duration_ns: float,
    peaks: Peaks,
    dtype: str = DEFAULT_DTYPE,
    flops_source: Source = "modelled",
    bytes_source: Source = "modelled",
    config_index: int = 0,
    config: Mapping[str, JsonScalar] | None = None,
) -> Placement:
    """Place one region under ``peaks``' roofline.

    With no bytes the intensity is ``inf`` and the region compute bound; with no FLOPs
    it is 0 and the region memory bound, its % of roof then being of the bandwidth.

    Args:
        annotation: The region's name.
        flops: Floating-point operations of one run of the region.
        bytes_read: DRAM bytes it read.
        bytes_written: DRAM bytes it wrote.
        duration_ns: Its time (typically the median over runs).
        peaks: The device's peaks.
        dtype: Dtype class whose compute roof applies.
        flops_source: Whether ``flops`` was measured or modelled.
        bytes_source: Whether the bytes were measured or modelled.
        config_index: Index of the config the region ran in.
        config: That config's parameters.

    Returns:
        The placement.

    Raises:
        ValueError: ``dtype`` is unknown or has no peak on this device, a quantity is
            negative or not finite, ``duration_ns`` is not positive, or the region did
            neither FLOPs nor bytes.
    """
    for what, value in (
        ("flops", flops),
        ("bytes_read", bytes_read),
        ("bytes_written", bytes_written),
    ):
        if not math.isfinite(value) or value < 0:
            msg = f"{what} of region {annotation!r} is {value!r}; expected >= 0"
            raise ValueError(msg)
    if not math.isfinite(duration_ns) or duration_ns <= 0:
        msg = f"duration_ns of region {annotation!r} is {duration_ns!r}; expected > 0"
        raise ValueError(msg)
    peak = peaks.peak_flops_per_s(dtype)
    bandwidth = peaks.dram_bytes_per_s
    moved = bytes_read + bytes_written
    if flops == 0 and moved == 0:
        msg = f"region {annotation!r} did no FLOPs and moved no bytes; nothing to place"
        raise ValueError(msg)
    seconds = duration_ns * 1e-9
    achieved_flops = flops / seconds
    achieved_bytes = moved / seconds
    intensity = math.inf if moved == 0 else flops / moved
    ridge = peak / bandwidth
    roof = peak if math.isinf(intensity) else min(peak, intensity * bandwidth)
    bound: Bound = "compute" if intensity >= ridge else "memory"
    if bound == "compute":
        pct = achieved_flops / peak * 100.0
    else:  # same as achieved / roof FLOP/s, and defined with zero FLOPs
        pct = achieved_bytes / bandwidth * 100.0
    return Placement(
        annotation=annotation,
        flops=float(flops),
        bytes_read=float(bytes_read),
        bytes_written=float(bytes_written),
        flops_source=flops_source,
        bytes_source=bytes_source,
        duration_ns=float(duration_ns),
        dtype=dtype,
        intensity=intensity,
        achieved_flops_per_s=achieved_flops,
        achieved_bytes_per_s=achieved_bytes,
        roof_flops_per_s=roof,
        ridge_intensity=ridge,
        bound=bound,
        pct_of_roof=pct,
        peak_flops_per_s=peak,
        dram_bytes_per_s=bandwidth,
        config_index=config_index,
        config=dict(config or {}),
    )


def _median(values: Sequence[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def _region_work(
    group: Sequence[RunRecord],
) -> tuple[float, Source, float, float, Source] | None:
    """(flops, source, read, written, source) of a region's runs; None if unknown."""
    counted_flops = [f for r in group if (f := measured_flops(r.metrics)) is not None]
    counted_bytes = [b for r in group if (b := measured_bytes(r.metrics)) is not None]
    flops_source: Source
    bytes_source: Source
    if counted_flops:
        flops = _median(counted_flops)
        flops_source = counters_source(group[0].backend)
    else:
        model = [
            r.metrics["model__flops"] for r in group if "model__flops" in r.metrics
        ]
        flops, flops_source = _median(model), "modelled"
    if counted_bytes:
        read = _median([b[0] for b in counted_bytes])
        written = _median([b[1] for b in counted_bytes])
        bytes_source = counters_source(group[0].backend)
    else:
        keys = ("model__bytes_read", "model__bytes_written")
        model_bytes = [r.metrics for r in group if all(k in r.metrics for k in keys)]
        read = _median([m[keys[0]] for m in model_bytes])
        written = _median([m[keys[1]] for m in model_bytes])
        bytes_source = "modelled"
    if flops is None or read is None or written is None:
        return None
    return flops, flops_source, read, written, bytes_source


@dataclass(frozen=True)
class RegionWork:
    """One region's (of one config) FLOPs, bytes and achieved rates: no peaks needed.

    What :func:`place_records` computes before it looks at the roofs, so the results
    DataFrame can show it on a device whose peaks are unknown (the cpu backend
    without ``%nsight peaks --cpu``). Rates are over the *median* duration.
    """

    annotation: str
    config_index: int
    config: dict[str, JsonScalar]
    flops: float
    flops_source: Source
    bytes_read: float
    bytes_written: float
    bytes_source: Source
    duration_ns: float
    """The median duration over the region's runs."""
    intensity: float
    """FLOP per DRAM byte; ``inf`` with no bytes, 0 with no FLOPs."""
    achieved_flops_per_s: float
    achieved_bytes_per_s: float


def region_work(records: Sequence[RunRecord]) -> list[RegionWork]:
    """FLOPs, bytes and achieved rates of every (config, region) of ``records``.

    Sourced as in :func:`place_records` (measured counters, else the work model;
    medians over runs), rates over the median duration, so one slow run does not
    move them. Regions with no FLOP or byte figure, or that did no work, are left
    out.

    Raises:
        Nothing.
    """
    groups: dict[tuple[int, str], list[RunRecord]] = defaultdict(list)
    for record in records:
        groups[(record.config_index, record.annotation)].append(record)
    out: list[RegionWork] = []
    for (config_index, annotation), group in groups.items():
        work = _region_work(group)
        duration = _median([r.duration_ns for r in group])
        if work is None or duration is None or not duration > 0:
            continue
        flops, flops_source, read, written, bytes_source = work
        moved = read + written
        if flops == 0 and moved == 0:
            continue
        seconds = duration * 1e-9
        out.append(
            RegionWork(
                annotation=annotation,
                config_index=config_index,
                config=dict(group[0].config),
                flops=float(flops),
                flops_source=flops_source,
                bytes_read=float(read),
                bytes_written=float(written),
                bytes_source=bytes_source,
                duration_ns=float(duration),
                intensity=math.inf if moved == 0 else flops / moved,
                achieved_flops_per_s=flops / seconds,
                achieved_bytes_per_s=moved / seconds,
            )
        )
    return out


def place_records(
    records: Sequence[RunRecord],
    peaks: Peaks,
    dtype_by_annotation: Mapping[str, str] | None = None,
) -> list[Placement]:
    """Place every (config, region) of ``records`` under ``peaks``' roofline.

    Per region and config: the median duration over its runs; FLOPs and DRAM bytes
    *measured* from Nsight Compute counters (median over runs) where a run collected
    them, else *modelled* from the ``model__*`` metrics. FLOPs and bytes are sourced
    independently. Regions with no FLOP or no byte figure, or with neither any FLOPs
    nor any bytes, are left out.

    Args:
        records: Run records of one session.
        peaks: The device's peaks.
        dtype_by_annotation: Dtype (class or torch dtype name) per annotation;
            ``"fp32"`` for those not named.

    Returns:
        Placements in the order the regions first appear in ``records``.

    Raises:
        ValueError: A dtype in ``dtype_by_annotation`` is unknown or has no peak on
            this device.
    """
    groups: dict[tuple[int, str], list[RunRecord]] = defaultdict(list)
    for record in records:
        groups[(record.config_index, record.annotation)].append(record)
    dtypes = {a: dtype_class(d) for a, d in (dtype_by_annotation or {}).items()}
    placements: list[Placement] = []
    for (config_index, annotation), group in groups.items():
        work = _region_work(group)
        if work is None:
            logger.debug("[nsight-lab] %r has no FLOP or byte figures", annotation)
            continue
        flops, flops_source, read, written, bytes_source = work
        duration = _median([r.duration_ns for r in group])
        if (flops == 0 and read + written == 0) or not duration or duration <= 0:
            logger.debug("[nsight-lab] %r did no work; not placed", annotation)
            continue
        placements.append(
            place(
                annotation,
                flops=flops,
                bytes_read=read,
                bytes_written=written,
                duration_ns=duration,
                peaks=peaks,
                dtype=dtypes.get(annotation, DEFAULT_DTYPE),
                flops_source=flops_source,
                bytes_source=bytes_source,
                config_index=config_index,
                config=group[0].config,
            )
        )
    return placements


def place_session(records: Sequence[RunRecord], peaks: Peaks) -> list[Placement]:
    """Place each (config, region) under the roof of the dtype that did its FLOPs.

    The dtype comes from the counters (tensor-path or FP32/FP64/FP16 instructions)
    when ncu measured them, else from the work model; fp32 when neither says.
    """
    from nsight_lab.roofline.counters import measured_dtype
    from nsight_lab.roofline.workmodel import dominant_dtype

    dtypes: dict[str, str] = {}
    for record in records:
        found = measured_dtype(record.metrics) or dominant_dtype(record.metrics)
        if found and found in peaks.flops_per_s:
            dtypes.setdefault(record.annotation, found)
    return place_records(records, peaks, dtypes)


@dataclass(frozen=True)
class TrafficComparison:
    """DRAM traffic and time of region ``a`` relative to region ``b``."""

    a: str
    b: str
    traffic_ratio: float
    """``(a.read + a.written) / (b.read + b.written)``."""
    time_ratio: float
    """``a.duration / b.duration``."""
    read_ratio: float
    write_ratio: float
    a_config_index: int = 0
    b_config_index: int = 0


def _ratio(numerator: float, denominator: float) -> float:
    if denominator == 0:
        return math.nan if numerator == 0 else math.inf
    return numerator / denominator


def traffic_comparison(a: Placement, b: Placement) -> TrafficComparison:
    """Compare the DRAM traffic and time of two placed regions, as ratios ``a / b``.

    A ratio over zero is ``inf`` (``nan`` for ``0 / 0``).

    Raises:
        Nothing.
    """
    return TrafficComparison(
        a=a.annotation,
        b=b.annotation,
        traffic_ratio=_ratio(a.bytes_total, b.bytes_total),
        time_ratio=_ratio(a.duration_ns, b.duration_ns),
        read_ratio=_ratio(a.bytes_read, b.bytes_read),
        write_ratio=_ratio(a.bytes_written, b.bytes_written),
        a_config_index=a.config_index,
        b_config_index=b.config_index,
    )
