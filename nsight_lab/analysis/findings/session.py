"""A session's findings: every rule over its regions, ranked by what matters most.

:func:`session_findings` reads the session once (:func:`.facts.gather`), runs each
family's rules, and orders what they found:

1. measurement quality first (a doubtful number is said before anything is read
   off it), the regions taking most time first;
2. then by the time at stake: a finding's share of the session's time times what
   its action could save at most (``1 - 1/gain``), or :data:`DIAGNOSIS_WEIGHT`
   for a diagnosis with no gain to bound ("near the roof: only fewer bytes help");
   a sweep's findings weigh :data:`SWEEP_WEIGHT` of their region's share;
3. last, what this backend cannot answer.

:func:`top_findings` picks the few a view shows first (each about other regions
where it can), :func:`region_top` the one a region's diagnosis leads with (by
family: quality, launch, cache, traffic, bound).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsight_lab.analysis.findings.bound import bound_findings
from nsight_lab.analysis.findings.cache import cache_findings
from nsight_lab.analysis.findings.coverage import coverage_findings
from nsight_lab.analysis.findings.facts import gather
from nsight_lab.analysis.findings.finding import FAMILIES
from nsight_lab.analysis.findings.launch import launch_findings
from nsight_lab.analysis.findings.quality import quality_findings, session_quality
from nsight_lab.analysis.findings.sweep import sweep_findings
from nsight_lab.analysis.findings.traffic import chain_findings, traffic_findings
from nsight_lab.analysis.findings.warmth import warmth_findings

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.analysis.findings.facts import Analysed
    from nsight_lab.analysis.findings.finding import Finding
    from nsight_lab.analysis.findings.warmth import Counterpart
    from nsight_lab.contract.records import RunRecord, SessionInfo
    from nsight_lab.roofline.placement import Peaks

__all__ = [
    "DIAGNOSIS_WEIGHT",
    "SWEEP_WEIGHT",
    "TOP",
    "findings_json",
    "region_top",
    "session_findings",
    "top_findings",
]

TOP = 3
"""Findings a view shows first; the rest are folded."""
DIAGNOSIS_WEIGHT = 0.1
"""What a finding without a gain bound weighs, as if it could save a tenth."""
SWEEP_WEIGHT = 0.25
"""What a sweep's findings weigh of their region's share of the time."""
_REGION_ORDER = ("quality", "launch", "cache", "traffic", "bound")
"""A region's findings in the order its diagnosis is said: the quality of the
numbers, a host that sets the pace, the L2 that serves it, bytes beyond need, the
bound (which the others qualify or explain)."""


def _importance(f: Finding, session_ns: float) -> float:
    share = min(f.time_ns / session_ns, 1.0) if session_ns > 0 else 0.0
    if f.family == "sweep":
        return SWEEP_WEIGHT * share
    gain = f.gain
    return share * ((1.0 - 1.0 / gain) if gain and gain > 1 else DIAGNOSIS_WEIGHT)


def ranked(findings: Sequence[Finding], session_ns: float) -> list[Finding]:
    """``findings`` most important first (the module's order).

    Raises:
        Nothing.
    """
    family = {name: i for i, name in enumerate(FAMILIES)}
    return sorted(
        findings,
        key=lambda f: (
            f.family != "quality",
            f.family == "coverage",
            -_importance(f, session_ns),
            family[f.family],
        ),
    )


def session_findings(
    records: Sequence[RunRecord] | Analysed,
    session: SessionInfo | None = None,
    *,
    peaks: Peaks | None = None,
    attainable: Peaks | None = None,
    counterpart: Counterpart | None = None,
) -> list[Finding]:
    """Every finding of a session's runs, most important first.

    Args:
        records: The session's runs (or its latest per region: medians), or
            what :func:`~.facts.analyse` derived of them under ``peaks``.
        session: The session (its backend and options), if known.
        peaks: The roofs its regions are placed under; without them no bound.
        attainable: Peaks ``%nsight peaks`` measured on the device, judged
            against before the datasheet's.
        counterpart: The same cell's session in the other cache mode and its
            runs (:mod:`.warmth`), if one was kept.

    Raises:
        Nothing.
    """
    ctx, facts = gather(records, session, peaks, attainable)
    found: list[Finding] = []
    for f in facts:
        found += quality_findings(f, ctx)
        found += launch_findings(f, ctx)
        found += cache_findings(f)
        found += traffic_findings(f, ctx)
        found += bound_findings(f, ctx)
    found += warmth_findings(facts, session, counterpart)
    found += session_quality(facts)
    found += chain_findings(facts, ctx)
    found += sweep_findings(facts, ctx)
    found += coverage_findings(facts, ctx)
    return ranked(found, ctx.session_ns)


def top_findings(findings: Sequence[Finding], n: int = TOP) -> list[Finding]:
    """The ``n`` findings a view shows first: in rank order, other regions first.

    A finding about regions an earlier pick already named waits until no finding
    about new regions is left; what a backend cannot answer comes last.

    Raises:
        Nothing.
    """
    picked: list[Finding] = []
    named: set[str] = set()
    later: list[Finding] = []
    for f in findings:
        if len(picked) >= n:
            break
        if f.family == "coverage" or (f.regions and named.issuperset(f.regions)):
            later.append(f)
            continue
        picked.append(f)
        named.update(f.regions)
    return picked + later[: max(n - len(picked), 0)]


def region_top(
    findings: Sequence[Finding],
    region: str,
    config_index: int | None = None,
    *,
    quality: bool = True,
) -> Finding | None:
    """The finding a region's diagnosis leads with (None: nothing said of it).

    Of the findings naming ``region`` (in ``config_index``, or any), the first by
    family (:data:`_REGION_ORDER`), then by rank; ``quality=False``: its diagnosis
    past any measurement-quality finding.

    Raises:
        Nothing.
    """
    order = _REGION_ORDER if quality else _REGION_ORDER[1:]
    mine = [
        f
        for f in findings
        if region in f.regions
        and f.family in order
        and (config_index is None or f.config_index in {None, config_index})
    ]
    if not mine:
        return None
    return min(mine, key=lambda f: order.index(f.family))


def findings_json(findings: Sequence[Finding], n: int = TOP) -> list[dict[str, Any]]:
    """The findings as sent: each :meth:`Finding.to_json` with ``rank`` and ``top``.

    ``rank`` is 1 for the most important; ``top`` marks the :func:`top_findings`
    a view shows first.

    Raises:
        Nothing.
    """
    shown = {id(f) for f in top_findings(findings, n)}
    return [
        {**f.to_json(), "rank": i, "top": id(f) in shown}
        for i, f in enumerate(findings, start=1)
    ]
