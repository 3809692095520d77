"""The server's one ``LISTEN`` on a PostgreSQL run store, fanned out to its sockets.

Every write transaction of a PostgreSQL store ends with a ``NOTIFY`` saying what it
changed (:meth:`nsight_lab.store.postgres.PgConnection.notify`), delivered when it
commits, from whichever host wrote it. One thread per server holds a connection that
``LISTEN``s and hands each notice to its subscribers (the server's one
:class:`~nsight_lab.server.events.EventHub`, which fans it out to the sockets): no
polling of the runs, and a run reaches the sockets a network round trip after its
commit.

What no notice can say is that a writer died (its connection just drops). So while
it waits the thread also asks, every :data:`LIVENESS_INTERVAL_S`, whether a running
session lost its writer (one read of ``pg_locks``) and marks it interrupted; that
write notifies like any other. After a lost connection the thread reconnects and
tells every socket to re-read everything (notices sent meanwhile are lost).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nsight_lab.errors import StoreError
from nsight_lab.store import postgres as _pg

if TYPE_CHECKING:
    from collections.abc import Callable

    from tornado.ioloop import IOLoop

    from nsight_lab.store.run_store import RunStore

__all__ = ["Notice", "PgListener"]

logger = logging.getLogger(__name__)

LIVENESS_INTERVAL_S = 2.0
"""How often the listener looks for running sessions whose writer is gone."""
RECONNECT_S = 1.0


@dataclass(frozen=True)
class Notice:
    """What one committed write changed (``resync``: anything may have)."""

    runs: dict[int, int] = field(default_factory=dict)
    """Session id -> its largest run id added by the write."""
    sessions: bool = False
    """Sessions were added, finished, annotated or deleted."""
    resync: bool = False

    @classmethod
    def parse(cls, payload: str) -> Notice:
        """Read a notice's JSON payload; one that cannot be read means resync."""
        try:
            data = json.loads(payload)
            runs = {int(k): int(v) for k, v in dict(data.get("runs", {})).items()}
            return cls(runs=runs, sessions=bool(data.get("sessions", True)))
        except (ValueError, TypeError, AttributeError):
            return cls(resync=True)


Subscriber = tuple["IOLoop | None", "Callable[[Notice], None]"]


class PgListener:
    """A daemon thread that LISTENs on the store's channel while anyone subscribes.

    Args:
        location: The store's ``postgresql://`` URL.
        store: Returns the server's shared store (to mark dead writers' sessions).
    """

    def __init__(self, location: str, store: Callable[[], RunStore | None]) -> None:
        """Remember where to listen; the thread starts with the first subscriber."""
        self._location = location
        self._store = store
        self._lock = threading.Lock()
        self._subscribers: dict[int, Subscriber] = {}
        self._next = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    def subscribe(self, loop: IOLoop | None, callback: Callable[[Notice], None]) -> int:
        """Call ``callback(notice)`` for every notice; return a token.

        ``callback`` runs on ``loop``, or with ``loop=None`` on the listener's own
        thread (it must then return at once).
        """
        with self._lock:
            token = self._next
            self._next += 1
            self._subscribers[token] = (loop, callback)
            if self._thread is None or self._stop.is_set():
                # A thread told to stop may still be finishing: it keeps its own
                # stop event, and this subscriber gets a thread of its own.
                self._stop = threading.Event()
                self._ready.clear()
                self._thread = threading.Thread(
                    target=self._run, args=(self._stop,), name="nsight-lab-listen",
                    daemon=True,
                )  # fmt: skip
                self._thread.start()
        return token

    def wait_ready(self, timeout_s: float) -> bool:
        """Wait until the thread LISTENs (tests); ``False`` on timeout."""
        return self._ready.wait(timeout_s)

    def unsubscribe(self, token: int) -> None:
        """Stop calling the subscriber of ``token``; idle, the thread stops."""
        with self._lock:
            self._subscribers.pop(token, None)
            if not self._subscribers:
                self._stop.set()
                self._thread = None

    def close(self) -> None:
        """Stop the thread (it ends within a second)."""
        with self._lock:
            self._subscribers.clear()
            self._stop.set()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=5)

    def _fan_out(self, notice: Notice) -> None:
        with self._lock:
            subscribers = list(self._subscribers.values())
        for loop, callback in subscribers:
            if loop is None:
                callback(notice)
                continue
            with contextlib.suppress(RuntimeError):  # a loop that was closed
                loop.add_callback(callback, notice)

    def _run(self, stop: threading.Event) -> None:
        warned = False
        first = True
        while not stop.is_set():
            try:
                conn = _pg.connect(self._location)
            except StoreError as exc:
                if not warned:
                    logger.warning("[nsight-lab] events: %s", exc)
                    warned = True
                stop.wait(RECONNECT_S)
                continue
            warned = False
            try:
                conn.raw.execute(f"LISTEN {_pg.CHANNEL}")
                if not first:  # notices may have been missed while disconnected
                    self._fan_out(Notice(resync=True))
                first = False
                self._ready.set()
                self._listen(conn, stop)
            except _pg.errors() as exc:
                logger.warning("[nsight-lab] events: lost the store's notices: %s", exc)
                stop.wait(RECONNECT_S)
            finally:
                with contextlib.suppress(*_pg.errors()):
                    conn.close()

    def _listen(self, conn: _pg.PgConnection, stop: threading.Event) -> None:
        next_check = time.monotonic()
        while not stop.is_set():
            for notify in conn.raw.notifies(timeout=0.5, stop_after=64):
                self._fan_out(Notice.parse(notify.payload))
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + LIVENESS_INTERVAL_S
                self._mark_dead_writers()

    def _mark_dead_writers(self) -> None:
        try:
            store = self._store()
            if store is not None:
                store.mark_interrupted()  # notifies through its own write
        except StoreError as exc:
            logger.debug("[nsight-lab] liveness check: %s", exc)
