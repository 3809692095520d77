"""Cache-sensitive regions: the same cell timed cold (after an L2 flush) and warm.

By default every run starts cold: the L2 is flushed before it (``--cache-control
all``, Nsight Compute's default), so a region is timed as if nothing it reads was
left in the L2 by what ran before. In a training step or a decode loop it often
runs warm: its producer just wrote its inputs. Where the same cell was also
profiled with ``--cache-control none`` (or the reverse) on the same device and
backend, each region's median cold over its median warm says how much it leans on
the L2: over :data:`COLD_OVER_WARM`, the finding ``cache_sensitive`` names both
sessions and both medians. It is timing only, and promises no gain: which timing
is right depends on how the region runs in the workload.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import TYPE_CHECKING

from nsight_lab.analysis.findings.finding import Finding
from nsight_lab.text.units import format_duration

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.analysis.findings.facts import RegionFacts
    from nsight_lab.contract.records import RunRecord, SessionInfo

__all__ = ["COLD_OVER_WARM", "MIN_RUNS", "Counterpart", "flushed", "warmth_findings"]

COLD_OVER_WARM = 1.2
"""Cold this many times slower than warm, or more: the region leans on the L2."""
MIN_RUNS = 5
"""Runs each side needs before its median is compared."""

Counterpart = tuple["SessionInfo", "Sequence[RunRecord]"]
"""The same cell's other session (the other cache mode) and its runs."""


def flushed(session: SessionInfo | None) -> bool | None:
    """Whether the session's runs started cold (None: unknown, or per region)."""
    mode = (session.options if session is not None else {}).get("cache_control")
    return {"all": True, "none": False}.get(str(mode)) if mode is not None else None


def same_cell(a: SessionInfo, b: SessionInfo) -> bool:
    """Whether ``b`` profiled ``a``'s cell on its device and backend, the other way."""
    return (
        a.id != b.id
        and bool(a.cell_source)
        and a.cell_source == b.cell_source
        and a.device == b.device
        and a.backend == b.backend
        and flushed(a) is not None
        and flushed(b) is not None
        and flushed(a) != flushed(b)
    )


def _durations(records: Sequence[RunRecord]) -> dict[tuple[str, int], list[float]]:
    durations: dict[tuple[str, int], list[float]] = defaultdict(list)
    for r in records:
        if r.duration_ns == r.duration_ns and r.duration_ns > 0:  # not NaN
            durations[r.annotation, r.config_index].append(r.duration_ns)
    return durations


def _of(session_id: int, mode: str) -> str:
    return f"session {session_id}, --cache-control {mode}"


def warmth_findings(
    facts: Sequence[RegionFacts],
    session: SessionInfo | None,
    counterpart: Counterpart | None,
) -> list[Finding]:
    """Each region of ``facts`` that ran much slower cold than warm.

    Raises:
        Nothing.
    """
    if session is None or counterpart is None or not same_cell(session, counterpart[0]):
        return []
    other, other_runs = counterpart
    theirs = _durations(other_runs)
    cold_here = bool(flushed(session))
    found = []
    for f in facts:
        durations = theirs.get((f.annotation, f.config_index), [])
        if f.runs < MIN_RUNS or len(durations) < MIN_RUNS:
            continue
        there = statistics.median(durations)
        cold, warm = (f.median_ns, there) if cold_here else (there, f.median_ns)
        cold_id, warm_id = (
            (session.id, other.id) if cold_here else (other.id, session.id)
        )
        if warm <= 0 or cold / warm < COLD_OVER_WARM:
            continue
        found.append(
            Finding(
                regions=(f.annotation,),
                kind="cache_sensitive",
                family="cache",
                statement=(
                    f"cache-sensitive: {cold / warm:.2f}\u00d7 slower cold (after an "
                    "L2 flush) than warm: it reads data the L2 keeps from what ran "
                    "before"
                ),
                evidence=(
                    f"cold: median {format_duration(cold)} ({_of(cold_id, 'all')})",
                    f"warm: median {format_duration(warm)} ({_of(warm_id, 'none')})",
                ),
                action=(
                    "time it the way the workload runs it (warm right after its "
                    "producer, cold after unrelated work); keep its working set "
                    "within the L2 where it is reused"
                ),
                confidence="timing",
                basis="medians of the same cell, flushed and not, same device",
                config=f.config,
                config_index=f.config_index,
                time_ns=f.median_ns,
            )
        )
    return found
