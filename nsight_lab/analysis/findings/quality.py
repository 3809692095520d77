"""Measurement quality: what makes a region's numbers doubtful, said before the rest.

Issue 31: a throttled clock, thermal waits, a wide spread and its likely cause, too
few runs for the interval asked -- each said before any other finding of the region
it concerns, so a diagnosis is never read off numbers that do not hold. The flags
of :mod:`nsight_lab.analysis.validity` (numbers that cannot be true, unusable
spreads, throttling) are reused as they are, their cause and action included; this
module adds what validity does not judge: a spread that is wide but usable and its
likely cause, too few runs, a ``--target-rsd`` not reached, thermal waits. A
region's own pace setting its spread (launch-bound: the span follows the host) is
the launch finding's evidence, not a quality problem.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.analysis.findings.cache import roof_served_by_cache
from nsight_lab.analysis.findings.finding import Finding
from nsight_lab.analysis.findings.launch import paced_by_host
from nsight_lab.text.units import (
    format_clock,
    format_count,
    format_duration,
    format_percent,
)

if TYPE_CHECKING:
    from nsight_lab.analysis.findings.facts import Context, RegionFacts
    from nsight_lab.analysis.findings.finding import Confidence

__all__ = [
    "MIN_RUNS",
    "REPLAYED_KERNELS",
    "REPLAYED_SHORT_NS",
    "WIDE_RSD_PCT",
    "quality_findings",
    "session_quality",
]

WIDE_RSD_PCT = 10.0
"""A duration RSD past this is a wide spread worth a cause (validity calls past 50 %
unusable): an idle GPU holds regions of 30 µs and more to a few per cent
(the H200's same-code sessions agreed within 2.2 %, measured 2026-12-02)."""
MIN_RUNS = 3
"""Fewer runs give no spread to judge (Student's t with one degree of freedom is
12.7): the median is one of two numbers."""
CLOCK_MOVED = 0.05
"""An SM clock range wider than this share of its median moved enough to move a
compute-bound region's time by as much."""
SLOW_RUN = 2.0
"""A slowest run this many times the median is an outlier, not spread."""
REPLAYED_KERNELS = 4
"""ncu: a region of this many kernels a run or more is a sum of kernels run alone."""
REPLAYED_SHORT_NS = 50_000.0
"""... whose mean kernel under this reads past its time in the stream. Measured on
an H100 against torch.profiler's kernel sum
(benchmarks/results/realwork_h100_stop37_ncu.md): a decode step of 96 kernels of
5 us read 1.91x, a forward and a backward of 27-33 us kernels 1.07 and 2.1x;
regions of 124-205 us kernels within 2 %."""
_FLAG_KINDS = {
    "over_roof": "impossible_number",
    "over_span": "impossible_number",
    "low_coverage": "impossible_number",
    "unsteady": "unsteady",
    "throttled": "throttled",
}


def _clock_text(f: RegionFacts) -> str:
    if f.sm_clock is None:
        return ""
    return f"SM clock {format_clock(*f.sm_clock)}"


def _flag_basis(f: RegionFacts, kind: str) -> tuple[Confidence, str]:
    """How sure a validity flag is, and what it rests on."""
    if kind == "unsteady":
        return "timing", "the spread of its durations"
    if kind == "over_roof":
        p = f.placement
        modelled = p is not None and "modelled" in (p.flops_source, p.bytes_source)
        if modelled:
            return "work model", "the work model's figures over its duration"
        return "measured", "counted work over its duration, against the roof"
    return "measured", "its kernels' activity records against its span"


def _flag_findings(f: RegionFacts) -> list[Finding]:
    """The validity flags of the region, as findings (their words unchanged)."""
    out = []
    for flag in f.validity.flags:
        if flag.kind == "throttled":
            continue  # one finding for every region it holds (session_quality)
        if flag.kind == "over_roof" and roof_served_by_cache(f):
            continue  # said by the cache finding: modelled bytes the L2 served
        evidence = [f"median {format_duration(f.median_ns)} over {f.runs} runs"]
        if flag.kind == "unsteady":
            evidence.append(f"slowest run {format_duration(f.max_ns)}")
        confidence, basis = _flag_basis(f, flag.kind)
        out.append(
            Finding(
                regions=(f.annotation,),
                kind=_FLAG_KINDS.get(flag.kind, flag.kind),  # a new flag: its own kind
                family="quality",
                statement=f"{flag.text}: {flag.cause}",
                evidence=tuple(evidence),
                action=flag.action,
                confidence=confidence,
                basis=basis,
                config=f.config,
                config_index=f.config_index,
                time_ns=f.median_ns,
            )
        )
    return out


def _spread_cause(f: RegionFacts) -> tuple[str, str]:
    """The likely cause of a wide spread and what to do."""
    clock = f.sm_clock
    if (
        clock is not None
        and clock[0] > 0
        and (clock[2] - clock[1]) / clock[0] > CLOCK_MOVED
    ):
        return (
            f"the SM clock moved ({format_clock(*clock)})",
            "lock it: --clock-control base --thermal auto",
        )
    if f.throttled > 0:
        return (
            f"the GPU was throttled in {f.throttled} of {f.runs} runs",
            "--thermal auto waits for headroom; --clock-control base holds the clock",
        )
    if f.max_ns > SLOW_RUN * f.median_ns:
        return (
            (
                f"a few slow runs (the slowest {f.max_ns / f.median_ns:.1f}x the "
                "median): other work on the GPU or the host"
            ),
            "rerun on an idle machine, or add runs: --target-rsd 2 --max-time 10",
        )
    return (
        "the runs vary throughout: other work on the machine, or a short region",
        "add runs (--target-rsd 2) and read the median, not one run",
    )


def _spread(f: RegionFacts, ctx: Context) -> Finding | None:
    """A wide but usable spread, its likely cause; a --target-rsd not reached."""
    if any(flag.kind == "unsteady" for flag in f.validity.flags) or paced_by_host(
        f, ctx
    ):
        return None
    missed = ctx.target_rsd_pct is not None and f.rsd_pct > ctx.target_rsd_pct
    if not (f.rsd_pct > WIDE_RSD_PCT or missed):
        return None
    cause, action = _spread_cause(f)
    what = (
        f"--target-rsd {format_percent(ctx.target_rsd_pct)} not reached"
        if missed
        else "wide spread"
    )
    return Finding(
        regions=(f.annotation,),
        kind="target_not_reached" if missed else "wide_spread",
        family="quality",
        statement=(
            f"{what}: RSD {format_percent(f.rsd_pct)} over {f.runs} runs; "
            f"likely cause: {cause}"
        ),
        evidence=tuple(
            e
            for e in (
                (
                    f"median {format_duration(f.median_ns)}, "
                    f"slowest {format_duration(f.max_ns)}"
                ),
                _clock_text(f),
            )
            if e
        ),
        action=action,
        confidence="timing",
        basis="the spread of its durations"
        + (" and NVML's clocks" if f.sm_clock is not None else ""),
        config=f.config,
        config_index=f.config_index,
        time_ns=f.median_ns,
    )


def _few_runs(f: RegionFacts, ctx: Context) -> Finding | None:
    if f.runs >= MIN_RUNS or ctx.backend == "ncu":  # ncu's counters do not spread
        return None
    return Finding(
        regions=(f.annotation,),
        kind="too_few_runs",
        family="quality",
        statement=(
            f"{f.runs} run{'s' if f.runs != 1 else ''}: no spread or interval to "
            "judge its median by"
        ),
        evidence=(f"median {format_duration(f.median_ns)}",),
        action="profile with --runs 10 or more (or --target-rsd 2)",
        confidence="timing",
        basis="the number of runs",
        config=f.config,
        config_index=f.config_index,
        time_ns=f.median_ns,
    )


def _replayed_alone(f: RegionFacts, ctx: Context) -> Finding | None:
    """A region of many short kernels under ncu: a sum of kernels each run alone.

    ncu replays every kernel by itself, behind its own cache flush: a short kernel
    starts cold and pays for it in full, and the sum is not the region's time in
    its stream (where kernels follow each other warm).
    """
    kernels = f.launches
    if ctx.backend != "ncu" or kernels is None or kernels < REPLAYED_KERNELS:
        return None
    mean_ns = f.median_ns / kernels
    if not mean_ns < REPLAYED_SHORT_NS:
        return None
    flush = " behind its own cache flush" if ctx.cache_control == "all" else ""
    return Finding(
        regions=(f.annotation,),
        kind="replayed_alone",
        family="quality",
        statement=(
            f"its time is the sum of {format_count(round(kernels))} short kernels, "
            f"each replayed alone{flush}: it can read more than the region takes "
            "in its stream"
        ),
        evidence=(
            (
                f"{format_count(round(kernels))} kernels a run, "
                f"{format_duration(mean_ns)} each on average"
            ),
            f"median {format_duration(f.median_ns)}",
        ),
        action=(
            "read its time with --backend events or cupti (the stream's own "
            "timeline); ncu's counters per kernel stay right"
        ),
        confidence="measured",
        basis="ncu's per-kernel replay, measured on an H100: 1.9x for 5 us kernels",
        config=f.config,
        config_index=f.config_index,
        time_ns=f.median_ns,
    )


def quality_findings(f: RegionFacts, ctx: Context) -> list[Finding]:
    """Every measurement-quality finding of one region and config.

    Raises:
        Nothing.
    """
    found = [
        *_flag_findings(f),
        _replayed_alone(f, ctx),
        _spread(f, ctx),
        _few_runs(f, ctx),
    ]
    return [x for x in found if x is not None]


def _throttled(facts: list[RegionFacts]) -> list[Finding]:
    """One finding per throttle cause, naming every region and config it held."""
    by_cause: dict[tuple[str, str, str], list[RegionFacts]] = {}
    for f in facts:
        for flag in f.validity.flags:
            if flag.kind == "throttled":
                by_cause.setdefault((flag.text, flag.cause, flag.action), []).append(f)
    out = []
    for (text, cause, action), held in by_cause.items():
        runs = sum(f.runs for f in held)
        throttled = sum(f.throttled for f in held)
        names = tuple(dict.fromkeys(f.annotation for f in held))
        one = held[0] if len(held) == 1 else None
        clocks = [f.sm_clock for f in held if f.sm_clock is not None]
        evidence = [
            f"throttled in {format_count(throttled)} of {format_count(runs)} runs"
        ]
        if clocks:
            low, high = min(c[1] for c in clocks), max(c[2] for c in clocks)
            middle = sorted(c[0] for c in clocks)[len(clocks) // 2]
            evidence.append(f"SM clock {format_clock(middle, low, high)}")
        out.append(
            Finding(
                regions=names,
                kind="throttled",
                family="quality",
                statement=(text if one else f"throttled ({len(names)} regions)")
                + f": {cause}",
                evidence=tuple(evidence),
                action=action,
                confidence="measured",
                basis="NVML clock-event reasons of each run",
                config=one.config if one else {},
                config_index=one.config_index if one else None,
                time_ns=sum(f.median_ns for f in held),
            )
        )
    return out


def session_quality(facts: list[RegionFacts]) -> list[Finding]:
    """Session-wide quality: throttling (one per cause) and thermal waits.

    Raises:
        Nothing.
    """
    out = _throttled(facts)
    if not facts:
        return out
    first = facts[0].annotation  # every region's record of a run carries its wait
    waited = sum(f.thermal_wait_s for f in facts if f.annotation == first)
    runs = sum(f.runs for f in facts if f.annotation == first)
    if not waited > 0:
        return out
    out.append(
        Finding(
            regions=(),
            kind="thermal_waits",
            family="quality",
            statement=(
                f"waited {waited:.1f} s for thermal headroom over "
                f"{format_count(runs)} runs: the GPU ran near its slowdown temperature"
            ),
            evidence=(f"{waited:.1f} s of thermal waits",),
            action=(
                "the waits kept throttled runs out; a cooler GPU or fewer runs in a "
                "row makes the session shorter"
            ),
            confidence="measured",
            basis="NVML temperature before each run (--thermal)",
        )
    )
    return out
