"""One run of every rank -> one ``RunRecord`` per region.

Each rank reports a :class:`RankRun` per run (its regions' start and end on the
host's common clock, its telemetry, its collectives' modelled bytes); rank 0 gathers
them and :func:`assemble` makes the run's records. A region's record carries:

* ``duration_ns``: the region's **span**, from the first rank's start to the last
  rank's end, the time the group spent in it (what the slowest rank costs);
* one duration, start offset, device and telemetry per rank, and the **straggler**
  (:func:`straggler`), under the names of :mod:`nsight_lab.distributed.metrics`;
* ``telemetry``: rank 0's (every rank's is in the metrics).

Pure: the spawned ranks' parent (the notebook) and rank 0 of a process group in the
kernel both call it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import nsight_lab.distributed.metrics as m
from nsight_lab.contract.records import RunRecord, Telemetry

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nsight_lab.contract.records import JsonScalar


@dataclass(frozen=True)
class RankRun:
    """What one rank measured in one run (picklable: it crosses processes)."""

    rank: int
    device: int
    """The rank's CUDA device ordinal, :data:`~.metrics.HOST_DEVICE` on the host."""
    regions: dict[str, tuple[int, int]]
    """Region -> (start, end) in ns on the common clock, in the order they ran."""
    failed: tuple[str, ...] = ()
    """Regions whose body raised under ``annotate(ignore_failures=True)``."""
    telemetry: Telemetry = field(default_factory=Telemetry)
    bytes_sent: dict[str, float] = field(default_factory=dict)
    """Region -> modelled bytes this rank's collectives sent (counted once a config)."""
    collectives: dict[str, int] = field(default_factory=dict)
    thermal_wait_s: float = 0.0
    error: str | None = None
    """Set when the cell failed on this rank: ``"<Type>: <message>"``."""


def straggler(starts: Mapping[int, float], ends: Mapping[int, float]) -> int:
    """The rank the others waited for in one region.

    Where the ranks' ends differ more than their starts (a region of independent
    work: the ranks entered together), the rank that ended last. Where the starts
    differ more (a region that ends in a collective, which lines the ends up: the
    late rank arrived last and the others waited inside the collective), the rank
    that started last. Ties go to the lower rank.

    Args:
        starts: Rank -> the region's start (ns, common clock).
        ends: Rank -> the region's end, for the same ranks.

    Returns:
        The straggler's rank.

    Raises:
        ValueError: No rank is given.
    """
    if not starts:
        msg = "straggler: no rank measured the region"
        raise ValueError(msg)
    ranks = sorted(starts)
    start_spread = max(starts.values()) - min(starts.values())
    end_spread = max(ends.values()) - min(ends.values())
    by = ends if end_spread >= start_spread else starts
    return max(ranks, key=lambda r: (by[r], -r))


def assemble(  # noqa: PLR0913  (one run's context, keyword-only)
    runs: Sequence[RankRun],
    *,
    session_id: int,
    config_index: int,
    config: dict[str, JsonScalar],
    run_index: int,
    backend: str,
) -> list[RunRecord]:
    """The records of one run from every rank's :class:`RankRun`.

    Regions are taken in the order the lowest rank ran them (then any only other
    ranks ran). A region that failed on a rank (``ignore_failures``) has no value on
    it; one that no rank measured is NaN (as a failed region in one process).

    Raises:
        Nothing.
    """
    ordered = sorted(runs, key=lambda r: r.rank)
    names: dict[str, None] = {}
    for run in ordered:
        names.update(dict.fromkeys(run.regions))
        names.update(dict.fromkeys(run.failed))
    head = ordered[0] if ordered else None
    records: list[RunRecord] = []
    for name in names:
        values, duration = _region_values(name, ordered)
        records.append(
            RunRecord(
                session_id=session_id,
                config_index=config_index,
                config=config,
                run_index=run_index,
                annotation=name,
                duration_ns=duration,
                backend=backend,
                metrics=values,
                telemetry=head.telemetry if head is not None else Telemetry(),
                thermal_wait_s=max((r.thermal_wait_s for r in ordered), default=0.0),
            )
        )
    return records


def _region_values(
    name: str, ordered: Sequence[RankRun]
) -> tuple[dict[str, float], float]:
    """One region's per-rank metrics over the ranks' runs, and its span."""
    values: dict[str, float] = {m.COUNT: float(len(ordered))}
    starts: dict[int, float] = {}
    ends: dict[int, float] = {}
    for run in ordered:
        values[m.rank_metric(m.DEVICE, run.rank)] = float(run.device)
        _telemetry_values(values, run)
        span = run.regions.get(name)
        if span is None or name in run.failed:
            values[m.rank_metric(m.DURATION, run.rank)] = math.nan
            continue
        starts[run.rank], ends[run.rank] = float(span[0]), float(span[1])
        values[m.rank_metric(m.DURATION, run.rank)] = float(span[1] - span[0])
    if starts:
        first = min(starts.values())
        for rank, start in starts.items():
            values[m.rank_metric(m.START, rank)] = start - first
        duration = max(ends.values()) - first
        values[m.STRAGGLER] = float(straggler(starts, ends))
    else:
        duration = math.nan
        values[m.STRAGGLER] = math.nan
    values[m.SPAN] = duration
    sent = [r.bytes_sent[name] for r in ordered if name in r.bytes_sent]
    if sent:
        values[m.COMM_BYTES] = max(sent)
        values[m.COMM_COUNT] = float(max(r.collectives.get(name, 0) for r in ordered))
    return values, duration


def _telemetry_values(values: dict[str, float], run: RankRun) -> None:
    t = run.telemetry
    for quantity, value in (
        (m.SM_CLOCK, t.sm_clock_mhz),
        (m.MEM_CLOCK, t.mem_clock_mhz),
        (m.TEMPERATURE, t.temperature_c),
        (m.POWER, t.power_w),
    ):
        if value is not None:
            values[m.rank_metric(quantity, run.rank)] = float(value)
    if t.sm_clock_mhz is not None or t.temperature_c is not None:
        values[m.rank_metric(m.THROTTLED, run.rank)] = float(t.throttled)
