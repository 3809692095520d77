"""Numbers that cannot be true, or not usable as they are, and notes: per region.

Size: one module holds every rule the views show beside a region's numbers, so no
view grows a second set (issue 30 added the quality flags and the not-modelled note).

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

**Quality flags** (issue 30: a first profile read 300x off, unflagged):

- ``unsteady``: the duration's RSD past :data:`UNUSABLE_RSD_PCT`: the runs disagree
  so much that the median says little (the cpu backend on a busy host read
  6.588 ms at RSD 70 % where reruns read 15-20 µs). The cause names the host probe
  when it moved past :data:`~nsight_lab.host_speed.HOST_TOLERANCE` in the session.
- ``throttled``: NVML saw the GPU throttled in at least half the runs: the numbers
  hold for that clock only.

**The not-modelled note** (:attr:`Validity.unmodelled`): TFLOP/s is shown as
undefined, never 0, when the work model counted no FLOPs for the region's ops; the
note names the ops it has no formula for (and says so where it counted the rest).

**The launch-bound note** (:attr:`Validity.note`): the GPU busy under
:data:`LAUNCH_BOUND_BELOW` of the span (idle more than working: launches set the
pace); with a duration RSD past :data:`~nsight_lab.stats.STABLE_RSD_PCT`, it says
the spread follows the host when the host span varies run to run at least as much
as the GPU's busy time. The events backend sees no busy time: its note says
*likely* launch-bound where the host's enqueue lasted :data:`ENQUEUE_FOLLOWS` of the
GPU span or more. Backends without shape metrics get the roof check only.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from nsight_lab.contract import shape
from nsight_lab.host_speed import HOST_TOLERANCE, PROBE_METRIC
from nsight_lab.roofline.placement import region_work
from nsight_lab.roofline.workmodel import UNMODELLED_PREFIX
from nsight_lab.stats import STABLE_RSD_PCT, rsd_pct
from nsight_lab.text.units import format_duration, format_percent

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from nsight_lab.contract.records import RunRecord
    from nsight_lab.roofline.placement import Placement, RegionWork

__all__ = [
    "COVERAGE_FLOOR", "FLAG_WORDS", "LAUNCH_BOUND_BELOW", "ROOF_TOLERANCE_PCT",
    "SPAN_TOLERANCE", "UNUSABLE_RSD_PCT", "Flag", "RegionShape", "Validity",
    "check_region", "check_session", "checks_headline", "checks_json", "checks_lines",
    "coverage_flag", "flag_words_of", "launch_note", "region_shape", "roof_flag",
    "span_flag", "throttle_flag", "unmodelled_note", "unmodelled_ops", "unsteady_flag",
]  # fmt: skip

ROOF_TOLERANCE_PCT = 110.0
"""% of roof past which a placement cannot be true (see the module's docstring)."""
SPAN_TOLERANCE = 1.05
"""Kernel time over GPU span, on one stream, past which records overlap."""
COVERAGE_FLOOR = 0.01
"""GPU busy share of the host span under which the GPU numbers describe a sliver."""
LAUNCH_BOUND_BELOW = 0.5
"""GPU busy share of the span under which a region is launch-bound."""
ENQUEUE_FOLLOWS = 0.8
"""Host enqueue time / GPU span (events) from which a region is likely launch-bound:
each region runs behind a head start as long as its launches, so its span is the
GPU's time with every launch queued; a GPU-bound region's launches take a fraction
of that, a launch-bound region's as long or longer (the cell waits on the host)."""

UNUSABLE_RSD_PCT = 50.0
"""Duration RSD past which a region's runs disagree too much for a median to stand
for them: an idle GPU holds a few per cent; the busy-host quickstart read 62-70 %."""
FLAG_WORDS: dict[str, str] = {
    "over_roof": "past the roof",
    "over_span": "records overlap",
    "low_coverage": "GPU work elsewhere",
    "unsteady": "runs too spread to use",
    "throttled": "GPU throttled",
}
"""A flag's kind in a few words: the headline's and a table's Flag cell (the flag's
own sentence, its cause and action are said once, in the list of flags)."""
_FLAG_TEXT_KINDS: tuple[tuple[str, str], ...] = (
    ("kernel time ", "over_span"),
    ("its kernels cover ", "low_coverage"),
    ("runs spread ", "unsteady"),
    ("throttled (", "throttled"),
)
"""How each kind's text begins (``over_roof``'s ends in ``of roof cannot be true``):
the frame's ``Flag`` column holds the texts, the views the words."""


def flag_words_of(flag_text: str) -> str:
    """:attr:`Validity.flag_words` from :attr:`Validity.flag_text`.

    The frame's ``Flag`` column holds the texts: a table made from the frame then
    reads as the view model's.

    Raises:
        Nothing: a text of no known kind is kept as it is.
    """
    words: dict[str, None] = {}
    for part in flag_text.split("; ") if flag_text else []:
        kind = next((k for head, k in _FLAG_TEXT_KINDS if part.startswith(head)), None)
        if kind is None and part.endswith("of roof cannot be true"):
            kind = "over_roof"
        words[FLAG_WORDS[kind] if kind else part] = None
    return "; ".join(words)


THROTTLED_SHARE = 0.5
"""Share of throttled runs from which a region is flagged ``throttled``."""

Kind = Literal["over_roof", "over_span", "low_coverage", "unsteady", "throttled"]


@dataclass(frozen=True)
class Flag:
    """One number of a region that cannot be true: what, the likely cause, what to do.

    Attributes:
        kind: ``over_roof``, ``over_span``, ``low_coverage``, ``unsteady`` or
            ``throttled``.
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
        enqueue_share: The events backend's view, where no busy time is known:
            median over runs of the host's enqueue time / the region's GPU span
            (:data:`~nsight_lab.contract.shape.ENQUEUE_NS`); None elsewhere.
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
    enqueue_share: float | None = None


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
        return _enqueue_shape(records)
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


def _enqueue_shape(records: Sequence[RunRecord]) -> RegionShape | None:
    """The events backend's shape: how long the host took to enqueue the GPU span."""
    enqueues: list[float] = []
    shares: list[float] = []
    for r in records:
        enqueue = _finite(r.metrics, shape.ENQUEUE_NS)
        if enqueue is not None and math.isfinite(r.duration_ns) and r.duration_ns > 0:
            enqueues.append(enqueue)
            shares.append(enqueue / r.duration_ns)
    if not shares:
        return None
    return RegionShape(
        runs=len(shares),
        busy_share=None,
        host_span_ns=None,
        host_rsd_pct=rsd_pct(enqueues),
        enqueue_share=statistics.median(shares),
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
    noisy = duration_rsd_pct > STABLE_RSD_PCT
    host, busy = region.host_rsd_pct, region.busy_rsd_pct
    enqueue = region.enqueue_share
    if share is None and enqueue is not None and enqueue >= ENQUEUE_FOLLOWS:
        note = (
            f"likely launch-bound: the host took {format_percent(enqueue * 100)} of "
            "the GPU span to launch it (events see no idle gaps: --backend cupti "
            "measures the GPU's busy share)"
        )
        return note + ("; the spread follows the host" if noisy else "")
    if share is None or not COVERAGE_FLOOR <= share < LAUNCH_BOUND_BELOW:
        return ""
    note = f"launch-bound: GPU busy {format_percent(share * 100)} of the span"
    if noisy and host >= (busy if math.isfinite(busy) else 0.0):  # NaN host: no
        note += "; the spread follows the host"
    return note


def unsteady_flag(records: Sequence[RunRecord]) -> Flag | None:
    """``unsteady`` when the duration's RSD passes :data:`UNUSABLE_RSD_PCT`.

    The cause is the host when its probe (the cpu backend's) moved past
    :data:`~nsight_lab.host_speed.HOST_TOLERANCE` over the session.

    Raises:
        Nothing.
    """
    durations = [r.duration_ns for r in records if math.isfinite(r.duration_ns)]
    spread = rsd_pct(durations)
    if not spread > UNUSABLE_RSD_PCT:  # NaN (one run) is no flag
        return None
    probes = [
        p
        for r in records
        if (p := _finite(r.metrics, PROBE_METRIC)) is not None and p > 0
    ]
    text = f"runs spread {format_percent(spread)} (RSD): the median is not usable"
    if probes and max(probes) / min(probes) - 1 > HOST_TOLERANCE:
        cause = (
            f"the host was busy: its speed probe read {format_duration(min(probes))}"
            f" to {format_duration(max(probes))}"
        )
    else:
        cause = (
            "a few runs far from the rest: other work on the machine, or too few runs"
        )
    action = "rerun on an idle machine with more --runs before reading the numbers"
    return Flag("unsteady", text, cause, action)


def throttle_flag(records: Sequence[RunRecord]) -> Flag | None:
    """``throttled`` when NVML saw the GPU throttled in at least half the runs.

    Raises:
        Nothing.
    """
    throttled = [r for r in records if r.telemetry.throttled]
    if not records or len(throttled) < THROTTLED_SHARE * len(records):
        return None
    reasons = dict.fromkeys(
        w for r in throttled for w in r.telemetry.clock_event_reasons
    )
    why = f" ({', '.join(reasons)})" if reasons else ""
    text = f"throttled ({len(throttled)} of {len(records)} runs)"
    cause = f"the GPU held its SM clock down{why}: the numbers hold for that clock"
    action = "profile with --clock-control base --thermal auto"
    return Flag("throttled", text, cause, action)


def unmodelled_ops(records: Iterable[RunRecord]) -> list[str]:
    """The ops the work model had no FLOP count for in ``records``, as aten names.

    From the ``model__unmodelled__aten.<op>`` metrics
    (:data:`~nsight_lab.roofline.workmodel.UNMODELLED_PREFIX`), first seen first;
    none in a session the work model counted before it named them.

    Raises:
        Nothing.
    """
    names = (
        k.removeprefix(UNMODELLED_PREFIX)
        for r in records
        for k in r.metrics
        if k.startswith(UNMODELLED_PREFIX)
    )
    return list(dict.fromkeys(names))


def unmodelled_note(
    placement: Placement | RegionWork | None, ops: Sequence[str] = ()
) -> str:
    """The not-modelled note for TFLOP/s from the work model, else "".

    ``placement``: the region's roofline placement, or its work alone where the
    device has no roofs (the cpu backend before ``%nsight peaks --cpu``): the table
    shows TFLOP/s from the work either way. With the ops the model did not count
    (``ops``: :func:`unmodelled_ops`), the note names them: where it counted no
    FLOPs, TFLOP/s is not shown; where it counted some, the figure leaves those ops
    out. Without names (a session counted before they were kept, or data movement
    only) it says what the model cannot tell.

    Raises:
        Nothing.
    """
    if placement is None or placement.flops_source != "modelled":
        return ""
    named = ", ".join(ops[:3]) + (f" and {len(ops) - 3} more" if len(ops) > 3 else "")  # noqa: PLR2004
    if ops and not placement.flops:
        return (
            f"TFLOP/s not shown: the work model does not count {named}; "
            "--backend ncu measures it"
        )
    if ops:
        return (
            f"TFLOP/s counts part of the work: the work model does not count {named}; "
            "--backend ncu measures it"
        )
    if placement.flops:
        return ""
    return (
        "TFLOP/s not shown: the work model counts no FLOPs for its ops (not "
        "modelled, or data movement only); --backend ncu measures them"
    )


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
        unmodelled: The not-modelled note (:func:`unmodelled_note`), or "".
    """

    annotation: str
    config_index: int
    flags: tuple[Flag, ...] = ()
    busy_pct: float | None = None
    note: str = ""
    config: Mapping[str, Any] = field(default_factory=dict)
    unmodelled: str = ""

    @property
    def flag_text(self) -> str:
        """The flags' texts, ``; `` apart ("" when none): a table's cell."""
        return "; ".join(f.text for f in self.flags)

    @property
    def flag_words(self) -> str:
        """The flags' kinds in words, ``; `` apart ("" when none): a Flag cell.

        Beside the list that says each flag once (:data:`FLAG_WORDS`).
        """
        return "; ".join(dict.fromkeys(FLAG_WORDS[f.kind] for f in self.flags))

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
    found: list[Flag | None] = [unsteady_flag(records), throttle_flag(records)]
    if placement is not None:
        found.append(roof_flag(placement, region))
    note = ""
    if region is not None:
        found.extend((span_flag(region), coverage_flag(region)))
        durations = [r.duration_ns for r in records if math.isfinite(r.duration_ns)]
        note = launch_note(region, rsd_pct(durations))
    share = None if region is None else region.busy_share
    # Unplaced (no roofs), the table still shows TFLOP/s from the work model.
    work = (
        placement if placement is not None else next(iter(region_work(records)), None)
    )
    return Validity(
        annotation=first.annotation,
        config_index=first.config_index,
        flags=tuple(f for f in found if f is not None),
        busy_pct=None if share is None else share * 100.0,
        note=note,
        config=dict(first.config),
        unmodelled=unmodelled_note(work, unmodelled_ops(records)),
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
        if v.unmodelled:
            out.append(
                {**head, "kind": "not_modelled", "text": v.unmodelled}
                | {"cause": "", "action": ""}
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
    ``note region: text`` for a launch-bound region. Each thing is said once: one
    text of many regions is one line naming them (more than three: their count),
    and flags of one kind with the same action (five regions too spread on a busy
    host) are their lines, each cause after the lines it explains, then that
    action once.

    Raises:
        Nothing.
    """
    lines: list[str] = []
    grouped: dict[tuple[str, str], dict[str, dict[str, list[str]]]] = {}
    for e in entries:
        where = e["region"] + (f" ({e['config']})" if e.get("config") else "")
        note = e["kind"] in {"launch_bound", "not_modelled"}
        key = (e["kind"], e["text"] if note else e.get("action", ""))
        causes = grouped.setdefault(key, {})
        causes.setdefault(e.get("cause", ""), {}).setdefault(e["text"], []).append(
            where
        )
    for (kind, second), causes in grouped.items():
        note = kind in {"launch_bound", "not_modelled"}
        for cause, texts in causes.items():
            for text, places in texts.items():
                short = len(places) <= 3  # noqa: PLR2004  (read at a glance)
                where = ", ".join(places) if short else f"{len(places)} regions"
                lines.append(f"{'note' if note else '!'} {where}: {text}")
            if not note:
                lines.append(f"  cause: {cause}")
        if not note:
            lines.append(f"  do: {second}")
    return lines


def checks_headline(
    entries: Iterable[Mapping[str, str]], *, place: str = "under the table"
) -> str:
    """One line for the top of a view: how many regions are flagged and why ("").

    ``! 12 regions flagged: GPU throttled; ...`` -- the first thing a reader sees,
    so a number that is not usable is not read as one. ``place``: where the flags'
    causes are (``show`` lists them under the table, the cell's output right below).

    Raises:
        Nothing.
    """
    flagged: dict[str, None] = {}
    kinds: dict[str, None] = {}
    words = FLAG_WORDS
    for e in entries:
        if e["kind"] in words:
            flagged[e["region"] + e.get("config", "")] = None
            kinds[words[e["kind"]]] = None
    if not flagged:
        return ""
    n = len(flagged)
    return (
        f"! {n} region{'s' if n != 1 else ''} flagged: {', '.join(kinds)}; "
        f"each flag's cause and what to do are {place}"
    )
