"""Writer liveness for the run store: is the process that writes a session alive?

A session records its writer's pid and, on Linux, a token ``"<boot id>:<start
time>"`` from ``/proc`` so that a reused pid is not mistaken for the writer
(:func:`writer_alive`). This is the SQLite engine's test; a PostgreSQL store's writer
may run on another host, and its liveness is its connection's advisory lock instead
(:mod:`nsight_lab.store.postgres` says why). :class:`Liveness` (a part of
``RunStore``) marks the sessions of dead writers interrupted and holds the locks.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from nsight_lab.contract.records import utc_now
from nsight_lab.store import postgres as pg
from nsight_lab.store.connection import StoreBase

if TYPE_CHECKING:
    from nsight_lab.store.dialect import Connection

logger = logging.getLogger(__name__)

INTERRUPTED_ERROR = (
    "kernel died or was killed while profiling; runs done so far are kept"
)
"""The error of a session whose writer died while it ran."""
RUNNING_HERE_SQL = (
    "SELECT id, pid, pid_token FROM sessions WHERE status = 'running' AND +host = ?"
)
"""A SQLite store's running sessions of this host, read at every open. The ``+``
keeps SQLite (no statistics) on ``sessions_status``: through ``sessions_host``, which
every session of a one-host store matches, the open read all sessions (123 ms at
100,000; issue 32). ``tests/store/test_history_queries.py`` keeps the plan."""


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _read_proc_stat(pid: int) -> tuple[str, str] | None:
    """Return ``(state, starttime)`` of a Linux process, or ``None`` if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 2 (comm) may hold spaces and parentheses: split after its last ")".
    fields = stat.rpartition(")")[2].split()
    # fields[0] is field 3 (state); field 22 (starttime, clock ticks after boot).
    return fields[0], fields[19]


def _has_proc() -> bool:
    return sys.platform.startswith("linux") and Path("/proc/self/stat").exists()


def pid_token(pid: int) -> str | None:
    """Return ``"<boot id>:<start time>"`` of a local Linux process, else ``None``."""
    if not _has_proc():
        return None
    stat = _read_proc_stat(pid)
    return None if stat is None else f"{_boot_id()}:{stat[1]}"


def writer_alive(pid: int | None, token: str | None) -> bool:
    """Tell whether a local writer process still runs; ``True`` when it cannot tell."""
    if pid is None or os.name != "posix":
        return True  # on Windows os.kill(pid, 0) would terminate the process
    if _has_proc():
        stat = _read_proc_stat(pid)
        alive = stat is not None and stat[0] not in {"Z", "X", "x"}
        return alive and (token is None or token == pid_token(pid))
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: alive, owned by another user
        return True
    return True


class Liveness(StoreBase):
    """Sessions' writers: who holds a running session, and who has died."""

    def mark_interrupted(self) -> list[int]:
        """Mark running sessions whose writer is gone.

        SQLite: a writer on this host is gone when its pid is not alive, is a
        zombie, or belongs to a process that started later than the writer did (a
        reused pid); sessions of other hosts, or whose liveness cannot be told, are
        left alone. PostgreSQL: a writer is gone when its connection's advisory
        lock on the session is (see :mod:`nsight_lab.store.postgres`), whatever its
        host. Runs are kept. Called when the store opens.

        Returns:
            The ids of the sessions marked ``"interrupted"``.

        Raises:
            StoreError: The store is closed or the write failed.
        """
        if self.read_only:
            return []
        if self._dialect.postgres:
            with self._read("find running sessions") as conn:
                dead = [int(r[0]) for r in conn.execute(pg.ORPHANS_SQL).fetchall()]
        else:
            with self._read("find running sessions") as conn:
                rows = conn.execute(RUNNING_HERE_SQL, (self._host,)).fetchall()
            alive: dict[tuple[int | None, str | None], bool] = {}
            for _, pid, token in rows:
                if (pid, token) not in alive:
                    alive[pid, token] = writer_alive(pid, token)
            dead = [sid for sid, pid, token in rows if not alive[pid, token]]
        if not dead:
            return []
        marked: list[int] = []
        with self._write("mark interrupted sessions") as conn:
            for sid in dead:
                cur = conn.execute(
                    "UPDATE sessions SET status = 'interrupted', error = ?,"
                    " finished_at = ? WHERE id = ? AND status = 'running'",
                    (INTERRUPTED_ERROR, utc_now(), sid),
                )
                if cur.rowcount:
                    marked.append(sid)
        if marked:
            logger.info("[nsight-lab] marked sessions %s as interrupted", marked)
        return marked

    def _writer_alive(
        self,
        conn: Connection,
        session_id: int,
        host: str | None,
        pid: int | None,
        token: str | None,
    ) -> bool:
        """Tell whether a running session's writer may still write it.

        SQLite: its process on this host is alive, or it runs on another host (which
        cannot be told). PostgreSQL: its connection holds the session's lock.
        """  # fmt: skip
        if self._dialect.postgres:
            row = conn.execute(
                pg.ORPHANS_SQL.replace("ORDER BY id", "AND id = ?"), (session_id,)
            ).fetchone()
            return row is None
        return host != self._host or writer_alive(pid, token)

    def _hold_session(self, conn: Connection, session_id: int) -> None:
        """On PostgreSQL, take the new session's writer lock (in its transaction)."""
        if self._dialect.postgres:
            conn.execute(pg.LOCK_SESSION_SQL, (session_id,))
            self._held.add(session_id)

    def _release_session(self, session_id: int) -> None:
        """On PostgreSQL, give back a finished session's writer lock, if held here."""
        if session_id not in self._held:
            return
        with self._lock:
            self._held.discard(session_id)
            if self._conn is not None:
                with contextlib.suppress(*self._errors):
                    self._conn.execute(pg.UNLOCK_SESSION_SQL, (session_id,))
