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

The sessions named in ``runs-changed`` are handed to the server's view models
(:meth:`~nsight_lab.viewmodel.cache.ViewModels.warm`): a running one's model is
built and fed from then on, off the request path (issue 32).

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

from nsight_lab.errors import StoreError
from nsight_lab.server.base import CONFIG_KEY, MODELS_KEY, STORE_KEY
from nsight_lab.server.watcher import (
    Event,
    StoreWatcher,
    merge_events,
    runs_changed,
    sessions_changed,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from nsight_lab.server.config import NsightLabConfig
    from nsight_lab.server.pg_listen import Notice
    from nsight_lab.server.store_handle import StoreHandle
    from nsight_lab.viewmodel.cache import ViewModels

__all__ = [
    "HUB_KEY",
    "EventHub",
    "RunEventsSocket",
    "StoreWatcher",
    "event_hub",
    "merge_events",
]

logger = logging.getLogger(__name__)

HUB_KEY = "nsight_lab_events"
"""``web_app.settings`` key of the server's one :class:`EventHub`."""


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

    def __init__(
        self,
        handle: StoreHandle,
        poll_interval_s: float,
        on_runs: Callable[[list[int]], None] | None = None,
    ) -> None:
        """Remember the store; nothing starts until the first :meth:`subscribe`.

        ``on_runs`` is called on the watcher's thread with the sessions that got
        runs (the server's view models warm those running: issue 32).
        """
        self._handle = handle
        self._interval = poll_interval_s
        self._on_runs = on_runs
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
            runs = [e["session_id"] for e in events if e["type"] == "runs-changed"]
            if runs and self._on_runs is not None:
                self._on_runs(runs)
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
            events.append(sessions_changed(latest))
        events.extend(runs_changed(sid, last) for sid, last in sorted(runs.items()))
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


def event_hub(settings: dict[str, Any]) -> EventHub:
    """The server's one :class:`EventHub`, made on the first socket's open."""
    hub: EventHub | None = settings.get(HUB_KEY)
    if hub is None:
        config: NsightLabConfig = settings[CONFIG_KEY]
        handle: StoreHandle = settings[STORE_KEY]
        models: ViewModels | None = settings.get(MODELS_KEY)

        def warm(session_ids: list[int]) -> None:
            with contextlib.suppress(StoreError):  # the watcher says why, once
                store = handle.get()
                if store is not None and models is not None:
                    models.warm(store, session_ids)

        hub = EventHub(handle, config.poll_interval_s, warm)
        settings[HUB_KEY] = hub
    return hub
