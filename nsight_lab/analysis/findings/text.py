"""Findings as text: ``nsight-lab explain``, ``show``'s top findings, a cell's text.

Plain text, never escaped here: the terminal's printers escape control characters
(:func:`nsight_lab.text.safe.for_terminal`), the static page HTML-escapes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.analysis.findings.finding import config_text
from nsight_lab.analysis.findings.session import TOP, top_findings

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.analysis.findings.finding import Finding

__all__ = ["SURE", "explain_lines", "finding_head", "finding_lines", "top_lines"]

SURE = {"measured": "measured", "work model": "work model", "timing": "timing only"}
"""How each confidence reads."""


def finding_head(f: Finding) -> str:
    """``region (config): statement`` ("session" where it names no region).

    Raises:
        Nothing.
    """
    where = f.region or "session"
    config = config_text(f.config)
    return f"{where}{f' ({config})' if config else ''}: {f.statement}"


def finding_lines(f: Finding, prefix: str = "", *, brief: bool = False) -> list[str]:
    """One finding: its head line, then evidence, what to try, gain and basis.

    ``brief``: the head, what to try and the gain only (``show``'s top findings).

    Raises:
        Nothing.
    """
    pad = " " * (len(prefix) + 2)
    lines = [f"{prefix}{finding_head(f)}"]
    if f.evidence and not brief:
        lines.append(f"{pad}evidence: {'; '.join(f.evidence)}")
    if f.action:
        lines.append(f"{pad}try: {f.action}")
    if f.gain_basis:
        lines.append(f"{pad}gain: {f.gain_basis}")
    sure = f"{pad}basis: {SURE[f.confidence]}"
    if not brief:
        sure += f" ({f.basis})" if f.basis else ""
    if f.answered_by and f.family != "coverage":
        sure += f"; {f.answered_by} would settle it"
    lines.append(sure)
    return lines


def top_lines(findings: Sequence[Finding], session_id: int, n: int = TOP) -> list[str]:
    """The findings that matter most, for the top of ``show`` and a cell's text.

    ``Why it is slow (3 of 17; nsight-lab explain 4 for every one):`` then each of
    :func:`~nsight_lab.analysis.findings.session.top_findings`, brief. [] for none.

    Raises:
        Nothing.
    """
    shown = top_findings(findings, n)
    if not shown:
        return []
    more = (
        f"{len(shown)} of {len(findings)}; nsight-lab explain {session_id} for all"
        if len(findings) > len(shown)
        else f"nsight-lab explain {session_id} for their evidence"
    )
    lines = [f"Why it is slow ({more}):"]
    for i, f in enumerate(shown, start=1):
        lines += finding_lines(f, f"{i}. ", brief=True)
    return lines


def explain_lines(findings: Sequence[Finding], title: str, n: int = TOP) -> list[str]:
    """``nsight-lab explain``: every finding, most important first, in full.

    The first ``n`` (the ones views show first) are marked ``*``.

    Raises:
        Nothing.
    """
    if not findings:
        return [title, "nothing to say: no runs with a duration"]
    top = {id(f) for f in top_findings(findings, n)}
    lines = [
        title,
        (
            f"{len(findings)} finding{'s' if len(findings) != 1 else ''}, most "
            f"important first (* the {len(top)} views show first)"
        ),
    ]
    for i, f in enumerate(findings, start=1):
        mark = "*" if id(f) in top else " "
        lines.append("")
        lines += finding_lines(f, f"{mark}{i}. ")
    return lines
