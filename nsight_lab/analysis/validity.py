"""Numbers that cannot be true, and launch-bound regions: per region and config.

Issue 28: a backward read by the cupti backend as ``2.083 µs · 68934 % of roof`` was
shown as a plain number, and a launch-bound region's RSD of 24 % read as noise. These
rules read a region's runs (their shape metrics, :mod:`nsight_lab.contract.shape`,
where a per-kernel backend gave them) and its roofline placement, and say in one short
line each what cannot be true, its likely cause and what to do. Every view shows what
they return (through the view model and the frame) and decides nothing itself.

**Flags** (:class:`Flag`):

- ``over_roof``: past :data:`ROOF_TOLERANCE_PCT` of its roof. Roofs are the
  datasheet's at the boost clock, which the SM clock does not pass, or measured by
  ``%nsight peaks`` (a copy and a matmul, a few per cent of spread); a median
  duration is good to well under 1 %. 10 % over is past all of that: the duration
  misses work, or a modelled work figure counts work the region did not do (or, for
  modelled bytes, data the L2 served).
- ``over_span``: in some run, on one stream, the kernel time (the duration: the sum
  of its kernels) passes the GPU span by :data:`SPAN_TOLERANCE`. Kernels of one
  stream run one after another and the GPU timer rounds monotonically, so only
  overlapping launches (programmatic dependent launch starts a prologue under the
  previous kernel's tail: a few per cent) or records counted twice do that. Several
  streams overlap legitimately: not flagged.
- ``low_coverage``: the GPU busy under :data:`COVERAGE_FLOOR` of the region's host
  span (median over runs): its GPU numbers describe under a hundredth of it.

**The launch-bound note** (:attr:`Validity.note`): the GPU busy under
:data:`LAUNCH_BOUND_BELOW` of the span (idle more than working: launches set the
pace); with a duration RSD past :data:`~nsight_lab.stats.STABLE_RSD_PCT`, it says
the spread follows the host when the host span varies run to run at least as much
as the GPU's busy time. Backends without shape metrics get the roof check only.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from nsight_lab.contract import shape
from nsight_lab.stats import STABLE_RSD_PCT, rsd_pct
from nsight_lab.text.units import format_duration, format_percent

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from nsight_lab.contract.records import RunRecord
    from nsight_lab.roofline.placement import Placement

__all__ = [
    "COVERAGE_FLOOR", "LAUNCH_BOUND_BELOW", "ROOF_TOLERANCE_PCT", "SPAN_TOLERANCE",
    "Flag", "RegionShape", "Validity", "check_region", "check_session", "checks_json",
    "checks_lines", "coverage_flag", "launch_note", "region_shape", "roof_flag",
    "span_flag",
]  # fmt: skip

ROOF_TOLERANCE_PCT = 110.0
"""% of roof past which a placement cannot be true (see the module's docstring)."""
SPAN_TOLERANCE = 1.05
"""Kernel time over GPU span, on one stream, past which records overlap."""
COVERAGE_FLOOR = 0.01
"""GPU busy share of the host span under which the GPU numbers describe a sliver."""
LAUNCH_BOUND_BELOW = 0.5
"""GPU busy share of the span under which a region is launch-bound."""

Kind = Literal["over_roof", "over_span", "low_coverage"]


@dataclass(frozen=True)
class Flag:
    """One number of a region that cannot be true: what, the likely cause, what to do.

    Attributes:
        kind: ``over_roof``, ``over_span`` or ``low_coverage``.
        text: What cannot be true, e.g. ``68934 % of roof cannot be true``.
        cause: Its likely cause, one short line.
        action: What to do, one short line.
    """

    kind: Kind
    text: str
    cause: str
    action: str


@dataclass(frozen=True)
class RegionShape:
    """A region's shape over its runs (those with shape metrics: ``runs``).

    Attributes:
        busy_share: Median over runs of GPU busy / the longer of the host span
            and the GPU span (at most 1 where busy <= span); None without runs.
        host_span_ns: Median host span (ns); None where not known.
        over_span: Per run on one stream: kernel time / GPU span.
        streams: The most streams any run used.
        foreign: The most launches any run took from other threads.
        duplicates: The most records CUPTI delivered twice in any run.
        busy_rsd_pct, host_rsd_pct: RSD of the busy time, host span (NaN: none).
    """

    runs: int
    busy_share: float | None
    host_span_ns: float | None
    over_span: tuple[float, ...] = ()
    streams: int = 0
    foreign: int = 0
    duplicates: int = 0
    busy_rsd_pct: float = math.nan
    host_rsd_pct: float = math.nan


def _finite(metrics: Mapping[str, float], name: str) -> float | None:
    value = metrics.get(name)
    return value if value is not None and math.isfinite(value) else None


def region_shape(records: Sequence[RunRecord]) -> RegionShape | None:
    """The shape of one region's runs; None when no run has shape metrics.

    Raises:
        Nothing.
    """
    shares: list[float] = []
    busy: list[float] = []
    hosts: list[float] = []
    over: list[float] = []
    most = {shape.STREAMS: 0.0, shape.FOREIGN: 0.0, shape.DUPLICATES: 0.0}
    for r in records:
        b, span = _finite(r.metrics, shape.BUSY_NS), _finite(r.metrics, shape.SPAN_NS)
        if b is None or span is None or span <= 0:
            continue
        host = _finite(r.metrics, shape.HOST_NS)
        # The region's extent on either clock: async kernels may end after its exit.
        share = min(b, span) / max(host or 0.0, span)
        if not math.isfinite(share):
            continue
        shares.append(share)
        busy.append(b)
        if host is not None and host > 0:
            hosts.append(host)
        for name, seen in most.items():
            most[name] = max(seen, _finite(r.metrics, name) or 0.0)
        streams = _finite(r.metrics, shape.STREAMS)
        if streams is not None and streams <= 1 and math.isfinite(r.duration_ns):
            over.append(r.duration_ns / span)
    if not shares:
        return None
    return RegionShape(
        runs=len(shares),
        busy_share=statistics.median(shares),
        host_span_ns=statistics.median(hosts) if hosts else None,
        over_span=tuple(over),
        streams=int(most[shape.STREAMS]),
        foreign=int(most[shape.FOREIGN]),
        duplicates=int(most[shape.DUPLICATES]),
        busy_rsd_pct=rsd_pct(busy),
        host_rsd_pct=rsd_pct(hosts),
    )


def roof_flag(placement: Placement, region: RegionShape | None = None) -> Flag | None:
    """``over_roof`` when ``placement`` passes its roof by the tolerance, else None.

    Raises:
        Nothing.
    """
    pct = placement.pct_of_roof
    if not pct > ROOF_TOLERANCE_PCT:  # NaN is no flag
        return None
    modelled = "modelled" in (placement.flops_source, placement.bytes_source)
    missed = region is not None and (
        region.foreign > 0
        or (region.busy_share is not None and region.busy_share < LAUNCH_BOUND_BELOW)
    )
    if missed or not modelled:
        cause = "its duration misses kernels it caused (other threads or streams)"
        action = "check its kernels and threads; time it with --backend events"
    else:
        cause = "the work model counts more work than its kernels did"
        if placement.bound == "memory":
            cause += ", or the L2 served its bytes"
        action = "count its work: --backend ncu (or pm with --metrics)"
    return Flag(
        "over_roof", f"{format_percent(pct)} of roof cannot be true", cause, action
    )


def span_flag(region: RegionShape) -> Flag | None:
    """``over_span`` when a one-stream run's kernel time passes its GPU span.

    Raises:
        Nothing.
    """
    over = [x for x in region.over_span if x > SPAN_TOLERANCE]
    if not over:
        return None
    runs = f"{len(over)} of {len(region.over_span)} runs"
    text = f"kernel time {max(over):.2f}x its GPU span on one stream ({runs})"
    if region.duplicates:
        cause = (
            f"CUPTI delivered {region.duplicates} records twice: another profiler "
            "in the process"
        )
    else:
        cause = "activity records counted twice (another CUPTI client) or overlapping"
    action = "profile without another profiler attached, or use --backend events"
    return Flag("over_span", text, cause, action)


def coverage_flag(region: RegionShape) -> Flag | None:
    """``low_coverage`` when the GPU was busy under the floor of the host span.

    Raises:
        Nothing.
    """
    share = region.busy_share
    if share is None or region.host_span_ns is None or share >= COVERAGE_FLOOR:
        return None
    text = (
        f"its kernels cover {format_percent(share * 100)} of its "
        f"{format_duration(region.host_span_ns)} on the host"
    )
    if region.foreign:
        cause = f"{region.foreign} launches came from other threads (autograd's engine)"
    else:
        cause = (
            "its GPU work ran elsewhere (another thread or process), or it is host work"
        )
    action = "time it with --backend events, or annotate where the kernels launch"
    return Flag("low_coverage", text, cause, action)


def launch_note(region: RegionShape, duration_rsd_pct: float) -> str:
    """The launch-bound note ("" when the GPU was busy enough, or nothing is known).

    ``launch-bound: GPU busy 35 % of the span``, then ``; the spread follows the
    host`` when the duration's RSD is past :data:`~nsight_lab.stats.STABLE_RSD_PCT`
    and the host span varies at least as much as the GPU's busy time.

    Raises:
        Nothing.
    """
    share = region.busy_share
    if share is None or not COVERAGE_FLOOR <= share < LAUNCH_BOUND_BELOW:
        return ""
    note = f"launch-bound: GPU busy {format_percent(share * 100)} of the span"
    noisy = duration_rsd_pct > STABLE_RSD_PCT
    host, busy = region.host_rsd_pct, region.busy_rsd_pct
    if noisy and host >= (busy if math.isfinite(busy) else 0.0):  # NaN host: no
        note += "; the spread follows the host"
    return note


@dataclass(frozen=True)
class Validity:
    """What the views say of one region and config beside its numbers.

    Attributes:
        annotation: The region's name.
        config_index: The config's index.
        flags: The numbers that cannot be true, each with cause and action.
        busy_pct: GPU busy share of the region's span, % (None: no shape).
        note: The launch-bound note, or "".
        config: The config's parameters.
    """

    annotation: str
    config_index: int
    flags: tuple[Flag, ...] = ()
    busy_pct: float | None = None
    note: str = ""
    config: Mapping[str, Any] = field(default_factory=dict)

    @property
    def flag_text(self) -> str:
        """The flags' texts, ``; `` apart ("" when none): a table's cell."""
        return "; ".join(f.text for f in self.flags)

    @property
    def busy_text(self) -> str:
        """The GPU busy cell: ``35 %``, ``35 % launch-bound``, or "" with no shape."""
        if self.busy_pct is None:
            return ""
        text = format_percent(self.busy_pct)
        return f"{text} launch-bound" if self.note else text


def check_region(
    records: Sequence[RunRecord], placement: Placement | None = None
) -> Validity:
    """The flags and the launch-bound note of one region and config's runs.

    ``records`` are one (annotation, config) group's (at least one);
    ``placement`` its roofline placement, if placed.

    Raises:
        Nothing.
    """
    first = records[0]
    region = region_shape(records)
    found: list[Flag | None] = []
    if placement is not None:
        found.append(roof_flag(placement, region))
    note = ""
    if region is not None:
        found.extend((span_flag(region), coverage_flag(region)))
        durations = [r.duration_ns for r in records if math.isfinite(r.duration_ns)]
        note = launch_note(region, rsd_pct(durations))
    share = None if region is None else region.busy_share
    return Validity(
        annotation=first.annotation,
        config_index=first.config_index,
        flags=tuple(f for f in found if f is not None),
        busy_pct=None if share is None else share * 100.0,
        note=note,
        config=dict(first.config),
    )


def check_session(
    records: Iterable[RunRecord], placements: Sequence[Placement] = ()
) -> dict[tuple[str, int], Validity]:
    """:func:`check_region` of every (annotation, config index) of ``records``.

    In the order the regions first appear.

    Raises:
        Nothing.
    """
    groups: dict[tuple[str, int], list[RunRecord]] = defaultdict(list)
    for record in records:
        groups[(record.annotation, record.config_index)].append(record)
    placed = {(p.annotation, p.config_index): p for p in placements}
    return {key: check_region(group, placed.get(key)) for key, group in groups.items()}


def _config_text(config: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())


def checks_json(
    checks: Iterable[Validity], *, with_config: bool = False
) -> list[dict[str, str]]:
    """What the views list under the summary table: one entry per flag and note.

    Each ``{"region", "config", "kind", "text", "cause", "action"}``; a note's
    ``kind`` is ``launch_bound`` and it has no cause or action. ``config`` is the
    config's parameters as text when ``with_config``, else "".

    Raises:
        Nothing.
    """
    out: list[dict[str, str]] = []
    for v in checks:
        config = _config_text(v.config) if with_config else ""
        head = {"region": v.annotation, "config": config}
        out.extend(
            {
                **head,
                "kind": f.kind,
                "text": f.text,
                "cause": f.cause,
                "action": f.action,
            }
            for f in v.flags
        )
        if v.note:
            out.append(
                {
                    **head,
                    "kind": "launch_bound",
                    "text": v.note,
                    "cause": "",
                    "action": "",
                }
            )
    return out


def checks_lines(entries: Iterable[Mapping[str, str]]) -> list[str]:
    """:func:`checks_json`'s entries as text lines (the terminal and static page).

    ``! region: text`` then ``  cause: ...`` and ``  do: ...`` for a flag;
    ``note region: text`` for a launch-bound region.

    Raises:
        Nothing.
    """
    lines: list[str] = []
    for e in entries:
        where = e["region"] + (f" ({e['config']})" if e.get("config") else "")
        if e["kind"] == "launch_bound":
            lines.append(f"note {where}: {e['text']}")
            continue
        lines.append(f"! {where}: {e['text']}")
        lines.append(f"  cause: {e['cause']}")
        lines.append(f"  do: {e['action']}")
    return lines
