"""What changed in the store since the last look: runs and sessions changed.

:class:`StoreWatcher` turns successive cheap looks at the store (its change counter,
the largest session and run ids, the running sessions) into the events the events
websocket pushes (:mod:`nsight_lab.server.events`); :func:`merge_events` folds
successive events into one push.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsight_lab.contract.records import SCHEMA_VERSION

if TYPE_CHECKING:
    from collections.abc import Set as AbstractSet

    from nsight_lab.server.store_handle import StoreHandle
    from nsight_lab.store.run_store import RunStore

__all__ = [
    "Event",
    "StoreWatcher",
    "last_runs",
    "merge_events",
    "runs_changed",
    "sessions_changed",
]

Event = dict[str, Any]
"""One message of the events websocket, before encoding."""


class StoreWatcher:
    """Turns successive looks at the store into ``runs-changed``/``sessions-changed``.

    Run ids and session ids only grow (``AUTOINCREMENT``), so a session got runs
    exactly when its largest run id exceeds the largest run id seen at the previous
    poll. Only sessions that are running, were running, or are new are looked at;
    should the runs' high-water mark move without any of them explaining it (runs
    added to a finished session), every session is looked at once.

    Args:
        handle: The server's store handle.
    """

    def __init__(self, handle: StoreHandle) -> None:
        """Start from an empty store; call :meth:`poll` once for a baseline."""
        self._handle = handle
        self._reset()

    def _reset(self) -> None:
        self._seq: int | None = None
        self._max_session = 0
        self._max_run = 0
        self._count = 0
        self._running: frozenset[int] = frozenset()

    def poll(self) -> list[Event]:
        """Return the events since the previous call.

        The first call compares the store with an empty one.

        Raises:
            StoreError: The store exists but cannot be read.
        """
        store = self._handle.get()
        if store is None:
            return self._forget()
        seq = store.change_seq()
        if seq == self._seq:
            return []
        self._seq = seq
        max_session, max_run = store.latest_change()
        count = store.count_sessions()
        running = frozenset(
            s.id for s in store.list_sessions(status="running", limit=None)
        )
        events: list[Event] = []
        if (max_session, count, running) != (
            self._max_session,
            self._count,
            self._running,
        ):
            events.append(sessions_changed(max_session))
        if max_run > self._max_run:
            events.extend(self._grown(store, running, max_session, max_run))
        self._max_session = max(self._max_session, max_session)
        self._max_run = max(self._max_run, max_run)
        self._count = count
        self._running = running
        return events

    def baseline(self) -> None:
        """Take the store as it is now as the starting point, with no events.

        What the first :meth:`poll` would learn, without building the events it
        would drop: no per-session look-up, so a socket opens at once on a store of
        10,000 sessions (the first poll looks up every session's last run).

        Raises:
            StoreError: The store exists but cannot be read.
        """
        self._reset()
        store = self._handle.get()
        if store is None:
            return
        seq = store.change_seq()
        max_session, max_run = store.latest_change()
        count = store.count_sessions()
        running = frozenset(
            s.id for s in store.list_sessions(status="running", limit=None)
        )
        self._seq = seq
        self._max_session, self._max_run = max_session, max_run
        self._count = count
        self._running = running

    def _grown(
        self, store: RunStore, running: frozenset[int], max_session: int, max_run: int
    ) -> list[Event]:
        new = max_session - self._max_session
        fresh = (
            {s.id for s in store.list_sessions(limit=new) if s.id > self._max_session}
            if new > 0
            else set()
        )
        lasts = last_runs(store, running | self._running | fresh)
        if max(lasts.values(), default=0) < max_run:  # runs in a finished session
            lasts = last_runs(store, {s.id for s in store.list_sessions(limit=None)})
        return [
            runs_changed(sid, last)
            for sid, last in sorted(lasts.items())
            if last > self._max_run
        ]

    def _forget(self) -> list[Event]:
        """The store file is gone (or not there yet): back to the empty state."""
        if self._seq is None:
            return []
        self._reset()
        return [sessions_changed(0)]


def merge_events(events: list[Event]) -> list[Event]:
    """Merge successive events into what one push says: the latest of each kind.

    One ``sessions-changed`` (the last), then one ``runs-changed`` per session with
    its largest ``last_run_id``, by session id.
    """
    sessions: Event | None = None
    runs: dict[int, int] = {}
    for event in events:
        if event["type"] == "sessions-changed":
            sessions = event
        else:
            sid = int(event["session_id"])
            runs[sid] = max(int(event["last_run_id"]), runs.get(sid, 0))
    merged = [] if sessions is None else [sessions]
    merged.extend(runs_changed(sid, last) for sid, last in sorted(runs.items()))
    return merged


def runs_changed(session_id: int, last_run_id: int) -> Event:
    """The ``runs-changed`` message of a session and its largest run id."""
    return {
        "type": "runs-changed",
        "schema_version": SCHEMA_VERSION,
        "session_id": session_id,
        "last_run_id": last_run_id,
    }


def sessions_changed(latest_session_id: int) -> Event:
    """The ``sessions-changed`` message, with the largest session id."""
    return {
        "type": "sessions-changed",
        "schema_version": SCHEMA_VERSION,
        "latest_session_id": latest_session_id,
    }


def last_runs(store: RunStore, session_ids: AbstractSet[int]) -> dict[int, int]:
    """Each session's largest run id (0 without runs)."""
    return {sid: store.last_run_id(sid) for sid in sorted(session_ids)}
