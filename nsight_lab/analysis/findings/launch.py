"""Launch- and host-bound regions: a GPU that waits for the host.

Issue 31 (HTA's idle-time breakdown, for a notebook's regions): a region whose GPU
is idle most of its span is paced by the host's launches, not by the GPU; its roofs
say nothing and its spread follows the host. Read from the per-kernel backends'
shape metrics (:mod:`nsight_lab.contract.shape`, through
:func:`nsight_lab.analysis.validity.region_shape`): the GPU busy share of the span,
the launches, the host time per launch.

- ``host_bound``: the GPU busy under :data:`~nsight_lab.analysis.validity.
  LAUNCH_BOUND_BELOW` of the span over :data:`MANY_LAUNCHES` or more launches:
  many small kernels, each shorter than its launch. CUDA graphs or fusion.
- ``launch_bound``: the same with fewer launches: a kernel shorter than its
  launch cost.

The gain is a bound: the span shrunk to the GPU's busy time (``1 / busy share``),
what a graph replay with no host gaps would approach. The events backend has no
per-kernel timing: a region whose host enqueue lasted most of its GPU span, or
shorter than :data:`TYPICAL_LAUNCH_NS`, is said to be likely launch-bound on timing
alone, and the cupti backend named to settle it, unless its work model puts the span
at :data:`NEAR_ROOF_PCT` of a roof (the GPU was busy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.analysis.findings.facts import roof_shares
from nsight_lab.analysis.findings.finding import Finding, gain_text
from nsight_lab.analysis.validity import (
    COVERAGE_FLOOR,
    ENQUEUE_FOLLOWS,
    LAUNCH_BOUND_BELOW,
)
from nsight_lab.text.units import format_count, format_duration, format_percent

if TYPE_CHECKING:
    from nsight_lab.analysis.findings.facts import Context, RegionFacts

__all__ = ["MANY_LAUNCHES", "TYPICAL_LAUNCH_NS", "launch_findings", "paced_by_host"]

NEAR_ROOF_PCT = 80.0
"""From this share of a roof over its span, the GPU kept the host's pace (events)."""
TYPICAL_LAUNCH_NS = 5_000.0
"""What launching one PyTorch op from Python typically costs the host (a few µs of
dispatch plus the driver's launch): a region of less GPU time than this cannot keep
the GPU busy when run in a loop."""
MANY_LAUNCHES = 10
"""Launches from which a launch-paced region is "many tiny kernels" (host-bound)."""
_CUPTI = "--backend cupti"


def paced_by_host(f: RegionFacts, ctx: Context) -> bool:
    """Whether the host's launches, not the GPU, set the region's pace.

    Per-kernel backends: the GPU busy under half the span (and over the coverage
    floor, under which the GPU work ran elsewhere: a validity flag). Events: the
    host's enqueue lasting most of the GPU span (validity's ``enqueue_share``), or
    a region shorter than :data:`TYPICAL_LAUNCH_NS`. The host timer: never (it
    sees no GPU).

    Raises:
        Nothing.
    """
    share = f.busy_share
    if share is not None:
        return COVERAGE_FLOOR <= share < LAUNCH_BOUND_BELOW
    if ctx.host_timer:
        return False
    enqueue = f.shape.enqueue_share if f.shape is not None else None
    if enqueue is not None and enqueue >= ENQUEUE_FOLLOWS:
        return not _near_a_roof(f, ctx)
    return f.median_ns < TYPICAL_LAUNCH_NS


def _near_a_roof(f: RegionFacts, ctx: Context) -> bool:
    """Whether its span ran at :data:`NEAR_ROOF_PCT` of a roof or more (work model).

    A GPU that moved its ops' bytes (or did their FLOPs) that fast over the span
    did not wait: host and GPU kept the same pace. On the H100, 16 in-place adds of
    ~10 µs on an L2-resident buffer enqueued in 95 % of their span at 129 % of the
    DRAM roof; cupti measured them busy
    (``benchmarks/results/findings_labelled_h100.json``).
    """
    p = f.placement
    if p is None:
        return False
    mem, comp, _, _ = roof_shares(p, ctx)
    return max(mem, comp) >= NEAR_ROOF_PCT


def _measured(f: RegionFacts, share: float) -> Finding:
    """Host- or launch-bound, from the region's shape (cupti, pm)."""
    host = f.shape.host_span_ns if f.shape is not None else None
    launches = max(f.launches or 1.0, 1.0)
    span = max(host or 0.0, f.median_ns)
    per_kernel = share * span / launches
    per_launch = span / launches
    many = launches >= MANY_LAUNCHES
    gain = 1.0 / share
    evidence = [
        f"GPU busy {format_percent(share * 100)} of its {format_duration(span)} span",
        (
            f"{format_count(launches)} launch{'es' if launches != 1 else ''}: "
            f"{format_duration(per_kernel)} of GPU work, "
            f"{format_duration(per_launch)} of host time each"
        ),
    ]
    if f.validity.note.endswith("follows the host"):
        evidence.append(f"RSD {format_percent(f.rsd_pct)}: the spread follows the host")
    if many:
        statement = (
            f"host-bound: {format_count(launches)} small kernels, each shorter than "
            "its launch; the GPU waits for the host between them"
        )
        action = (
            "capture it in a CUDA graph (torch.cuda.graphs, or torch.compile "
            "mode='reduce-overhead'), or fuse its small kernels"
        )
    else:
        statement = (
            f"launch-bound: its GPU work ({format_duration(per_kernel)} a kernel) "
            f"is shorter than its launch ({format_duration(per_launch)})"
        )
        action = (
            "give each launch more work (batch it, fuse it with its neighbours), or "
            "graph the loop it runs in"
        )
    return Finding(
        regions=(f.annotation,),
        kind="host_bound" if many else "launch_bound",
        family="launch",
        statement=statement,
        evidence=tuple(evidence),
        action=action,
        confidence="measured",
        basis="CUPTI activity timestamps: GPU busy time against the region's span",
        gain=gain,
        gain_basis=(
            f"at most {gain_text(gain)} if the GPU never waited for the host "
            "(its busy time alone)"
        ),
        config=f.config,
        config_index=f.config_index,
        time_ns=f.median_ns,
    )


def _timed(f: RegionFacts) -> Finding:
    """Likely launch-bound, from timing alone (events): its enqueue or duration."""
    enqueue = f.shape.enqueue_share if f.shape is not None else None
    evidence = [f"median {format_duration(f.median_ns)} over {f.runs} runs"]
    if enqueue is not None and enqueue >= ENQUEUE_FOLLOWS:
        statement = (
            f"likely launch-bound: the host took {format_percent(enqueue * 100)} of "
            "its GPU span to launch it: the reading is the GPU's time with every "
            "launch queued, the cell waits on the host"
        )
        evidence.append(
            f"host enqueue {format_percent(enqueue * 100)} of the GPU span "
            f"(from {format_percent(ENQUEUE_FOLLOWS * 100)} the host sets the pace)"
        )
    else:
        statement = (
            f"likely launch-bound: {format_duration(f.median_ns)} of GPU time, under "
            f"the ~{format_duration(TYPICAL_LAUNCH_NS)} a PyTorch op takes to launch: "
            "in a loop the host sets the pace"
        )
    if f.validity.note.endswith("follows the host"):
        evidence.append(f"RSD {format_percent(f.rsd_pct)}: the spread follows the host")
    return Finding(
        regions=(f.annotation,),
        kind="launch_bound",
        family="launch",
        statement=statement,
        evidence=tuple(evidence),
        action=(
            "give each launch more work (batch it, fuse its kernels), or capture it "
            f"in a CUDA graph; {_CUPTI} measures how long the GPU waits"
        ),
        confidence="timing",
        basis="the host's enqueue time and its duration (CUDA events)",
        answered_by=_CUPTI,
        config=f.config,
        config_index=f.config_index,
        time_ns=f.median_ns,
    )


def launch_findings(f: RegionFacts, ctx: Context) -> list[Finding]:
    """The region's launch- or host-bound finding, if the host sets its pace.

    Raises:
        Nothing.
    """
    if not paced_by_host(f, ctx):
        return []
    share = f.busy_share
    if share is not None:
        return [_measured(f, share)]
    return [_timed(f)]
