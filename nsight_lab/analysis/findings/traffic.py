"""Bytes beyond need: excess traffic and fusion headroom, per region and for a chain.

Only for memory-bound regions (placed below the ridge, or, without peaks, under
:data:`MEMORY_INTENSITY` FLOP per byte): there time follows bytes, so moving ``r``
times the bytes needed bounds the gain at ``r``.

- ``fusion_headroom``: the region's ops move ``r`` times what one fused kernel of
  them would (the work model's ``model__bytes_fused``: inputs once, outputs that
  outlive the region): measured DRAM bytes against it where a counter backend gave
  them, else the op-level model's. ``a + b*c`` kept as ``y``: 6 N against 4 N.
  Measured bytes near the fused figure mean the L2 already kept the
  intermediates: nothing is said.
- ``excess_traffic``: measured DRAM bytes ``r`` times the op-level compulsory bytes
  (re-reads, partial sectors) where fusing would not explain it.
- ``chain_fusion``: a region that reads back what the region before it just wrote
  (``model__bytes_prev``): fusing the two keeps those bytes on the chip.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from nsight_lab.analysis.findings.finding import Finding, gain_text
from nsight_lab.analysis.findings.launch import paced_by_host
from nsight_lab.text.units import format_percent, format_quantity

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.analysis.findings.facts import Context, RegionFacts

__all__ = ["EXCESS_RATIO", "MEMORY_INTENSITY", "chain_findings", "traffic_findings"]

EXCESS_RATIO = 1.2
"""Bytes past this ratio of what is needed are worth saying: PM sampling's DRAM
writes read up to 1.1 of ncu's (``written_ratio`` in
``benchmarks/results/pm_h200.json``), so less could be the counter's own."""
MIN_SAVED_BYTES = 1e6
"""Savings under this are too small to act on."""
CHAIN_SHARE = 0.1
"""A chain is worth fusing when the bytes read back are this share of the pair's."""
MEMORY_INTENSITY = 4.0
"""FLOP per byte under which a region without peaks counts as memory-bound: below
every listed GPU's fp32 ridge (H100: 20) and a CPU's."""
_PM_DRAM = "--backend pm --metrics dram__bytes_read.sum,dram__bytes_write.sum"
_FUSE = (
    "fuse its ops into one kernel: torch.compile, or one fused op "
    "(torch.addcmul, F.scaled_dot_product_attention, ...)"
)


def memory_limited(f: RegionFacts, ctx: Context) -> bool:
    """Whether the region is memory-bound (its time follows its bytes).

    Placed: below the ridge. Not placed: under :data:`MEMORY_INTENSITY`, on a GPU
    backend only (a host timer's span holds Python's own time: without the CPU's
    roofs nothing says its time follows its bytes).

    Raises:
        Nothing.
    """
    if f.placement is not None:
        return f.placement.bound == "memory"
    if ctx.host_timer:
        return False
    return f.work is not None and f.work.intensity < MEMORY_INTENSITY


def _fusion(f: RegionFacts) -> Finding | None:
    fused, model = f.fused_bytes, f.model_bytes
    if fused is None or model is None or not fused > 0:
        return None
    if model / fused < EXCESS_RATIO or model - fused < MIN_SAVED_BYTES:
        return None
    moved, source = (
        (f.dram_bytes, "measured DRAM") if f.dram_bytes else (model, "its ops")
    )
    ratio = moved / fused
    if ratio < EXCESS_RATIO:
        return None  # the L2 kept the intermediates already
    saves = 1 - 1 / ratio
    return Finding(
        regions=(f.annotation,),
        kind="fusion_headroom",
        family="traffic",
        statement=(
            f"fusion headroom: {source} moves {ratio:.2f}x the bytes one fused kernel "
            f"would: fusing saves up to {format_percent(saves * 100)}"
        ),
        evidence=(
            (
                f"{format_quantity(moved, 'bytes')} moved ({source}) against "
                f"{format_quantity(fused, 'bytes')} of inputs and kept outputs "
                "(work model)"
            ),
            f"op-level compulsory bytes {format_quantity(model, 'bytes')}",
        ),
        action=_FUSE,
        confidence="measured" if f.dram_bytes else "work model",
        basis=(
            "DRAM bytes measured by counters, against the work model's fused bytes"
            if f.dram_bytes
            else "the work model's op-level bytes against its fused bytes"
        ),
        gain=ratio,
        gain_basis=(
            f"at most {gain_text(ratio)} if fused (memory-bound: its time follows its "
            "bytes)"
        ),
        answered_by="" if f.dram_bytes else _PM_DRAM,
        config=f.config,
        config_index=f.config_index,
        time_ns=f.median_ns,
    )


def _excess(f: RegionFacts) -> Finding | None:
    dram, model = f.dram_bytes, f.model_bytes
    if dram is None or model is None or not model > 0:
        return None
    ratio = dram / model
    if ratio < EXCESS_RATIO or dram - model < MIN_SAVED_BYTES:
        return None
    return Finding(
        regions=(f.annotation,),
        kind="excess_traffic",
        family="traffic",
        statement=(
            f"excess traffic: DRAM moved {ratio:.2f}x the bytes its ops need "
            "(re-reads or partly used sectors)"
        ),
        evidence=(
            (
                f"{format_quantity(dram, 'bytes')} measured against "
                f"{format_quantity(model, 'bytes')} compulsory (work model)"
            ),
        ),
        action=(
            "read each byte once: contiguous, aligned accesses (.contiguous() before "
            "it), data reused while cached; ncu's MemoryWorkloadAnalysis says where"
        ),
        confidence="measured",
        basis="DRAM bytes measured by counters, against the work model's bytes",
        gain=ratio,
        gain_basis=(
            f"at most {gain_text(ratio)} if it moved only its compulsory bytes "
            "(memory-bound: its time follows its bytes)"
        ),
        config=f.config,
        config_index=f.config_index,
        time_ns=f.median_ns,
    )


def traffic_findings(f: RegionFacts, ctx: Context) -> list[Finding]:
    """The region's fusion headroom, else its excess traffic (memory-bound only).

    Raises:
        Nothing.
    """
    if not memory_limited(f, ctx) or paced_by_host(f, ctx):
        return []
    found = _fusion(f) or _excess(f)
    return [found] if found is not None else []


def _pair_bytes(a: RegionFacts, b: RegionFacts) -> float | None:
    if a.dram_bytes is not None and b.dram_bytes is not None:
        return a.dram_bytes + b.dram_bytes
    if a.model_bytes is not None and b.model_bytes is not None:
        return a.model_bytes + b.model_bytes
    return None


def _chain(a: RegionFacts, b: RegionFacts) -> Finding | None:
    back, total = b.prev_bytes, _pair_bytes(a, b)
    if back is None or total is None or back < MIN_SAVED_BYTES or not total > 0:
        return None
    share = min(back / total, 0.5)  # at most all of b's reads of a's writes
    if share < CHAIN_SHARE:
        return None
    gain = 1 / (1 - share)
    return Finding(
        regions=(a.annotation, b.annotation),
        kind="chain_fusion",
        family="traffic",
        statement=(
            f"fusion across regions: {b.annotation} reads back "
            f"{format_quantity(back, 'bytes')} that {a.annotation} just wrote: "
            f"{format_percent(share * 100)} of the pair's bytes"
        ),
        evidence=(
            (
                f"{format_quantity(back, 'bytes')} read back (work model) of "
                f"{format_quantity(total, 'bytes')} the pair moves"
            ),
        ),
        action=(
            f"fuse {a.annotation} and {b.annotation} into one kernel (torch.compile "
            "over both), so the intermediate stays on the chip"
        ),
        confidence="work model",
        basis="tensors the work model saw one region write and the next read",
        gain=gain,
        gain_basis=f"at most {gain_text(gain)} for the pair if fused (memory-bound)",
        config=a.config,
        config_index=a.config_index,
        time_ns=a.median_ns + b.median_ns,
    )


def chain_findings(facts: Sequence[RegionFacts], ctx: Context) -> list[Finding]:
    """Fusion across each pair of consecutive regions of a config (memory-bound).

    Raises:
        Nothing.
    """
    out = []
    for a, b in itertools.pairwise(facts):
        if a.config_index != b.config_index:
            continue
        if not all(
            memory_limited(x, ctx) and not paced_by_host(x, ctx) for x in (a, b)
        ):
            continue
        found = _chain(a, b)
        if found is not None:
            out.append(found)
    return out
