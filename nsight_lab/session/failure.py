"""How a profile that ended early is recorded: nothing measured is deleted."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nsight_lab.errors import InputError, NsightLabError, RegionError
from nsight_lab.session.request import MAX_MESSAGE_CHARS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.contract.records import RunRecord, SessionStatus
    from nsight_lab.store.run_store import RunStore


@dataclass(frozen=True)
class Ended:
    """How a profile that ended early was recorded (:func:`record_failure`)."""

    status: SessionStatus
    message: str
    """What the view shows as the reason."""
    instead: BaseException | None
    """Ours, saying the session was kept, to raise instead of the exception."""
    stored: list[RunRecord]
    """The records the store holds (read back): what the view may show."""


@dataclass(frozen=True)
class Stored:
    """What the store holds of a session, read back after the profile ended."""

    runs: int
    """Complete runs (distinct config and run)."""
    rows: int
    """Records (one per region and run)."""
    last: tuple[int, int] | None
    """The newest stored run's (config index, run index)."""


def stored_runs(store: RunStore, session_id: int) -> Stored | str:
    """What the store holds of ``session_id``, or why it could not be read."""
    try:
        runs, last = store.runs_done(session_id)
        rows = store.count_runs_after(session_id)
    except NsightLabError as exc:
        return " ".join(str(exc).split())[:120]
    return Stored(runs, rows, last)


def kept_text(
    session_id: int, stored: Stored | str, handed: Sequence[RunRecord]
) -> str:
    """Say what the store kept of a session, as the store says it.

    The count is read back, not the runs handed to the writer: after a write failed
    (a full disk) those are more than the store holds, and the text names the last
    run that was committed.
    """
    show = f"%nsight show {session_id}"
    if isinstance(stored, str):
        return f"session {session_id} kept, its runs could not be read back ({stored})"
    plural = "" if stored.runs == 1 else "s"
    lost = len({(r.config_index, r.run_index) for r in handed}) - stored.runs
    if stored.rows >= len(handed) or lost <= 0:
        return f"session {session_id} kept with its {stored.runs} run{plural}: {show}"
    last = (
        f", the last config {stored.last[0]} run {stored.last[1]}"
        if stored.last is not None
        else ""
    )
    return (
        f"session {session_id} kept with the {stored.runs} run{plural} the store "
        f"holds{last} ({lost} later run{'' if lost == 1 else 's'} not stored): {show}"
    )


def record_failure(
    store: RunStore, session_id: int, exc: BaseException, done: list[RunRecord]
) -> Ended:
    """Record how a profile ended early; nothing measured is deleted.

    Ctrl-C leaves the session ``interrupted``. Any other failure after runs finished
    (the cell, a region rule, an empty ``annotate()`` name, ``--normalize-against``,
    a store write) leaves it ``failed`` with the reason and its runs; only a bad option
    found before any run was stored leaves nothing behind. Every count said is read
    back from the store (:func:`kept_text`).

    Returns:
        The status and message to show, the error to raise instead of ``exc`` (ours,
        saying the session was kept), if any, and the records the store holds.
    """
    stored = stored_runs(store, session_id)
    kept = kept_text(session_id, stored, done)
    shown = done[: stored.rows] if isinstance(stored, Stored) else []
    if isinstance(exc, KeyboardInterrupt):
        message = "stopped by KeyboardInterrupt"
        with contextlib.suppress(NsightLabError):  # a broken store: say the rest
            store.finish_session(session_id, "interrupted", message)
        _add_note(exc, f"nsight-lab: {kept} (interrupted)")
        return Ended("interrupted", message, None, shown)
    if isinstance(exc, InputError) and isinstance(stored, Stored) and not stored.rows:
        store.delete_session(session_id)
        return Ended("failed", str(exc), None, [])
    if isinstance(exc, RegionError) and isinstance(stored, Stored) and not stored.rows:
        # A region rule broken before any run finished (a repeated name): nothing
        # was measured, so no failed 0-run session is left in the history, and the
        # view says no reason: the magic raises exc as its one line (issue 30: the
        # reason was printed twice).
        store.delete_session(session_id)
        return Ended("failed", "", None, [])
    error = f"{type(exc).__name__}: {exc}"
    marked = "marked failed"
    try:
        store.finish_session(session_id, "failed", error)
    except NsightLabError as broken:  # a broken store: raise exc itself, say so
        marked = f"not marked failed: {' '.join(str(broken).split())[:100]}"
    if isinstance(exc, NsightLabError):  # shown as one line: say it there
        suffix = f" ({kept})"
        budget = MAX_MESSAGE_CHARS - len(suffix)  # shorten the reason, not the news
        reason = " ".join(str(exc).split())
        if len(reason) > budget:
            reason = reason[: max(budget - 3, 0)] + "..."
        return Ended("failed", error, type(exc)(reason + suffix), shown)
    _add_note(exc, f"nsight-lab: {kept} ({marked})")
    return Ended("failed", error, None, shown)


def _add_note(exc: BaseException, note: str) -> None:
    """Add ``note`` to ``exc``'s traceback (Python 3.11+; nothing before)."""
    add_note = getattr(exc, "add_note", None)
    if add_note is not None:
        add_note(note)
