"""The run store: every session and run, persisted as it happens (SQLite or PostgreSQL).

:class:`RunStore` is the only place in nsight-lab that writes SQL (with its private
parts: the session and run methods in :mod:`nsight_lab.store.sessions` and
:mod:`nsight_lab.store.runs`, row conversion and filter SQL in
:mod:`nsight_lab.store.rows`, writer liveness in :mod:`nsight_lab.store.liveness`). The
writer (the kernel) commits each batch of runs in one short transaction, so readers on
other connections (the Jupyter server, the CLI) see each run as soon as ``add_runs``
returns. The schema is versioned with ``PRAGMA user_version`` (on PostgreSQL, the
``nsight_lab_schema`` table); the steps live in :mod:`nsight_lab.store.migrations`.

Two engines behind this one class: a SQLite file (WAL), the embedded default, and a
PostgreSQL database (:mod:`nsight_lab.store.postgres`) when the location is a
``postgresql://`` URL, as ``$NSIGHT_LAB_STORE`` gives it. The SQL is written once and
translated (:mod:`nsight_lab.store.dialect`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import sqlite3
import threading
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from nsight_lab.contract.records import utc_now
from nsight_lab.errors import NotFoundError, StoreError
from nsight_lab.paths import store_location
from nsight_lab.store import migrations as _migrations
from nsight_lab.store import postgres as _pg
from nsight_lab.store.baselines import BaselineQueries
from nsight_lab.store.dialect import POSTGRES, SQLITE
from nsight_lab.store.liveness import writer_alive
from nsight_lab.store.run_writes import RunWrites
from nsight_lab.store.runs import RunQueries
from nsight_lab.store.sessions import SessionQueries, SessionRunningError

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import TracebackType

    from typing_extensions import Self

    from nsight_lab.store.dialect import Connection

__all__ = ["INTERRUPTED_ERROR", "RunStore", "SessionRunningError"]

logger = logging.getLogger(__name__)

SESSION_FILTERS = (
    "notebook",
    "annotation",
    "device",
    "host",
    "user",
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


class RunStore(SessionQueries, RunWrites, RunQueries, BaselineQueries):
    """Sessions and their per-run records in one SQLite file or PostgreSQL database.

    Writes go through one connection under a lock; reads use a connection per
    thread (SQLite connections are not to be shared by concurrent threads), so a
    long read or write never blocks a read in another thread. A store whose
    file or directory is not writable is opened read-only (writes then raise
    :class:`StoreError`). Use it as a context manager or call
    :meth:`close`. Opening a store creates it (and its directory), upgrades an older
    schema and marks sessions whose writer process has died as interrupted. On
    PostgreSQL every thread has a connection of its own too, and the database's
    tables are created by the first store opened on it.

    Args:
        path: The SQLite file, or a ``postgresql://`` URL; default
            :func:`nsight_lab.paths.store_location` (``$NSIGHT_LAB_STORE``, else
            the SQLite file under ``$NSIGHT_LAB_HOME``).

    Attributes:
        engine: ``"sqlite"`` or ``"postgresql"``.
        location: What to open the same store again with (a URL keeps its password).
        where: The store for messages: the file path, or the URL without password.
        path: The SQLite file; ``None`` on PostgreSQL.

    Raises:
        StoreError: The file cannot be created or opened, is not an nsight-lab store,
            or was written by a newer nsight-lab; the database cannot be reached.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        read_only: bool | None = None,
    ) -> None:
        """Open (create, upgrade) the store at ``path``; see the class docstring.

        Args:
            path: The SQLite file or a ``postgresql://`` URL; default
                :func:`nsight_lab.paths.store_location`.
            read_only: ``True`` opens an existing store for reading only; ``None``
                (default) does so when the file exists but it or its directory is
                not writable (a read-only mount, another user's store); ``False``
                always opens it for writing. On PostgreSQL ``None`` means writable.
        """
        location = store_location() if path is None else os.fspath(path)
        if location.lower().startswith(_pg.MANGLED) and not _pg.is_postgres_url(
            location
        ):
            shown = _pg.redact(location.replace(":/", "://", 1))
            msg = (
                f"the run store location {shown!r} looks like a postgresql:// URL "
                "made into a file path; pass the URL as a string"
            )
            raise StoreError(msg)
        self.location = location
        self._lock = threading.RLock()
        self._conn: Connection | None = None
        self._host = socket.gethostname()
        self._local = threading.local()
        self._readers: list[Connection] = []
        self._uri: str | None = None
        self._errors: tuple[type[Exception], ...] = (sqlite3.Error, *_pg.errors())
        self._held: set[int] = set()
        """Sessions whose PostgreSQL writer lock this store's connection holds."""
        self._annotated: set[tuple[int, str]] = set()
        """(session, region) pairs this store committed to ``session_annotations``:
        later batches of the same regions skip that statement (see ``add_runs``)."""
        if _pg.is_postgres_url(location):
            self.engine = "postgresql"
            self._dialect = POSTGRES
            self.path: Path | None = None
            self.where = _pg.redact(location)
            self._memory = False
            self.read_only = bool(read_only)
            self._open_postgres()
        else:
            self.engine = "sqlite"
            self._dialect = SQLITE
            self.path = Path(location)
            self.where = str(self.path)
            self._memory = location == _IN_MEMORY
            if read_only is None:
                read_only = not self._memory and _unwritable(self.path)
            self.read_only = read_only
            if read_only:
                self._open_read_only()
            else:
                self._open_read_write()
        try:
            self.mark_interrupted()
        except StoreError as exc:  # e.g. a read-only store: reading still works
            logger.warning("[nsight-lab] %s", exc)

    def _open_postgres(self) -> None:
        conn = _pg.connect(self.location, read_only=self.read_only)
        try:
            self._conn = conn
            if self.read_only:
                self._check_read_only_version(conn)
            else:
                self._migrate(conn)
        except BaseException as exc:
            conn.close()
            self._conn = None
            if isinstance(exc, self._errors):
                action = "open the store"
                raise self._store_error(action, exc) from exc
            raise

    def _check_read_only_version(self, conn: _pg.PgConnection) -> None:
        version = _pg.schema_version(conn)
        if version != _migrations.latest_version():
            msg = (
                f"the read-only run store {self.where!r} has schema version "
                f"{version}, not {_migrations.latest_version()}; open it "
                "writable once (or with the nsight-lab that wrote it)"
            )
            raise StoreError(msg)

    def _open_read_write(self) -> None:
        assert self.path is not None  # noqa: S101  (SQLite only)
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
            raise self._not_a_store(exc) from exc
        except BaseException:
            conn.close()
            self._conn = None
            raise

    def _open_read_only(self) -> None:
        """Open an existing store for reading: ``mode=ro``, else ``immutable=1``.

        A WAL database opened read-only still needs its ``-shm`` and ``-wal`` files;
        where they cannot be created (a read-only directory) the file is opened as
        immutable: no locks, no WAL, the snapshot the file holds.
        """
        assert self.path is not None  # noqa: S101  (SQLite only)
        if not self.path.is_file():
            msg = (
                f"cannot open the run store {str(self.path)!r} read-only: no such "
                "file; profile a cell with %%nsight first, or set NSIGHT_LAB_HOME"
            )
            raise StoreError(msg)
        base = "file:" + urllib.parse.quote(str(self.path.resolve()))
        error: sqlite3.Error | None = None
        for query in ("?mode=ro", "?mode=ro&immutable=1"):
            try:
                conn = self._connect_uri(base + query)
            except sqlite3.Error as exc:
                error = exc
                continue
            try:
                version = int(conn.execute("PRAGMA user_version").fetchone()[0])
                conn.execute("SELECT count(*) FROM sessions").fetchone()
            except sqlite3.OperationalError as exc:
                conn.close()
                error = exc
                if "no such table" in str(exc):
                    raise self._not_a_store(exc) from exc
                continue
            except sqlite3.Error as exc:
                conn.close()
                raise self._not_a_store(exc) from exc
            if version != _migrations.latest_version():
                conn.close()
                msg = (
                    f"the read-only run store {str(self.path)!r} has schema version "
                    f"{version}, not {_migrations.latest_version()}, and cannot be "
                    "upgraded in place; open it with the nsight-lab that wrote it, "
                    "or copy it to a writable directory"
                )
                raise StoreError(msg)
            self._uri = base + query
            self._conn = conn
            return
        assert error is not None  # noqa: S101  (the loop ran at least once)
        action = "open the store read-only"
        raise self._store_error(action, error) from error

    def _connect_uri(self, uri: str) -> sqlite3.Connection:
        conn = sqlite3.connect(
            uri,
            uri=True,
            timeout=BUSY_TIMEOUT_S,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        except sqlite3.Error:
            conn.close()
            raise
        return conn

    def _not_a_store(self, exc: sqlite3.Error) -> StoreError:
        msg = (
            f"{str(self.path)!r} is not a readable nsight-lab run store ({exc}); "
            "move the file aside and nsight-lab will create a new store there, "
            "or set NSIGHT_LAB_HOME to another directory"
        )
        return StoreError(msg)

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
            for reader in self._readers:
                with contextlib.suppress(*self._errors):
                    reader.close()
            self._readers.clear()

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
        """Return ``RunStore('<path or URL without password>')``."""
        return f"RunStore({self.where!r})"

    # -- sessions and runs: see _store_sessions.py and _store_runs.py ----------------

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
                dead = [int(r[0]) for r in conn.execute(_pg.ORPHANS_SQL).fetchall()]
        else:
            with self._read("find running sessions") as conn:
                rows = conn.execute(
                    "SELECT id, pid, pid_token FROM sessions"
                    " WHERE status = 'running' AND host = ?",
                    (self._host,),
                ).fetchall()
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
                _pg.ORPHANS_SQL.replace("ORDER BY id", "AND id = ?"), (session_id,)
            ).fetchone()
            return row is None
        return host != self._host or writer_alive(pid, token)

    def _hold_session(self, conn: Connection, session_id: int) -> None:
        """On PostgreSQL, take the new session's writer lock (in its transaction)."""
        if self._dialect.postgres:
            conn.execute(_pg.LOCK_SESSION_SQL, (session_id,))
            self._held.add(session_id)

    def _release_session(self, session_id: int) -> None:
        """On PostgreSQL, give back a finished session's writer lock, if held here."""
        if session_id not in self._held:
            return
        with self._lock:
            self._held.discard(session_id)
            if self._conn is not None:
                with contextlib.suppress(*self._errors):
                    self._conn.execute(_pg.UNLOCK_SESSION_SQL, (session_id,))

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

    def _schema_version(self, conn: Connection) -> int:
        if self._dialect.postgres:
            return _pg.schema_version(cast("_pg.PgConnection", conn))
        return int(conn.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self, conn: Connection) -> None:
        target = _migrations.latest_version()
        version = self._schema_version(conn)
        if version == target:
            return
        if version > target:
            msg = (
                f"the run store {self.where!r} has schema version {version}, newer "
                f"than this nsight-lab understands ({target}); upgrade nsight-lab: "
                "pip install -U nsight-lab"
            )
            raise StoreError(msg)
        if self._dialect.postgres:
            conn.execute("BEGIN")
            # One process creates or upgrades the tables; the others wait here.
            conn.execute("SELECT pg_advisory_xact_lock(?, ?)", _pg.MIGRATION_LOCK)
        else:
            conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have upgraded it while we waited for the lock.
            version = self._schema_version(conn)
            for step in _migrations.STEPS[version:target]:
                for statement in step:
                    if callable(statement):  # values made in Python (migrations.py)
                        statement(conn)
                    else:
                        conn.execute(self._dialect.ddl(statement))
            if self._dialect.postgres:
                _pg.set_schema_version(cast("_pg.PgConnection", conn), target)
            else:
                conn.execute(f"PRAGMA user_version = {target}")
            conn.execute("COMMIT")
        except self._errors as exc:
            with contextlib.suppress(*self._errors):
                conn.execute("ROLLBACK")
            msg = (
                f"cannot upgrade the run store {self.where!r} from schema version "
                f"{version} to {target}: {exc}; nothing was changed; report this at "
                "https://github.com/nsight-lab/nsight-lab/issues"
            )
            raise StoreError(msg) from exc
        logger.info("[nsight-lab] upgraded %s to schema %d", self.where, target)

    def _connection(self) -> Connection:
        if self._conn is None:
            msg = f"the run store {self.where!r} is closed; open a new RunStore"
            raise StoreError(msg)
        return self._conn

    def _reader(self) -> Connection | None:
        """Return this thread's own read connection, or ``None`` to use the shared one.

        An in-memory store reads on its one shared connection under the lock; on a
        file (or a PostgreSQL database) every thread gets a read connection of its
        own (the shared one only writes), so a long read or write in one thread never
        holds up a read in another (WAL readers do not wait for writers).

        Raises:
            StoreError: The store is closed, or the connection cannot be opened.
        """
        self._connection()  # closed stores raise
        if self._memory:
            return None
        conn: Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        try:
            if self._dialect.postgres:
                conn = _pg.connect(self.location, read_only=self.read_only)
            elif self._uri is not None:
                conn = self._connect_uri(self._uri)
            else:
                assert self.path is not None  # noqa: S101  (SQLite)
                lite = sqlite3.connect(
                    self.path,
                    timeout=BUSY_TIMEOUT_S,
                    isolation_level=None,
                    check_same_thread=False,
                )
                lite.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
                lite.execute("PRAGMA foreign_keys = ON")
                conn = lite
        except self._errors as exc:
            action = "open a read connection"
            raise self._store_error(action, exc) from exc
        with self._lock:
            if self._conn is None:  # closed meanwhile
                conn.close()
                self._connection()
            self._readers.append(conn)
        self._local.conn = conn
        return conn

    @contextlib.contextmanager
    def _read(self, action: str) -> Iterator[Connection]:
        own = self._reader()
        if own is not None:
            try:
                yield own
            except self._errors as exc:
                raise self._store_error(action, exc) from exc
            return
        with self._lock:
            conn = self._connection()
            try:
                yield conn
            except self._errors as exc:
                raise self._store_error(action, exc) from exc

    @contextlib.contextmanager
    def _write(self, action: str) -> Iterator[Connection]:
        """One write transaction on the shared write connection, under the lock.

        SQLite: ``BEGIN IMMEDIATE`` takes the file's write lock at once. PostgreSQL:
        ``BEGIN`` (read committed; row locks order the writers of one session) and,
        before ``COMMIT``, the ``NOTIFY`` that tells listeners what changed.
        """
        if self.read_only:
            msg = (
                f"cannot {action}: the run store {self.where!r} is open read-only "
                "(the file or its directory is not writable); reading still works"
            )
            raise StoreError(msg)
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN" if self._dialect.postgres else "BEGIN IMMEDIATE")
            except self._errors as exc:
                raise self._store_error(action, exc) from exc
            try:
                yield conn
                conn.execute(
                    "UPDATE meta SET value = value + 1 WHERE key = 'change_seq'"
                )
                if isinstance(conn, _pg.PgConnection):
                    conn.notify()
                conn.execute("COMMIT")
            except BaseException as exc:
                with contextlib.suppress(*self._errors):
                    conn.execute("ROLLBACK")
                if isinstance(conn, _pg.PgConnection):
                    conn.forget()
                if isinstance(exc, self._errors):
                    raise self._store_error(action, exc) from exc
                raise

    def _store_error(self, action: str, exc: BaseException) -> StoreError:
        text = " ".join(str(exc).split())
        if "locked" in text or "busy" in text:
            fix = (
                f"another process held it for over {BUSY_TIMEOUT_S:.0f} s; "
                "retry, and keep the store off network filesystems"
            )
        elif self._dialect.postgres:
            text = text.replace(self.location, self.where)
            fix = "check that the PostgreSQL server is up and NSIGHT_LAB_STORE names it"
        else:
            fix = (
                "check the file and its folder are writable, or run: nsight-lab doctor"
            )
        return StoreError(f"cannot {action} at {self.where!r}: {text}; {fix}")

    def _not_found(self, session_id: int) -> NotFoundError:
        msg = (
            f"no session with id {session_id!r} in the run store {self.where!r}; "
            f"{_HISTORY_HINT}"
        )
        return NotFoundError(msg)


_IN_MEMORY = ":memory:"


def _unwritable(path: Path) -> bool:
    """Tell whether an existing store file, or its directory, cannot be written.

    ``os.access`` answers for the real user; on a read-only filesystem it refuses
    even root (``EROFS``).
    """
    if not path.is_file():
        return False
    return not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK))
