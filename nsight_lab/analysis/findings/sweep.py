"""Across a sweep: where a region's bound changes, and the config that works fastest.

For each region measured over two configs or more:

- ``sweep_regime``: its regime per config (host-paced, latency-, memory- or
  compute-bound, :mod:`.bound`'s thresholds), said once where it changes
  ("launch-bound up to n=1024, DRAM-bound from n=2048 at 78-83 % of its roof");
- ``sweep_best``: the config with the most work per second (FLOP/s where the
  region does FLOPs, else bytes/s), against the slowest.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from nsight_lab.analysis.findings.bound import LATENCY_BELOW_PCT, roof_shares
from nsight_lab.analysis.findings.finding import Confidence, Finding, config_text
from nsight_lab.analysis.findings.launch import paced_by_host
from nsight_lab.text.units import format_percent, format_quantity

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.analysis.findings.facts import Context, RegionFacts

__all__ = ["BEST_OVER_WORST", "sweep_findings"]

BEST_OVER_WORST = 1.1
"""The best config's rate over the worst's from which a sweep's best is worth saying."""
TWO = 2
"""Configs a sweep needs (one config is no sweep)."""
_IMPOSSIBLE = frozenset({"over_roof", "over_span", "low_coverage"})
_RANK: dict[Confidence, int] = {"timing": 0, "work model": 1, "measured": 2}


def _regime(
    f: RegionFacts, ctx: Context
) -> tuple[str, float | None, Confidence] | None:
    if any(flag.kind in _IMPOSSIBLE for flag in f.validity.flags):
        return None
    if paced_by_host(f, ctx):
        return (
            "launch-bound",
            None,
            "measured" if f.busy_share is not None else "timing",
        )
    p = f.placement
    if p is None:
        return None
    mem, comp, _, _ = roof_shares(p, ctx)
    sure: Confidence = (
        "measured"
        if "measured" in (p.bytes_source if p.bound == "memory" else p.flops_source)
        else "work model"
    )
    if max(mem, comp) < LATENCY_BELOW_PCT:
        return "latency-bound", None, sure
    if p.bound == "memory":
        return ("memory-bound" if ctx.host_timer else "DRAM-bound"), mem, sure
    return f"{p.dtype} compute-bound", comp, sure


def _span(configs: Sequence[RegionFacts], at: int, groups: int) -> str:
    first, last = config_text(configs[0].config), config_text(configs[-1].config)
    if at == 0 and groups > 1:
        return f"up to {last}" if len(configs) > 1 else f"at {first}"
    if at == groups - 1:
        return f"from {first}"
    return f"at {first}" if len(configs) == 1 else f"at {first} to {last}"


def _regimes(name: str, configs: Sequence[RegionFacts], ctx: Context) -> Finding | None:
    read = [(f, _regime(f, ctx)) for f in configs]
    if any(r is None for _, r in read):
        return None
    groups: list[tuple[str, list[RegionFacts], list[float]]] = []
    for f, r in read:
        if r is None:  # checked above
            continue
        if not groups or groups[-1][0] != r[0]:
            groups.append((r[0], [], []))
        groups[-1][1].append(f)
        if r[1] is not None:
            groups[-1][2].append(r[1])
    if len(groups) < TWO:  # a change needs two
        return None
    parts = []
    for at, (label, members, pcts) in enumerate(groups):
        roof = ""
        if pcts:
            lo, hi = min(pcts), max(pcts)
            share = format_percent(lo) if hi - lo < 1 else f"{lo:.0f}\u2013{hi:.0f} %"
            roof = f" at {share} of its roof"
        parts.append(f"{label} {_span(members, at, len(groups))}{roof}")
    sure = min((r[2] for _, r in read if r is not None), key=lambda c: _RANK[c])
    return Finding(
        regions=(name,),
        kind="sweep_regime",
        family="sweep",
        statement=f"the bound changes across the sweep: {', '.join(parts)}",
        evidence=tuple(
            f"{config_text(f.config)}: {r[0]}"
            + (f" {format_percent(r[1])}" if r[1] is not None else "")
            for f, r in read
            if r is not None
        ),
        action=(
            "profile at the sizes the workload really runs; the advice differs per "
            "regime"
        ),
        confidence=sure,
        basis="each config's regime, as its own findings read it",
        time_ns=sum(f.median_ns for f in configs),
    )


def _best(name: str, configs: Sequence[RegionFacts]) -> Finding | None:
    works = [(f, f.work) for f in configs if f.work is not None and f.median_ns > 0]
    if len(works) < TWO:  # a best needs two
        return None
    flops = all(w.flops > 0 for _, w in works)
    unit = "FLOP/s" if flops else "bytes/s"
    rates = [
        (f, (w.flops if flops else w.bytes_total) / (f.median_ns * 1e-9))
        for f, w in works
    ]
    best = max(rates, key=lambda x: x[1])
    worst = min(rates, key=lambda x: x[1])
    if best[1] < BEST_OVER_WORST * worst[1]:
        return None
    source = works[0][1].flops_source if flops else works[0][1].bytes_source
    return Finding(
        regions=(name,),
        kind="sweep_best",
        family="sweep",
        statement=(
            f"{config_text(best[0].config)} does the most work per second: "
            f"{format_quantity(best[1], unit)}, {best[1] / worst[1]:.1f}x "
            f"{config_text(worst[0].config)}'s"
        ),
        evidence=tuple(
            f"{config_text(f.config)}: {format_quantity(r, unit)}" for f, r in rates
        ),
        action="size or batch the work toward the best config where the workload can",
        confidence="work model" if source == "modelled" else "measured",
        basis=f"{'FLOPs' if flops else 'bytes'} {source}, over each config's median",
        time_ns=sum(f.median_ns for f in configs),
    )


def sweep_findings(facts: Sequence[RegionFacts], ctx: Context) -> list[Finding]:
    """Each swept region's regime changes and its best config.

    Raises:
        Nothing.
    """
    by_region: dict[str, list[RegionFacts]] = defaultdict(list)
    for f in facts:
        by_region[f.annotation].append(f)
    out: list[Finding] = []
    for name, configs in by_region.items():
        if len(configs) < TWO:
            continue
        ordered = sorted(configs, key=lambda f: f.config_index)
        out.extend(x for x in (_regimes(name, ordered, ctx), _best(name, ordered)) if x)
    return out
