"""The events websocket: pushes store changes so that clients re-fetch over REST.

``GET <base_url>/nsight-lab/api/events`` (authenticated) upgrades to a websocket on
which the server sends JSON messages, never receiving any:

- ``{"type": "runs-changed", "schema_version", "session_id", "last_run_id"}`` for each
  session that got runs since the last message (``last_run_id`` is its largest run id:
  fetch ``sessions/<id>?after_id=<last seen>``);
- ``{"type": "sessions-changed", "schema_version", "latest_session_id"}`` when
  sessions were added, finished or deleted (re-fetch the list).

On a SQLite store each socket polls it every ``NsightLabConfig.poll_interval_s``
(default 0.1 s): one read of the store's change counter while nothing happens, so a
write by any process (a kernel, a script, the CLI) is pushed within one interval.
Until the store file exists the socket just waits for it.

On a PostgreSQL store nothing polls: the server's one ``LISTEN``
(:mod:`nsight_lab.server.pg_listen`) hands each committed write's notice to every
socket, which turns it into the same messages (``runs-changed`` per session named in
it, ``sessions-changed`` when sessions changed), whatever host the writer runs on.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from jupyter_server.auth.decorator import ws_authenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from tornado.ioloop import IOLoop, PeriodicCallback
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from nsight_lab.errors import StoreError
from nsight_lab.records import SCHEMA_VERSION
from nsight_lab.server.base import CONFIG_KEY, STORE_KEY

if TYPE_CHECKING:
    from collections.abc import Set as AbstractSet

    from nsight_lab.server.config import NsightLabConfig
    from nsight_lab.server.pg_listen import Notice
    from nsight_lab.server.store_handle import StoreHandle
    from nsight_lab.store.run_store import RunStore

__all__ = ["RunEventsSocket", "StoreWatcher"]

logger = logging.getLogger(__name__)

Event = dict[str, Any]


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
            events.append(_sessions_changed(max_session))
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
        last_runs = _last_runs(store, running | self._running | fresh)
        if max(last_runs.values(), default=0) < max_run:  # runs in a finished session
            last_runs = _last_runs(
                store, {s.id for s in store.list_sessions(limit=None)}
            )
        return [
            {
                "type": "runs-changed",
                "schema_version": SCHEMA_VERSION,
                "session_id": sid,
                "last_run_id": last,
            }
            for sid, last in sorted(last_runs.items())
            if last > self._max_run
        ]

    def _forget(self) -> list[Event]:
        """The store file is gone (or not there yet): back to the empty state."""
        if self._seq is None:
            return []
        self._reset()
        return [_sessions_changed(0)]


class RunEventsSocket(WebSocketMixin, WebSocketHandler, JupyterHandler):
    """``GET events``: the websocket described in the module docstring."""

    _callback: PeriodicCallback | None = None
    _listening: int | None = None
    _warned = False

    def set_default_headers(self) -> None:
        """Leave out JupyterHandler's default headers, meaningless on a websocket."""

    @ws_authenticated
    async def get(self, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401  (tornado's)
        """Upgrade an authenticated request to the websocket (403 otherwise)."""
        result = super().get(*args, **kwargs)
        if result is not None:
            await result

    def open(self, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401  (tornado's)
        """Take a baseline of the store and start polling it (or listening to it)."""
        super().open(*args, **kwargs)
        handle: StoreHandle = self.settings[STORE_KEY]
        config: NsightLabConfig = self.settings[CONFIG_KEY]
        listener = handle.listener()
        if listener is not None:
            self._handle = handle
            self._listener = listener
            self._listening = listener.subscribe(IOLoop.current(), self._on_notice)
            return
        self._watcher = StoreWatcher(handle)
        try:
            self._watcher.baseline()  # what exists now is not news
        except StoreError as exc:  # the first poll then compares with an empty store
            self.log.warning("[nsight-lab] events: %s", exc)
        self._callback = PeriodicCallback(self._push, config.poll_interval_s * 1000.0)
        self._callback.start()

    def on_message(self, message: str | bytes) -> None:
        """Ignore client messages: the socket only pushes."""

    def on_close(self) -> None:
        """Stop polling (the mixin's ping stops itself once the socket is gone)."""
        if self._callback is not None:
            self._callback.stop()
            self._callback = None
        if self._listening is not None:
            self._listener.unsubscribe(self._listening)
            self._listening = None

    def _on_notice(self, notice: Notice) -> None:
        """Push what one committed write changed (PostgreSQL)."""
        if self._listening is None:
            return
        events: list[Event] = []
        if notice.sessions or notice.resync:
            try:
                store = self._handle.get_or_empty()
                latest = store.latest_change()[0]
            except StoreError as exc:
                self.log.warning("[nsight-lab] events: %s", exc)
                latest = 0
            events.append(_sessions_changed(latest))
        events.extend(
            {
                "type": "runs-changed",
                "schema_version": SCHEMA_VERSION,
                "session_id": sid,
                "last_run_id": last,
            }
            for sid, last in sorted(notice.runs.items())
        )
        try:
            for event in events:
                self.write_message(json.dumps(event))
        except WebSocketClosedError:
            self.on_close()

    def _push(self) -> None:
        try:
            for event in self._poll():
                self.write_message(json.dumps(event))
        except WebSocketClosedError:
            self.on_close()

    def _poll(self) -> list[Event]:
        try:
            events = self._watcher.poll()
        except StoreError as exc:  # e.g. a store being replaced; retried next poll
            if not self._warned:
                self.log.warning("[nsight-lab] events: %s", exc)
                self._warned = True
            return []
        self._warned = False
        return events


def _sessions_changed(latest_session_id: int) -> Event:
    return {
        "type": "sessions-changed",
        "schema_version": SCHEMA_VERSION,
        "latest_session_id": latest_session_id,
    }


def _last_runs(store: RunStore, session_ids: AbstractSet[int]) -> dict[int, int]:
    return {sid: store.last_run_id(sid) for sid in sorted(session_ids)}
