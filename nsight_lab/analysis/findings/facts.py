"""What the rules read of a session: per region and config, every number once.

:func:`gather` groups a session's runs by region and config and reads, once, what
any rule needs: the median duration and its spread, the validity checks
(:mod:`nsight_lab.analysis.validity`: its flags and the region's shape are reused,
never recomputed), the roofline placement (or the work without peaks), the
measured DRAM and L2 bytes, tensor-pipe activity and FLOPs by path where a counter
backend gave them, the work model's op-level, fused and chained bytes, and the
telemetry. The rules (the other modules of this package) are pure functions of
these facts and the session's :class:`Context`.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nsight_lab.analysis.validity import check_session, region_shape
from nsight_lab.contract import shape
from nsight_lab.contract.registry import times_the_host
from nsight_lab.roofline.boundary import FROM_PREVIOUS, FUSED
from nsight_lab.roofline.counters import FLOP_WEIGHTS, measured_bytes
from nsight_lab.roofline.placement import place_session, region_work
from nsight_lab.roofline.workmodel import dominant_dtype
from nsight_lab.stats import rsd_pct

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nsight_lab.analysis.validity import RegionShape, Validity
    from nsight_lab.contract.records import JsonScalar, RunRecord, SessionInfo
    from nsight_lab.roofline.placement import Peaks, Placement, RegionWork

__all__ = [
    "PER_KERNEL",
    "TENSOR_PIPE",
    "Context",
    "RegionFacts",
    "gather",
    "roof_shares",
]

TENSOR_PIPE = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
"""PM sampling's tensor-pipe activity (``--backend pm``'s default set)."""
L2_BYTES = "lts__t_bytes.sum"
"""PM sampling's (or ncu's) L2 bytes, all traffic through the L2."""
PER_KERNEL = frozenset({"cupti", "pm", "ncu"})
"""Backends that see each kernel (the GPU's idle time between them)."""
_TENSOR_COUNTERS = tuple(n for n in FLOP_WEIGHTS if n.startswith("sm__ops_path_tensor"))


@dataclass(frozen=True)
class Context:
    """The session every region's findings are read in.

    Attributes:
        backend: The backend that measured it.
        host_timer: Whether that backend times the host (``cpu``), not the GPU.
        peaks: The roofs regions are placed under (datasheet or measured); None
            without any.
        attainable: Peaks ``%nsight peaks`` measured on this device, if kept: the
            attainable figures, preferred to the datasheet's where given.
        cache_control: ``all`` (cold L2 before each region) or ``none``.
        target_rsd_pct: ``--target-rsd``, if given.
        per_kernel: Whether the backend times each kernel (its GPU idle time is
            known, or would be with this version's shape metrics).
        session_ns: The median durations of every region and config, summed: what
            a finding's time is a share of.
    """

    backend: str
    host_timer: bool = False
    peaks: Peaks | None = None
    attainable: Peaks | None = None
    cache_control: str = "all"
    target_rsd_pct: float | None = None
    per_kernel: bool = False
    session_ns: float = 0.0

    def dram_roof(self) -> tuple[float, str] | None:
        """The DRAM bandwidth to judge against (bytes/s) and where it comes from."""
        if self.attainable is not None:
            return self.attainable.dram_bytes_per_s, "measured by %nsight peaks"
        if self.peaks is not None:
            return self.peaks.dram_bytes_per_s, _source(self.peaks)
        return None

    def compute_roof(self, dtype: str) -> tuple[float, str] | None:
        """The ``dtype`` compute rate to judge against (FLOP/s) and its source."""
        for peaks in (self.attainable, self.peaks):
            if peaks is not None and peaks.flops_per_s.get(dtype, 0) > 0:
                return peaks.flops_per_s[dtype], _source(peaks)
        return None


def _source(peaks: Peaks) -> str:
    return "measured by %nsight peaks" if "measured" in peaks.source else "datasheet"


@dataclass(frozen=True)
class RegionFacts:
    """One region and config's numbers, as the rules read them.

    Attributes:
        annotation, config_index, config: Which region and config.
        runs: Runs with a duration.
        median_ns, rsd_pct, max_ns: Its duration's median, RSD (%) and slowest.
        validity: The validity checks (flags, launch-bound note).
        shape: The region's shape over its runs (per-kernel backends), or None.
        launches: Median kernels, memcpys and memsets per run (None: unknown).
        placement: Its roofline placement (with peaks), or None.
        work: Its FLOPs and bytes without peaks (None: none known).
        dram_bytes: Median DRAM bytes read + written, measured (None: no counter).
        model_bytes: The work model's op-level compulsory bytes (None: not counted).
        fused_bytes: What one fused kernel of its ops would move (work model).
        prev_bytes: Bytes it read of what the region before it wrote (work model).
        model_dtype: The dtype class of most of its modelled FLOPs.
        tensor_flops, core_flops: Measured FLOPs on the tensor path and on the
            CUDA cores (ncu), or None.
        tensor_pipe_pct: PM sampling's tensor-pipe activity (%), or None.
        l2_bytes: L2 bytes (``lts__t_bytes.sum``), or None.
        throttled: Runs NVML saw throttled.
        thermal_wait_s: Seconds waited for thermal headroom over its runs.
        sm_clock: (median, min, max) SM clock in MHz, or None.
    """

    annotation: str
    config_index: int
    config: Mapping[str, JsonScalar]
    runs: int
    median_ns: float
    rsd_pct: float
    max_ns: float
    validity: Validity
    shape: RegionShape | None
    launches: float | None
    placement: Placement | None
    work: RegionWork | None
    dram_bytes: float | None
    model_bytes: float | None
    fused_bytes: float | None
    prev_bytes: float | None
    model_dtype: str | None
    tensor_flops: float | None
    core_flops: float | None
    tensor_pipe_pct: float | None
    l2_bytes: float | None
    throttled: int
    thermal_wait_s: float
    sm_clock: tuple[float, float, float] | None

    @property
    def busy_share(self) -> float | None:
        """GPU busy share of the region's span (per-kernel backends), or None."""
        return None if self.shape is None else self.shape.busy_share


def _median(values: Sequence[float]) -> float | None:
    finite = [v for v in values if math.isfinite(v)]
    return float(statistics.median(finite)) if finite else None


def _metric(group: Sequence[RunRecord], name: str) -> float | None:
    return _median([r.metrics[name] for r in group if name in r.metrics])


def _model_bytes(group: Sequence[RunRecord]) -> float | None:
    keys = ("model__bytes_read", "model__bytes_written")
    return _median(
        [
            r.metrics[keys[0]] + r.metrics[keys[1]]
            for r in group
            if all(k in r.metrics for k in keys)
        ]
    )


def _paths(group: Sequence[RunRecord]) -> tuple[float | None, float | None]:
    """Measured FLOPs on the tensor path and on the CUDA cores (ncu's counters)."""
    tensor: list[float] = []
    core: list[float] = []
    for r in group:
        present = [n for n in FLOP_WEIGHTS if n in r.metrics]
        if not present:
            continue
        on_tensor = sum(
            FLOP_WEIGHTS[n] * r.metrics[n] for n in _TENSOR_COUNTERS if n in r.metrics
        )
        tensor.append(on_tensor)
        core.append(sum(FLOP_WEIGHTS[n] * r.metrics[n] for n in present) - on_tensor)
    return _median(tensor), _median(core)


def _kernel_count(group: Sequence[RunRecord]) -> float | None:
    """Median kernels a run named (ncu's records name each kernel), or None."""
    return _median([float(len(r.kernels)) for r in group if r.kernels])


def _clock(group: Sequence[RunRecord]) -> tuple[float, float, float] | None:
    clocks = [r.telemetry.sm_clock_mhz for r in group]
    known = [c for c in clocks if c is not None and math.isfinite(c)]
    if not known:
        return None
    return float(statistics.median(known)), min(known), max(known)


def _facts(
    group: Sequence[RunRecord],
    validity: Validity,
    placement: Placement | None,
    work: RegionWork | None,
) -> RegionFacts:
    first = group[0]
    durations = [r.duration_ns for r in group if math.isfinite(r.duration_ns)]
    counted = [b for r in group if (b := measured_bytes(r.metrics)) is not None]
    dtype = next((d for r in group if (d := dominant_dtype(r.metrics))), None)
    tensor, core = _paths(group)
    return RegionFacts(
        annotation=first.annotation,
        config_index=first.config_index,
        config=dict(first.config),
        runs=len(durations),
        median_ns=_median(durations) or math.nan,
        rsd_pct=rsd_pct(durations),
        max_ns=max(durations, default=math.nan),
        validity=validity,
        shape=region_shape(group),
        launches=_metric(group, shape.LAUNCHES) or _kernel_count(group),
        placement=placement,
        work=work,
        dram_bytes=_median([a + b for a, b in counted]),
        model_bytes=_model_bytes(group),
        fused_bytes=_metric(group, FUSED),
        prev_bytes=_metric(group, FROM_PREVIOUS),
        model_dtype=dtype,
        tensor_flops=tensor,
        core_flops=core,
        tensor_pipe_pct=_metric(group, TENSOR_PIPE),
        l2_bytes=_metric(group, L2_BYTES),
        throttled=sum(1 for r in group if r.telemetry.throttled),
        thermal_wait_s=sum(r.thermal_wait_s for r in group),
        sm_clock=_clock(group),
    )


@dataclass(frozen=True)
class Analysed:
    """The placements, work and checks of a set of measured runs, derived once.

    What the findings, the charts and the tables all read (a live view builds
    them five times a second: issue 32), made by :func:`analyse`.
    """

    measured: Sequence[RunRecord]
    """The runs with a duration (a region that failed has none)."""
    placements: Sequence[Placement]
    works: Sequence[RegionWork]
    checks: Mapping[tuple[str, int], Validity]


def analyse(records: Sequence[RunRecord], peaks: Peaks | None) -> Analysed:
    """Place, model and check ``records``' measured runs (no peaks: no placement).

    Raises:
        Nothing.
    """
    measured = [r for r in records if not math.isnan(r.duration_ns)]
    placements = place_session(measured, peaks) if peaks is not None else []
    return Analysed(
        measured=measured,
        placements=placements,
        works=region_work(measured),
        checks=check_session(measured, placements),
    )


def gather(
    records: Sequence[RunRecord] | Analysed,
    session: SessionInfo | None,
    peaks: Peaks | None = None,
    attainable: Peaks | None = None,
) -> tuple[Context, list[RegionFacts]]:
    """The session's context and each region and config's facts, in run order.

    ``records``: the runs, or what :func:`analyse` derived of them under ``peaks``.
    Runs with no duration (a region that failed) are left out.

    Raises:
        Nothing.
    """
    done = records if isinstance(records, Analysed) else analyse(records, peaks)
    measured, checks = done.measured, done.checks
    groups: dict[tuple[str, int], list[RunRecord]] = defaultdict(list)
    for r in measured:
        groups[(r.annotation, r.config_index)].append(r)
    placed = {(p.annotation, p.config_index): p for p in done.placements}
    works = {(w.annotation, w.config_index): w for w in done.works}
    facts = [
        _facts(group, checks[key], placed.get(key), works.get(key))
        for key, group in groups.items()
    ]
    backend = (
        session.backend
        if session is not None
        else (measured[0].backend if measured else "")
    )
    options = session.options if session is not None else {}
    target = options.get("target_rsd_pct")
    context = Context(
        backend=backend,
        host_timer=times_the_host(backend) if backend else False,
        peaks=peaks,
        attainable=attainable,
        cache_control=str(options.get("cache_control") or "all"),
        target_rsd_pct=float(target) if isinstance(target, (int, float)) else None,
        per_kernel=backend in PER_KERNEL
        or any(f.busy_share is not None for f in facts),
        session_ns=sum(f.median_ns for f in facts if math.isfinite(f.median_ns)),
    )
    return context, facts


def roof_shares(p: Placement, ctx: Context) -> tuple[float, float, str, str]:
    """(% of the DRAM roof, % of the compute roof, their sources) of a placement.

    Raises:
        Nothing.
    """
    dram = ctx.dram_roof() or (p.dram_bytes_per_s, "datasheet")
    compute = ctx.compute_roof(p.dtype) or (p.peak_flops_per_s, "datasheet")
    mem = p.achieved_bytes_per_s / dram[0] * 100
    comp = p.achieved_flops_per_s / compute[0] * 100
    return mem, comp, dram[1], compute[1]
