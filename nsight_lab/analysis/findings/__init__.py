"""Why a region is slow, and what would help: findings from what a session measured.

Issue 31. Computed once, in Python, from a session's runs (per-region statistics,
clocks and throttling, DRAM and L2 bytes, tensor-pipe activity, the work model's
FLOPs and bytes, the device's peaks, the regions' shape) and the validity checks
(:mod:`nsight_lab.analysis.validity`, reused as they are). Every view shows what
this package returns and decides nothing itself: ``nsight-lab show`` and
``explain``, ``results.findings()``, the cell's output and static page, the
sidebar's session view (the view model's ``findings``).

One module per concern: :mod:`.finding` (the :class:`Finding` type),
:mod:`.facts` (what the rules read, gathered once), one module per family of
rules (:mod:`.quality`, :mod:`.launch`, :mod:`.cache`, :mod:`.traffic`,
:mod:`.bound`, :mod:`.sweep`, :mod:`.coverage`), :mod:`.session` (every rule over
a session, ranked) and :mod:`.text` (findings as text lines).
"""

from __future__ import annotations

from nsight_lab.analysis.findings.finding import Finding
from nsight_lab.analysis.findings.session import (
    TOP,
    findings_json,
    region_top,
    session_findings,
    top_findings,
)
from nsight_lab.analysis.findings.text import explain_lines, finding_lines, top_lines

__all__ = [
    "TOP",
    "Finding",
    "explain_lines",
    "finding_lines",
    "findings_json",
    "region_top",
    "session_findings",
    "top_findings",
    "top_lines",
]
