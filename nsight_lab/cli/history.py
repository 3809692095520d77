"""Past sessions and baselines as tables, for ``%nsight history`` and the CLI.

A session's results frame and its runs as flat rows are
:func:`nsight_lab.results.stored.session_results` and
:func:`~nsight_lab.results.stored.runs_frame` (the server's export builds them too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.contract.records import SessionInfo
    from nsight_lab.store.run_store import RunStore

__all__ = [
    "BASELINE_COLUMNS",
    "HISTORY_COLUMNS",
    "baselines_frame",
    "sessions_frame",
]

HISTORY_COLUMNS = (
    "id",
    "created_at",
    "status",
    "name",
    "notebook",
    "backend",
    "device",
    "host",
    "user",
    "runs",
)


def sessions_frame(store: RunStore, sessions: Sequence[SessionInfo]) -> pd.DataFrame:
    """One row per session, newest first, with its number of stored runs."""
    counts = store.run_counts([s.id for s in sessions])  # kept per session: no run scan
    rows = [
        {
            "id": s.id,
            "created_at": s.created_at,
            "status": s.status,
            "name": s.name or "",
            "notebook": s.notebook or "",
            "backend": s.backend,
            "device": s.device or "",
            "host": s.host or "",
            "user": s.user or "",
            "runs": counts.get(s.id, 0),
        }
        for s in sessions
    ]
    frame: pd.DataFrame = pd.DataFrame(rows, columns=list(HISTORY_COLUMNS))
    return frame


BASELINE_COLUMNS = (
    "baseline",
    "session",
    "set_at",
    "name",
    "status",
    "backend",
    "device",
)


def baselines_frame(store: RunStore) -> pd.DataFrame:
    """One row per baseline, by name: its session and what that session was."""
    rows = []
    for baseline in store.list_baselines():
        session = store.get_session(baseline.session_id)  # cascades: it exists
        rows.append(
            {
                "baseline": baseline.name,
                "session": baseline.session_id,
                "set_at": baseline.set_at,
                "name": session.name or "",
                "status": session.status,
                "backend": session.backend,
                "device": session.device or "",
            }
        )
    frame: pd.DataFrame = pd.DataFrame(rows, columns=list(BASELINE_COLUMNS))
    return frame
