"""``nsight-lab explain ID``: why a stored session's regions are slow, every finding.

The findings of :func:`~nsight_lab.viewmodel.findings.stored_findings` (what
``show`` and the sidebar say too), as text (each with its evidence, what to try,
the gain bound and its basis) or as JSON (the sidebar's shape).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsight_lab.analysis.findings import explain_lines, findings_json
from nsight_lab.viewmodel.findings import stored_findings

if TYPE_CHECKING:
    from nsight_lab.contract.records import SessionInfo
    from nsight_lab.store.run_store import RunStore

__all__ = ["explain_json", "explain_text"]


def _title(session: SessionInfo) -> str:
    name = f" {session.name}" if session.name else ""
    where = f" on {session.device}" if session.device else ""
    return f"session {session.id}{name}: {session.backend}{where}: why it is slow"


def explain_text(store: RunStore, session_id: int) -> str:
    """Every finding of a stored session as text, most important first.

    Raises:
        NotFoundError: No session ``session_id``.
        StoreError: The store cannot be read.
    """
    session, found = stored_findings(store, session_id)
    return "\n".join(explain_lines(found, _title(session)))


def explain_json(store: RunStore, session_id: int) -> dict[str, Any]:
    """``{"session_id", "backend", "device", "findings"}``: the sidebar's entries.

    Raises:
        NotFoundError: No session ``session_id``.
        StoreError: The store cannot be read.
    """
    session, found = stored_findings(store, session_id)
    return {
        "session_id": session.id,
        "backend": session.backend,
        "device": session.device,
        "findings": findings_json(found),
    }
