"""Memory-, compute- or latency-bound: how far a region sits from the roof that binds.

Nsight Compute's SpeedOfLight rules (``SOLBottleneck``) give the thresholds: a
throughput over :data:`HIGH_THROUGHPUT_PCT` of peak is "high" (the unit is the
bottleneck: only less work through it helps), and compute and memory throughput both
under :data:`LATENCY_BELOW_PCT` is "a latency issue" (neither unit is busy: the
kernel waits, on dependencies, occupancy or launches). In between a region is bound
by its roof but short of it, and the gap bounds the gain.

The roof is the placement's (:mod:`nsight_lab.roofline.placement`: the region's
intensity against the device's ridge), judged against ``%nsight peaks``' measured
figures where the device has them, else the datasheet's. For a compute-bound
region of a tensor-core dtype, whether its FLOPs ran on the tensor path is read
from ncu's path counters, pm's tensor-pipe activity, or, on timing alone, a rate
past what the CUDA cores can do; otherwise it is left open and the backend that
would answer named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.analysis.findings.cache import l2_resident
from nsight_lab.analysis.findings.facts import roof_shares
from nsight_lab.analysis.findings.finding import Finding, gain_text
from nsight_lab.analysis.findings.launch import paced_by_host
from nsight_lab.text.units import format_percent, format_quantity

if TYPE_CHECKING:
    from nsight_lab.analysis.findings.facts import Context, RegionFacts
    from nsight_lab.analysis.findings.finding import Confidence
    from nsight_lab.roofline.placement import Placement

__all__ = ["HIGH_THROUGHPUT_PCT", "LATENCY_BELOW_PCT", "bound_findings", "roof_shares"]

HIGH_THROUGHPUT_PCT = 80.0
"""Nsight Compute SOLBottleneck: a unit over 80 % of its peak is the bottleneck."""
LATENCY_BELOW_PCT = 60.0
"""Nsight Compute SOLBottleneck: compute and memory both under 60 % of peak is a
latency issue."""
TENSOR_DTYPES = frozenset({"tf32", "bf16", "fp16", "fp8", "fp64_tensor"})
ON_TENSOR_SHARE = 0.5
"""ncu: most of the FLOPs on the tensor path."""
PIPE_ACTIVE_PCT = 5.0
"""pm: a tensor pipe this busy ran the region's matmuls on it (an idle one reads 0)."""
_IMPOSSIBLE = frozenset({"over_roof", "over_span", "low_coverage"})
_PM_TENSOR = "--backend pm (tensor-pipe activity) or --backend ncu"


def _tensor_path(
    f: RegionFacts, p: Placement, ctx: Context
) -> tuple[bool | None, str, Confidence]:
    """Whether its FLOPs ran on the tensor path (None: unknown), why, how sure."""
    if f.tensor_flops is not None and f.core_flops is not None:
        total = f.tensor_flops + f.core_flops
        if total > 0:
            share = f.tensor_flops / total
            return (
                share >= ON_TENSOR_SHARE,
                (
                    f"{format_percent(share * 100)} of its FLOPs on the tensor path "
                    "(ncu)"
                ),
                "measured",
            )
    if f.tensor_pipe_pct is not None:
        on = f.tensor_pipe_pct >= PIPE_ACTIVE_PCT
        return (
            on,
            f"tensor pipe active {format_percent(f.tensor_pipe_pct)} (pm)",
            "measured",
        )
    core = ctx.compute_roof("fp32")
    if core is not None and p.achieved_flops_per_s > core[0]:
        return (
            True,
            (
                f"{format_quantity(p.achieved_flops_per_s, 'FLOP/s')} is past the CUDA "
                f"cores' fp32 roof ({format_quantity(core[0], 'FLOP/s')})"
            ),
            "work model",
        )
    return None, "", "work model"


def _evidence(p: Placement, ctx: Context) -> list[str]:
    mem, comp, mem_source, comp_source = roof_shares(p, ctx)
    dram = ctx.dram_roof() or (p.dram_bytes_per_s, "")
    compute = ctx.compute_roof(p.dtype) or (p.peak_flops_per_s, "")
    rows = [
        (
            f"memory {format_quantity(p.achieved_bytes_per_s, 'bytes/s')} = "
            f"{format_percent(mem)} of {format_quantity(dram[0], 'bytes/s')} "
            f"({mem_source}); bytes {p.bytes_source}"
        )
    ]
    if p.flops > 0:
        rows.append(
            f"{p.dtype} {format_quantity(p.achieved_flops_per_s, 'FLOP/s')} = "
            f"{format_percent(comp)} of {format_quantity(compute[0], 'FLOP/s')} "
            f"({comp_source}); FLOPs {p.flops_source}"
        )
    return rows


def _confidence(p: Placement) -> tuple[Confidence, str]:
    memory = p.bound == "memory"
    binding = p.bytes_source if memory else p.flops_source
    what = "bytes" if memory else "FLOPs"
    if binding == "modelled":
        return "work model", f"the work model's {what} over the measured duration"
    return "measured", f"{what} {binding} by counters, over the measured duration"


def _statement(p: Placement, ctx: Context) -> tuple[str, str, str, float]:
    """(kind, statement, action, % of the binding roof)."""
    mem, comp, _, _ = roof_shares(p, ctx)
    memory = "memory" if ctx.host_timer else "DRAM"
    if max(mem, comp) < LATENCY_BELOW_PCT:
        gaps = not (ctx.per_kernel or ctx.host_timer)
        idle = " (or launch gaps: --backend cupti tells)" if gaps else ""
        return (
            "latency_bound",
            (
                f"latency-bound: neither {memory} ({format_percent(mem)} of its "
                f"roof) nor {p.dtype} compute ({format_percent(comp)}) is near its "
                f"roof{idle}"
            ),
            (
                "more parallel work per launch (larger batches or tiles), fewer "
                "dependent steps; ncu's Occupancy and WarpStateStats sections say what "
                "it waits on"
            ),
            mem if p.bound == "memory" else comp,
        )
    if p.bound == "memory":
        near = mem >= HIGH_THROUGHPUT_PCT
        return (
            "memory_bound",
            f"{memory}-bound at {format_percent(mem)} of the roof"
            + (": only fewer bytes help" if near else ""),
            "move fewer bytes: fuse it with its neighbours, a smaller dtype, no copies"
            if near
            else "coalesced, vectorised accesses and more bytes in flight (larger "
            "blocks); ncu's MemoryWorkloadAnalysis says why it stops short",
            mem,
        )
    near = comp >= HIGH_THROUGHPUT_PCT
    return (
        "compute_bound",
        f"compute-bound at {format_percent(comp)} of the {p.dtype} roof"
        + (": only less work helps" if near else ""),
        "less work or a faster dtype (bf16, fp8) where accuracy allows"
        if near
        else "shapes that fill the GPU (dimensions multiples of 128), the library's "
        "best algorithm (torch.compile mode='max-autotune')",
        comp,
    )


def bound_findings(f: RegionFacts, ctx: Context) -> list[Finding]:
    """The region's bound and how far from its roof, if placed and not host-paced.

    Raises:
        Nothing.
    """
    p = f.placement
    if p is None or paced_by_host(f, ctx) or l2_resident(f):
        return []  # the host, or the L2, sets its pace: no DRAM roof bounds it
    if any(flag.kind in _IMPOSSIBLE for flag in f.validity.flags):
        return []  # a number that cannot be true places nothing
    kind, statement, action, pct = _statement(p, ctx)
    evidence = _evidence(p, ctx)
    confidence, basis = _confidence(p)
    answered_by = ""
    gain = 100.0 / pct if pct > 0 else None
    roof = "the DRAM roof" if p.bound == "memory" else f"the {p.dtype} roof"
    # A tensor-core dtype, by the placement (counters) or by the work model (its
    # bf16 FLOPs counted on the CUDA cores by ncu are placed under fp32's roof).
    tensor = next((d for d in (p.dtype, f.model_dtype) if d in TENSOR_DTYPES), None)
    if p.bound == "compute" and tensor is not None and not ctx.host_timer:
        on, why, how = _tensor_path(f, p, ctx)
        if on is None:
            statement += "; whether on the tensor path is not known"
            answered_by = _PM_TENSOR
        else:
            statement += "; on the tensor path" if on else "; OFF the tensor path"
            evidence.append(why)
            if not on:
                kind, confidence = "compute_off_tensor", how
                top = ctx.compute_roof(tensor)
                if top is not None and p.achieved_flops_per_s > 0:
                    gain = top[0] / p.achieved_flops_per_s
                    roof = f"the {tensor} tensor roof"
                action = (
                    "run it on the tensor cores: bf16/fp16 inputs, dimensions "
                    "multiples of 16, allow_tf32 for fp32 matmuls"
                )
    return [
        Finding(
            regions=(f.annotation,),
            kind=kind,
            family="bound",
            statement=statement,
            evidence=tuple(evidence),
            action=action,
            confidence=confidence,
            basis=basis,
            gain=gain if gain is not None and gain > 1 else None,
            gain_basis=(
                f"at most {gain_text(gain)} if it reached {roof}"
                if gain is not None and gain > 1
                else ""
            ),
            answered_by=answered_by,
            config=f.config,
            config_index=f.config_index,
            time_ns=f.median_ns,
        )
    ]
