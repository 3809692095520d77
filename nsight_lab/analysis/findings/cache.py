"""L2-resident regions: bytes the L2 served, which DRAM never saw.

A region whose data fits the L2 and is read again (a reuse loop, a small tensor
read by many kernels) runs at the L2's speed while it stays there, and falls to
DRAM speed when its working set grows or other work evicts it. Read as:

- **measured** (pm, ncu): DRAM moved at most :data:`RESIDENT_SHARE` of the bytes
  its ops read and write (the work model's op-level bytes), or the L2 carried
  :data:`L2_OVER_DRAM` times DRAM's bytes (``lts__t_bytes.sum``, pm's default set);
- **work model** (events, cupti): its modelled bytes at a rate past the DRAM roof
  (validity's ``over_roof`` of a memory-bound region whose bytes are modelled and
  whose duration misses nothing): they cannot all have come from DRAM.

It says nothing of a gain: the L2 is already doing the work. What to try is to
keep it resident, and to time it warm too when that is how it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.analysis.findings.finding import Finding
from nsight_lab.analysis.validity import LAUNCH_BOUND_BELOW
from nsight_lab.text.units import format_percent, format_quantity

if TYPE_CHECKING:
    from nsight_lab.analysis.findings.facts import RegionFacts

__all__ = [
    "L2_OVER_DRAM",
    "MIN_BYTES",
    "RESIDENT_SHARE",
    "cache_findings",
    "l2_resident",
    "roof_served_by_cache",
]

RESIDENT_SHARE = 0.25
"""DRAM bytes at most this share of the op-level bytes: the L2 served the rest."""
L2_OVER_DRAM = 4.0
"""L2 traffic this many times DRAM's: most accesses hit in the L2 (a streaming
kernel's L2 bytes are about its DRAM bytes, reads and writes each through once)."""
MIN_BYTES = 1e6
"""Regions moving less than this are too small for a share of bytes to mean much."""
_PM_DRAM = "--backend pm --metrics dram__bytes_read.sum,dram__bytes_write.sum"
_ADVICE = (
    "its speed holds while its data stays in the L2: a larger working set, or other "
    "work between its runs, falls to DRAM speed; time it warm too "
    "(--cache-control none)"
)


def roof_served_by_cache(f: RegionFacts) -> bool:
    """Whether a memory-bound region's modelled bytes passed the DRAM roof (the L2).

    Not when its duration may miss kernels (other threads, or launch-bound): then
    the flag's other cause stands.

    Raises:
        Nothing.
    """
    p = f.placement
    if p is None or p.bytes_source != "modelled" or p.bound != "memory":
        return False
    if not any(flag.kind == "over_roof" for flag in f.validity.flags):
        return False
    shape = f.shape
    return shape is None or (
        shape.foreign == 0
        and (shape.busy_share is None or shape.busy_share >= LAUNCH_BOUND_BELOW)
    )


def _measured(f: RegionFacts) -> Finding | None:
    dram, model, l2 = f.dram_bytes, f.model_bytes, f.l2_bytes
    evidence: list[str] = []
    share = None
    if dram is not None and model is not None and model >= MIN_BYTES:
        share = dram / model
        evidence.append(
            f"DRAM moved {format_quantity(dram, 'bytes')} (measured) of the "
            f"{format_quantity(model, 'bytes')} its ops read and write (work model): "
            f"{format_percent(share * 100)}"
        )
    hits = False
    if dram is not None and l2 is not None and dram > 0 and l2 / dram >= L2_OVER_DRAM:
        hits = True
        evidence.append(
            f"L2 traffic {format_quantity(l2, 'bytes')}: {l2 / dram:.1f}x DRAM's"
        )
    if not ((share is not None and share <= RESIDENT_SHARE) or hits):
        return None
    what = (
        f"DRAM moved {format_percent(share * 100)} of the bytes its ops touch"
        if share is not None and share <= RESIDENT_SHARE
        else "most of its accesses hit in the L2"
    )
    return Finding(
        regions=(f.annotation,),
        kind="l2_resident",
        family="cache",
        statement=f"L2-resident: {what}; the L2 served the rest",
        evidence=tuple(evidence),
        action=_ADVICE,
        confidence="measured",
        basis="DRAM (and L2) bytes measured by counters, against the work model's",
        config=f.config,
        config_index=f.config_index,
        time_ns=f.median_ns,
    )


def _modelled(f: RegionFacts) -> Finding | None:
    p = f.placement
    if p is None:  # roof_served_by_cache checked it
        return None
    return Finding(
        regions=(f.annotation,),
        kind="l2_resident",
        family="cache",
        statement=(
            "likely L2-resident: its ops' bytes moved at "
            f"{format_percent(p.pct_of_roof)} of the DRAM roof, more than DRAM can "
            "serve: the L2 served part of them"
        ),
        evidence=(
            (
                f"{format_quantity(p.bytes_total, 'bytes')} (work model) in "
                f"{format_quantity(p.duration_ns, 'ns')}: "
                f"{format_quantity(p.achieved_bytes_per_s, 'bytes/s')} against "
                f"{format_quantity(p.dram_bytes_per_s, 'bytes/s')}"
            ),
        ),
        action=_ADVICE,
        confidence="work model",
        basis="the work model's bytes over its duration, against the DRAM roof",
        answered_by=_PM_DRAM,
        config=f.config,
        config_index=f.config_index,
        time_ns=f.median_ns,
    )


def l2_resident(f: RegionFacts) -> bool:
    """Whether the L2 served the region (measured, or its modelled bytes past DRAM).

    Then the DRAM roof does not bound it: no bound finding is read off it.

    Raises:
        Nothing.
    """
    return _measured(f) is not None or roof_served_by_cache(f)


def cache_findings(f: RegionFacts) -> list[Finding]:
    """The region's L2-resident finding, measured or (past the roof) modelled.

    Raises:
        Nothing.
    """
    found = _measured(f)
    if found is None and roof_served_by_cache(f):
        found = _modelled(f)
    return [found] if found is not None else []
