"""Roofline placement: where each profiled region sits under a device's peaks.

Peaks are :mod:`nsight_lab.roofline.devices`' (the datasheet table and
:func:`peaks_for`, re-exported here) or measured (:mod:`nsight_lab.roofline.peaks`). A
region's FLOPs and DRAM bytes are *measured* (Nsight Compute counters, see
:mod:`.counters`) when a run collected them, else *modelled* (the ``model__*``
metrics of :mod:`nsight_lab.roofline.workmodel`); every :class:`Placement` says which.
"""

from __future__ import annotations

import logging
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from nsight_lab.contract.registry import counters_source
from nsight_lab.roofline.counters import measured_bytes, measured_dtype, measured_flops
from nsight_lab.roofline.devices import (
    DEFAULT_DTYPE,
    DTYPE_CLASSES,
    PEAKS_TABLE,
    Peaks,
    dtype_class,
    peaks_for,
)
from nsight_lab.roofline.workmodel import dominant_dtype

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nsight_lab.contract.records import JsonScalar, RunRecord

__all__ = [
    "DEFAULT_DTYPE",
    "DTYPE_CLASSES",
    "PEAKS_TABLE",
    "Bound",
    "Peaks",
    "Placement",
    "RegionWork",
    "Source",
    "dtype_class",
    "peaks_for",
    "place",
    "place_records",
    "region_work",
]

logger = logging.getLogger(__name__)

Source = Literal["measured", "measured (PM sampling)", "modelled"]
"""Where a region's FLOPs or bytes come from: counters (Nsight Compute's, or CUPTI
PM sampling's: the backend registry's ``measures``,
:func:`~nsight_lab.contract.registry.counters_source`), or the PyTorch work model."""
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


def _check_work(
    annotation: str,
    flops: float,
    bytes_read: float,
    bytes_written: float,
    duration_ns: float,
) -> None:
    """Raise ``ValueError`` for a negative or non-finite quantity, a duration <= 0."""
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

    Size: eleven keyword-only inputs documented one per line; the body is the check,
    the roofline arithmetic and the one :class:`Placement`.
    """
    _check_work(annotation, flops, bytes_read, bytes_written, duration_ns)
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

    @property
    def bytes_total(self) -> float:
        """DRAM bytes read plus written."""
        return self.bytes_read + self.bytes_written


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
    dtypes: dict[str, str] = {}
    for record in records:
        found = measured_dtype(record.metrics) or dominant_dtype(record.metrics)
        if found and found in peaks.flops_per_s:
            dtypes.setdefault(record.annotation, found)
    return place_records(records, peaks, dtypes)
