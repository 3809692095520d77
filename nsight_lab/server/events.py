"""The events websocket: pushes store changes so that clients re-fetch over REST.

``GET <base_url>/nsight-lab/api/events`` (authenticated) upgrades to a websocket on
which the server sends JSON messages, never receiving any:

- ``{"type": "runs-changed", "schema_version", "session_id", "last_run_id"}`` for each
  session that got runs since the last message (``last_run_id`` is its largest run id:
  fetch ``sessions/<id>?after_id=<last seen>``);
- ``{"type": "sessions-changed", "schema_version", "latest_session_id"}`` when
  sessions were added, finished or deleted (re-fetch the list).

Decision: one watcher per server, whatever the number of sockets. The server's
:class:`EventHub` owns a thread that watches the store and turns each change into
these messages once; the event loop only hands the same encoded messages to every
open socket (in slices, yielding between them, so a request arriving meanwhile is
not held up by a thousand sockets). No store read ever runs on the event loop, and
one change costs one read, not one per socket (with 200 sockets each polling on the
loop, small requests slowed from 4.6 ms to 296 ms p50: issue 22).

On a SQLite store the thread polls it every ``NsightLabConfig.poll_interval_s``
(default 0.1 s): one read of the store's change counter while nothing happens, so a
write by any process (a kernel, a script, the CLI) is pushed within one interval.
Until the store file exists it just waits for it.

On a PostgreSQL store nothing polls: the server's one ``LISTEN``
(:mod:`nsight_lab.server.pg_listen`) hands each committed write's notice to the
thread, which turns it into the same messages (``runs-changed`` per session named in
it, ``sessions-changed`` when sessions changed), whatever host the writer runs on.

On both engines at most one fan-out goes out per ``poll_interval_s``, and fewer while
fan-outs cost the loop more than a fifth of its time (a thousand sockets): what
changes meanwhile is merged into the next push, never held past 0.3 s, so a run
still reaches every socket within the design's 0.5 s
(``benchmarks/websocket_fanout.py``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from jupyter_server.auth.decorator import ws_authenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from tornado.ioloop import IOLoop
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from nsight_lab.contract.records import SCHEMA_VERSION
from nsight_lab.errors import StoreError
from nsight_lab.server.base import CONFIG_KEY, STORE_KEY

if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Set as AbstractSet

    from nsight_lab.server.config import NsightLabConfig
    from nsight_lab.server.pg_listen import Notice
    from nsight_lab.server.store_handle import StoreHandle
    from nsight_lab.store.run_store import RunStore

__all__ = [
    "HUB_KEY",
    "EventHub",
    "RunEventsSocket",
    "StoreWatcher",
    "event_hub",
    "merge_events",
]

logger = logging.getLogger(__name__)

Event = dict[str, Any]

HUB_KEY = "nsight_lab_events"
"""``web_app.settings`` key of the server's one :class:`EventHub`."""


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
            _runs_changed(sid, last)
            for sid, last in sorted(last_runs.items())
            if last > self._max_run
        ]

    def _forget(self) -> list[Event]:
        """The store file is gone (or not there yet): back to the empty state."""
        if self._seq is None:
            return []
        self._reset()
        return [_sessions_changed(0)]


class EventHub:
    """The server's one store watcher, fanned out to every events socket.

    Subscribing starts a daemon thread (``nsight-lab-events``) that watches the store
    (SQLite: :class:`StoreWatcher` every ``poll_interval_s``; PostgreSQL: the
    :class:`~nsight_lab.server.pg_listen.PgListener`'s notices) and posts each batch
    of encoded messages to the event loop, which writes it to every subscriber in
    order. The thread stops when the last socket unsubscribes.

    Args:
        handle: The server's store handle.
        poll_interval_s: Seconds between two looks at a SQLite store; on PostgreSQL,
            the shortest gap between two pushes (notices meanwhile are merged).
    """

    FAN_OUT_SLICE = 64
    """Sockets written to before the loop runs whatever else is ready."""
    FAN_OUT_SHARE = 0.2
    """The most of the event loop's time fan-outs may take: after one that cost
    ``c`` seconds, the next waits ``c / FAN_OUT_SHARE`` (what changes meanwhile is
    merged into it), but never more than :attr:`MAX_HOLD_S`."""
    MAX_HOLD_S = 0.3
    """The longest a change waits for its fan-out: with a 0.1 s poll, a run still
    reaches every socket within the design's 0.5 s."""

    def __init__(self, handle: StoreHandle, poll_interval_s: float) -> None:
        """Remember the store; nothing starts until the first :meth:`subscribe`."""
        self._handle = handle
        self._interval = poll_interval_s
        self._lock = threading.Lock()
        self._subscribers: dict[int, Callable[[list[str]], None]] = {}
        self._next = 0
        self._loop: IOLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._notices: list[Notice] = []
        self._outbox: collections.deque[list[str]] = collections.deque()
        self._delivering = False
        self._held: list[Event] = []
        """Events waiting for the next fan-out (the watcher's thread only)."""
        self._next_post = 0.0
        self._cost_s = 0.0
        """What the last fan-out took on the event loop (set there, read here)."""

    def subscribe(self, send: Callable[[list[str]], None]) -> int:
        """Call ``send(messages)`` on this event loop for every change; return a token.

        Call it on the server's event loop (a socket's ``open``).
        """
        with self._lock:
            self._loop = IOLoop.current()
            token = self._next
            self._next += 1
            self._subscribers[token] = send
            if self._thread is None or not self._thread.is_alive():
                self._stop = threading.Event()
                self._thread = threading.Thread(
                    target=self._run, args=(self._stop,), name="nsight-lab-events",
                    daemon=True,
                )  # fmt: skip
                self._thread.start()
        return token

    def unsubscribe(self, token: int) -> None:
        """Stop sending to ``token``'s socket; with none left, the thread stops."""
        with self._lock:
            self._subscribers.pop(token, None)
            if not self._subscribers:
                self._stop.set()
                self._wake.set()
                self._thread = None

    @property
    def subscribers(self) -> int:
        """How many sockets are subscribed."""
        with self._lock:
            return len(self._subscribers)

    @property
    def watching(self) -> bool:
        """Whether the watcher's thread runs (and was not told to stop)."""
        with self._lock:
            thread = self._thread
        return thread is not None and thread.is_alive() and not self._stop.is_set()

    def close(self) -> None:
        """Forget every socket and stop the thread (it ends within one interval)."""
        with self._lock:
            self._subscribers.clear()
            self._stop.set()
            self._wake.set()
            thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    # -- the watcher's thread ----------------------------------------------------

    def _run(self, stop: threading.Event) -> None:
        listener = self._handle.listener()
        if listener is None:
            self._poll_sqlite(stop)
            return
        token = listener.subscribe(None, self._on_notice)
        try:
            self._relay_notices(stop)
        finally:
            listener.unsubscribe(token)

    def _poll_sqlite(self, stop: threading.Event) -> None:
        watcher = StoreWatcher(self._handle)
        try:
            watcher.baseline()  # what exists now is not news
        except StoreError as exc:  # the first poll then compares with an empty store
            logger.warning("[nsight-lab] events: %s", exc)
        warned = False
        while not stop.wait(self._interval):
            try:
                events = watcher.poll()
            except StoreError as exc:  # e.g. a store being replaced; retried next poll
                if not warned:
                    logger.warning("[nsight-lab] events: %s", exc)
                    warned = True
                continue
            warned = False
            self._hold(events)

    def _on_notice(self, notice: Notice) -> None:
        """Called on the listener's thread: queue the notice for this thread."""
        with self._lock:
            self._notices.append(notice)
        self._wake.set()

    def _relay_notices(self, stop: threading.Event) -> None:
        while not stop.is_set():
            wait = self._next_post - time.monotonic() if self._held else None
            self._wake.wait(None if wait is None else max(wait, 0.0))
            if stop.is_set():
                return
            self._wake.clear()
            with self._lock:
                notices, self._notices = self._notices, []
            self._hold(self.notice_events(notices) if notices else [])

    def _hold(self, events: list[Event]) -> None:
        """Merge ``events`` into those waiting; post them once the loop can take it.

        Merged, a session's ``runs-changed`` keeps its largest run id (a client
        asks for every run after the last it saw) and ``sessions-changed`` the
        latest: what a client re-fetches is the same.
        """
        if events:
            self._held = merge_events([*self._held, *events])
        now = time.monotonic()
        if not self._held or now < self._next_post:
            return
        self._post([json.dumps(event) for event in self._held])
        self._held = []
        # At least one poll interval between two pushes, more while fan-outs cost
        # the loop more than its share.
        share = min(self._cost_s / self.FAN_OUT_SHARE, self.MAX_HOLD_S)
        self._next_post = now + max(self._interval, share)

    def notice_events(self, notices: list[Notice]) -> list[Event]:
        """The messages for some PostgreSQL notices, merged: one store read at most."""
        runs: dict[int, int] = {}
        sessions = False
        for notice in notices:
            sessions = sessions or notice.sessions or notice.resync
            for sid, last in notice.runs.items():
                runs[sid] = max(last, runs.get(sid, 0))
        events: list[Event] = []
        if sessions:
            try:
                latest = self._handle.get_or_empty().latest_change()[0]
            except StoreError as exc:
                logger.warning("[nsight-lab] events: %s", exc)
                latest = 0
            events.append(_sessions_changed(latest))
        events.extend(_runs_changed(sid, last) for sid, last in sorted(runs.items()))
        return events

    # -- the event loop ------------------------------------------------------------

    def _post(self, messages: list[str]) -> None:
        """Hand ``messages`` to the event loop (from the watcher's thread)."""
        loop = self._loop
        if loop is None:
            return
        with contextlib.suppress(RuntimeError):  # a loop that was closed
            loop.add_callback(self._enqueue, messages)

    def _enqueue(self, messages: list[str]) -> None:
        self._outbox.append(messages)
        if not self._delivering:
            self._delivering = True
            IOLoop.current().add_callback(self._deliver)

    async def _deliver(self) -> None:
        """Write each queued batch to every socket, in order, a slice at a time."""
        try:
            while self._outbox:
                messages = self._outbox.popleft()
                with self._lock:
                    targets = list(self._subscribers.items())
                cost = 0.0
                started = time.perf_counter()
                for index, (token, send) in enumerate(targets, start=1):
                    if token in self._subscribers:  # not closed meanwhile
                        send(messages)
                    if index % self.FAN_OUT_SLICE == 0:
                        cost += time.perf_counter() - started
                        await asyncio.sleep(0)
                        started = time.perf_counter()
                self._cost_s = cost + time.perf_counter() - started
        finally:
            self._delivering = False


class RunEventsSocket(WebSocketMixin, WebSocketHandler, JupyterHandler):
    """``GET events``: the websocket described in the module docstring."""

    _token: int | None = None

    def set_default_headers(self) -> None:
        """Leave out JupyterHandler's default headers, meaningless on a websocket."""

    @ws_authenticated
    async def get(self, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401  (tornado's)
        """Upgrade an authenticated request to the websocket (403 otherwise)."""
        result = super().get(*args, **kwargs)
        if result is not None:
            await result

    def open(self, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401  (tornado's)
        """Subscribe to the server's one watcher; no store is read here."""
        super().open(*args, **kwargs)
        self._hub = event_hub(self.settings)
        self._token = self._hub.subscribe(self._send)

    def on_message(self, message: str | bytes) -> None:
        """Ignore client messages: the socket only pushes."""

    def on_close(self) -> None:
        """Unsubscribe (the mixin's ping stops itself once the socket is gone)."""
        if self._token is not None:
            self._hub.unsubscribe(self._token)
            self._token = None

    def _send(self, messages: list[str]) -> None:
        try:
            for message in messages:
                self.write_message(message)
        except WebSocketClosedError:
            self.on_close()


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
    merged.extend(_runs_changed(sid, last) for sid, last in sorted(runs.items()))
    return merged


def event_hub(settings: dict[str, Any]) -> EventHub:
    """The server's one :class:`EventHub`, made on the first socket's open."""
    hub: EventHub | None = settings.get(HUB_KEY)
    if hub is None:
        config: NsightLabConfig = settings[CONFIG_KEY]
        hub = EventHub(settings[STORE_KEY], config.poll_interval_s)
        settings[HUB_KEY] = hub
    return hub


def _runs_changed(session_id: int, last_run_id: int) -> Event:
    return {
        "type": "runs-changed",
        "schema_version": SCHEMA_VERSION,
        "session_id": session_id,
        "last_run_id": last_run_id,
    }


def _sessions_changed(latest_session_id: int) -> Event:
    return {
        "type": "sessions-changed",
        "schema_version": SCHEMA_VERSION,
        "latest_session_id": latest_session_id,
    }


def _last_runs(store: RunStore, session_ids: AbstractSet[int]) -> dict[int, int]:
    return {sid: store.last_run_id(sid) for sid in sorted(session_ids)}
