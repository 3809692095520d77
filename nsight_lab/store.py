"""The run store: every session and run, persisted as it happens (SQLite, WAL).

:class:`RunStore` is the only place in nsight-lab that writes SQL (with its private
parts: the session and run methods in :mod:`nsight_lab._store_sessions` and
:mod:`nsight_lab._store_runs`, row conversion and filter SQL in
:mod:`nsight_lab._store_rows`, writer liveness in :mod:`nsight_lab._liveness`). The
writer (the kernel) commits each batch of runs in one short transaction, so readers on
other connections (the Jupyter server, the CLI) see each run as soon as ``add_runs``
returns. The schema is versioned with ``PRAGMA user_version``; the steps live in
:mod:`nsight_lab._migrations`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsight_lab import _migrations
from nsight_lab._liveness import _writer_alive
from nsight_lab._store_runs import _RunQueries
from nsight_lab._store_sessions import _SessionQueries
from nsight_lab.errors import NotFoundError, StoreError
from nsight_lab.paths import db_path
from nsight_lab.records import utc_now

if TYPE_CHECKING:
    import os
    from collections.abc import Iterator
    from types import TracebackType

    from typing_extensions import Self

__all__ = ["INTERRUPTED_ERROR", "RunStore"]

logger = logging.getLogger(__name__)

SESSION_FILTERS = (
    "notebook",
    "annotation",
    "device",
    "backend",
    "status",
    "since",
    "until",
    "text",
)
"""Keyword filters of ``RunStore.list_sessions`` and ``count_sessions``."""

BUSY_TIMEOUT_S = 30.0
INTERRUPTED_ERROR = (
    "kernel died or was killed while profiling; runs done so far are kept"
)
_HISTORY_HINT = "list sessions with: nsight-lab history"


class RunStore(_SessionQueries, _RunQueries):
    """Sessions and their per-run records in one SQLite file.

    One connection, shared by threads under a lock. Use it as a context manager or call
    :meth:`close`. Opening a store creates it (and its directory), upgrades an older
    schema and marks sessions whose writer process has died as interrupted.

    Args:
        path: The SQLite file; default :func:`nsight_lab.paths.db_path`.

    Raises:
        StoreError: The file cannot be created or opened, is not an nsight-lab store,
            or was written by a newer nsight-lab.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        """Open (create, upgrade) the store at ``path``; see the class docstring."""
        self.path = Path(db_path() if path is None else path)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._host = socket.gethostname()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            msg = (
                f"cannot create the directory of the run store {str(self.path)!r}: "
                f"{exc.strerror or exc}; set NSIGHT_LAB_HOME to a writable directory"
            )
            raise StoreError(msg) from exc
        try:
            conn = sqlite3.connect(
                self.path,
                timeout=BUSY_TIMEOUT_S,
                isolation_level=None,  # autocommit; transactions are explicit
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            msg = (
                f"cannot open the run store {str(self.path)!r}: {exc}; "
                "check the path and its permissions, or set NSIGHT_LAB_HOME"
            )
            raise StoreError(msg) from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL").fetchall()
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            self._conn = conn
            self._migrate(conn)
        except sqlite3.Error as exc:
            conn.close()
            self._conn = None
            if isinstance(exc, sqlite3.OperationalError):  # locked, read-only, I/O
                error = self._store_error("open the store", exc)
                raise error from exc
            msg = (
                f"{str(self.path)!r} is not a readable nsight-lab run store ({exc}); "
                "move the file aside and nsight-lab will create a new store there, "
                "or set NSIGHT_LAB_HOME to another directory"
            )
            raise StoreError(msg) from exc
        except BaseException:
            conn.close()
            self._conn = None
            raise
        try:
            self.mark_interrupted()
        except StoreError as exc:  # e.g. a read-only store: reading still works
            logger.warning("[nsight-lab] %s", exc)

    # -- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection; later calls raise :class:`StoreError`. Idempotent.

        Raises:
            StoreError: Never in practice; closing an open store does not fail.
        """
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> Self:
        """Return the store itself."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the store."""
        self.close()

    def __repr__(self) -> str:
        """Return ``RunStore('<path>')``."""
        return f"RunStore({str(self.path)!r})"

    # -- sessions and runs: see _store_sessions.py and _store_runs.py ----------------

    def mark_interrupted(self) -> list[int]:
        """Mark running sessions whose writer process on this host is gone.

        A writer is gone when its pid is not alive, is a zombie, or belongs to a
        process that started later than the writer did (a reused pid). Sessions of
        other hosts, or whose liveness cannot be told, are left alone. Runs are kept.
        Called when the store opens.

        Returns:
            The ids of the sessions marked ``"interrupted"``.

        Raises:
            StoreError: The store is closed or the write failed.
        """
        with self._read("find running sessions") as conn:
            rows = conn.execute(
                "SELECT id, pid, pid_token FROM sessions"
                " WHERE status = 'running' AND host = ?",
                (self._host,),
            ).fetchall()
        alive: dict[tuple[int | None, str | None], bool] = {}
        for _, pid, token in rows:
            if (pid, token) not in alive:
                alive[pid, token] = _writer_alive(pid, token)
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

    # -- cache -----------------------------------------------------------------------

    def cache_get(self, key: str) -> Any:  # noqa: ANN401  (any JSON value)
        """Return the JSON value cached under ``key``, or ``None``.

        Raises:
            StoreError: The store is closed or unreadable.
        """
        with self._read("read the cache") as conn:
            row = conn.execute(
                "SELECT value_json FROM cache WHERE key = ?", (key,)
            ).fetchone()
        return None if row is None else json.loads(row[0])

    def cache_put(self, key: str, value: Any) -> None:  # noqa: ANN401  (any JSON value)
        """Cache a JSON-able ``value`` under ``key``, replacing any previous one.

        Raises:
            StoreError: ``value`` is not JSON-able, the store is closed or the write
                failed.
        """
        try:
            value_json = json.dumps(value)
        except (TypeError, ValueError) as exc:
            msg = f"cannot cache a value under {key!r}: {exc}; pass JSON-able values"
            raise StoreError(msg) from exc
        with self._write("write the cache") as conn:
            conn.execute(
                "INSERT INTO cache (key, value_json, updated_at) VALUES (?, ?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value_json = excluded.value_json,"
                " updated_at = excluded.updated_at",
                (key, value_json, utc_now()),
            )

    # -- internals -------------------------------------------------------------------

    def _migrate(self, conn: sqlite3.Connection) -> None:
        target = _migrations.latest_version()
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version == target:
            return
        if version > target:
            msg = (
                f"the run store {str(self.path)!r} has schema version {version}, newer "
                f"than this nsight-lab understands ({target}); upgrade nsight-lab: "
                "pip install -U nsight-lab"
            )
            raise StoreError(msg)
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have upgraded it while we waited for the lock.
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            for step in _migrations.STEPS[version:target]:
                for statement in step:
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {target}")
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            msg = (
                f"cannot upgrade the run store {str(self.path)!r} from schema version "
                f"{version} to {target}: {exc}; nothing was changed; report this at "
                "https://github.com/nsight-lab/nsight-lab/issues"
            )
            raise StoreError(msg) from exc
        logger.info("[nsight-lab] upgraded %s to schema %d", self.path, target)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            msg = f"the run store {str(self.path)!r} is closed; open a new RunStore"
            raise StoreError(msg)
        return self._conn

    @contextlib.contextmanager
    def _read(self, action: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self._connection()
            try:
                yield conn
            except sqlite3.Error as exc:
                raise self._store_error(action, exc) from exc

    @contextlib.contextmanager
    def _write(self, action: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._store_error(action, exc) from exc
            try:
                yield conn
                conn.execute(
                    "UPDATE meta SET value = value + 1 WHERE key = 'change_seq'"
                )
                conn.execute("COMMIT")
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self._store_error(action, exc) from exc
                raise

    def _store_error(self, action: str, exc: sqlite3.Error) -> StoreError:
        if "locked" in str(exc) or "busy" in str(exc):
            fix = (
                f"another process held it for over {BUSY_TIMEOUT_S:.0f} s; "
                "retry, and keep the store off network filesystems"
            )
        else:
            fix = (
                "check the file and its folder are writable, or run: nsight-lab doctor"
            )
        return StoreError(f"cannot {action} at {str(self.path)!r}: {exc}; {fix}")

    def _not_found(self, session_id: int) -> NotFoundError:
        msg = (
            f"no session with id {session_id!r} in the run store {str(self.path)!r}; "
            f"{_HISTORY_HINT}"
        )
        return NotFoundError(msg)
