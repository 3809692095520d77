"""Past sessions and baselines as tables, for ``%nsight history`` and the CLI.

``runs`` is what it is everywhere (``show``, the progress line, the sidebar): the
executions of the cell, one per config and run index, whatever its number of
regions (issue 30: it counted region measurements, 360 where ``show`` said 30 of
30). The shown forms (:func:`history_shown`, :func:`history_text`) give times in
local time, short, and fit the terminal's width; ``--json`` keeps the ISO times.

A session's results frame and its runs as flat rows are
:func:`nsight_lab.results.stored.session_results` and
:func:`~nsight_lab.results.stored.runs_frame` (the server's export builds them too).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import pandas as pd

from nsight_lab.text.safe import frame_for_terminal

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.contract.records import SessionInfo
    from nsight_lab.store.run_store import RunStore

__all__ = [
    "BASELINE_COLUMNS",
    "HISTORY_COLUMNS",
    "baselines_frame",
    "history_shown",
    "history_text",
    "local_time",
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
    """One row per session, newest first, with its runs (executions of the cell)."""
    counts = store.runs_done_counts([s.id for s in sessions])  # kept: no run scan
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


_LEFT_OUT_FIRST = ("notebook", "user", "host", "status", "device", "backend")
"""History columns left out, in this order, while the text is wider than the room."""


def local_time(iso: object, *, now: datetime | None = None) -> str:
    """An ISO timestamp as a short local time: ``14:05`` today, else ``12-02 18:46``.

    The year is added when it is not this year (``2025-12-02 18:46``); text that is
    not an ISO time is returned as it is.
    """
    try:
        when = datetime.fromisoformat(str(iso)).astimezone()
    except ValueError:
        return str(iso)
    today = (now or datetime.now().astimezone()).astimezone()
    if when.date() == today.date():
        return when.strftime("%H:%M")
    if when.year == today.year:
        return when.strftime("%m-%d %H:%M")
    return when.strftime("%Y-%m-%d %H:%M")


def history_shown(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as people read it: ``created_at`` in short local time."""
    shown: pd.DataFrame = frame.copy()
    if "created_at" in shown.columns:
        shown["created_at"] = [local_time(t) for t in shown["created_at"]]
    return shown


def history_text(frame: pd.DataFrame, width: int) -> str:
    """The history as terminal text no wider than ``width`` (when it can be).

    Empty columns go first, then :data:`_LEFT_OUT_FIRST` in order until the table
    fits; a last line names what was left out. Names stay whole.
    """
    shown = frame_for_terminal(history_shown(frame))
    dropped: list[str] = []
    for column in list(shown.columns):
        if column not in {"id", "runs"} and (shown[column].astype(str) == "").all():
            shown = shown.drop(columns=[column])
    for column in _LEFT_OUT_FIRST:
        if _text_width(shown) <= width:
            break
        if column in shown.columns:
            shown = shown.drop(columns=[column])
            dropped.append(column)
    lines = shown.to_string(index=False).splitlines()
    if dropped:
        lines.append(f"(left out to fit {width} columns: {', '.join(dropped)})")
    return "\n".join(lines)


def _text_width(frame: pd.DataFrame) -> int:
    return max(
        (len(line) for line in frame.to_string(index=False).splitlines()), default=0
    )


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
