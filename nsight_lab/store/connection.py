"""The run store's connections: :class:`StoreBase`, what every part of the store uses.

It opens the store (a SQLite file, :mod:`nsight_lab.store.sqlite_files`, or a
PostgreSQL database, :mod:`nsight_lab.store.postgres`), upgrades its schema
(:mod:`nsight_lab.store.migrations`), and gives the parts of
:class:`~nsight_lab.store.run_store.RunStore` their transactions: ``_read`` on the
calling thread's own connection, ``_write`` on the one write connection under a lock,
each turning a driver's error into one :class:`StoreError` line.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from nsight_lab.errors import NotFoundError, StoreError
from nsight_lab.paths import store_location
from nsight_lab.store import health, migrations
from nsight_lab.store import postgres as pg
from nsight_lab.store import sqlite_files as lite
from nsight_lab.store.dialect import POSTGRES, SQLITE

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import TracebackType

    from typing_extensions import Self

    from nsight_lab.store.dialect import Connection

HISTORY_HINT = "list sessions with: nsight-lab history"


class StoreBase:
    """A store's connections and transactions (see :class:`RunStore` for its use).

    Writes go through one connection under a lock; reads use a connection per
    thread (SQLite connections are not to be shared by concurrent threads), so a
    long read or write never blocks a read in another thread.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        read_only: bool | None = None,
    ) -> None:
        """Connect to the SQLite file or PostgreSQL database at ``path``.

        Tells the engine from ``path``, opens the write connection (a SQLite file
        and its directory are created, a read-only one is opened for reading) and
        upgrades the schema; the arguments are :class:`RunStore`'s.

        Raises:
            StoreError: ``path`` is a URL made into a file path, or the store
                cannot be opened.
        """
        location = store_location() if path is None else os.fspath(path)
        if location.lower().startswith(pg.MANGLED) and not pg.is_postgres_url(location):
            shown = pg.redact(location.replace(":/", "://", 1))
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
        # psycopg (50 ms to import) only for a PostgreSQL store (issue 32)
        driver = pg.errors() if pg.is_postgres_url(location) else ()
        self._errors: tuple[type[Exception], ...] = (sqlite3.Error, *driver)
        self._held: set[int] = set()
        """Sessions whose PostgreSQL writer lock this store's connection holds."""
        self.damaged: str | None = None
        """Why the store is known to be damaged (a failed check or a read or write
        that met a damaged page); every later write refuses (:meth:`_write`)."""
        self._annotated: set[tuple[int, str]] = set()
        """(session, region) pairs this store committed to ``session_annotations``:
        later batches of the same regions skip that statement (see ``add_runs``)."""
        if pg.is_postgres_url(location):
            self.engine = "postgresql"
            self._dialect = POSTGRES
            self.path: Path | None = None
            self.where = pg.redact(location)
            self._memory = False
            self.read_only = bool(read_only)
            self._open_postgres()
        else:
            self.engine = "sqlite"
            self._dialect = SQLITE
            self.path = Path(location)
            self.where = str(self.path)
            self._memory = location == lite.IN_MEMORY
            self._open_sqlite(read_only=read_only)

    def _open_postgres(self) -> None:
        conn = pg.connect(self.location, read_only=self.read_only)
        try:
            self._conn = conn
            if self.read_only:
                self._check_read_only_version(conn)
            else:
                migrations.upgrade(conn, self._dialect, self.where, self._errors)
        except BaseException as exc:
            conn.close()
            self._conn = None
            if isinstance(exc, self._errors):
                action = "open the store"
                raise self._store_error(action, exc) from exc
            raise

    def _check_read_only_version(self, conn: pg.PgConnection) -> None:
        version = pg.schema_version(conn)
        if version != migrations.latest_version():
            msg = (
                f"the read-only run store {self.where!r} has schema version "
                f"{version}, not {migrations.latest_version()}; open it "
                "writable once (or with the nsight-lab that wrote it)"
            )
            raise StoreError(msg)

    def _open_sqlite(self, *, read_only: bool | None) -> None:
        path = self.path
        assert path is not None  # noqa: S101  (SQLite only)
        if read_only is None:
            read_only = not self._memory and lite.unwritable(path)
        self.read_only = read_only
        if read_only:
            opened = lite.open_read_only(path, migrations.latest_version())
            if isinstance(opened, sqlite3.Error):
                action = "open the store read-only"
                raise self._store_error(action, opened) from opened
            self._conn, self._uri = opened
            return
        try:
            conn = lite.open_for_writing(path)
            try:
                migrations.upgrade(conn, self._dialect, self.where, self._errors)
            except BaseException:
                conn.close()
                raise
        except sqlite3.OperationalError as exc:  # locked, read-only, I/O
            action = "open the store"
            raise self._store_error(action, exc) from exc
        except sqlite3.Error as exc:
            raise lite.not_a_store(path, exc) from exc
        self._conn = conn

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

    # -- transactions ----------------------------------------------------------------

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
            conn = self._open_reader()
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

    def _open_reader(self) -> Connection:
        if self._dialect.postgres:
            return pg.connect(self.location, read_only=self.read_only)
        if self._uri is not None:
            return lite.connect_uri(self._uri)
        assert self.path is not None  # noqa: S101  (SQLite)
        conn = lite.connect(self.path)
        conn.execute("PRAGMA foreign_keys = ON")
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
        if self.damaged is not None:
            msg = f"cannot {action}: {self.damaged}"
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
                if isinstance(conn, pg.PgConnection):
                    conn.notify()
                conn.execute("COMMIT")
            except BaseException as exc:
                with contextlib.suppress(*self._errors):
                    conn.execute("ROLLBACK")
                if isinstance(conn, pg.PgConnection):
                    conn.forget()
                if isinstance(exc, self._errors):
                    raise self._store_error(action, exc) from exc
                raise

    def _store_error(self, action: str, exc: BaseException) -> StoreError:
        """The one line for a driver's error: what failed, its cause and its fix.

        A damaged file, a full disk and the file size limit are named as such
        (:mod:`nsight_lab.store.health`): "check the file is writable" would send
        the user the wrong way. A damaged store is remembered: no later write of
        this store object touches it.
        """
        text = " ".join(str(exc).split())
        cause = health.cause_of(exc, None if self._memory else self.path)
        if cause == "damaged":
            self.damaged = health.fix_for(cause, self.where, self.path)
            shown = f"the store {self.where!r} is damaged ({text})"
            fix = self.damaged.partition("is damaged; ")[2] or self.damaged
            return StoreError(f"cannot {action}: {shown}; {fix}")
        if cause is not None:
            fix = health.fix_for(cause, self.where, self.path)
            return StoreError(f"cannot {action} at {self.where!r}: {fix} ({text})")
        if "locked" in text or "busy" in text:
            fix = (
                f"another process held it for over {lite.BUSY_TIMEOUT_S:.0f} s; "
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

    def check_integrity(self) -> None:
        """Refuse to go on with a damaged store: ``PRAGMA quick_check`` (SQLite).

        Called before a write that a user asked for by hand (``baseline set``), so a
        damaged file is said to be damaged rather than written into where its
        damaged pages happen not to be touched. PostgreSQL checks its own pages.
        A failed check is remembered (:attr:`damaged`): later writes refuse too.

        Raises:
            StoreError: The store is damaged (one line: what and how to recover).
        """
        if self.damaged is not None:
            raise StoreError(self.damaged)
        if self._dialect.postgres or self._memory:
            return
        with self._read("check the store") as conn:
            assert isinstance(conn, sqlite3.Connection)  # noqa: S101  (SQLite)
            problems = health.quick_check(conn)
        if problems:
            self.damaged = health.fix_for("damaged", self.where, self.path)
            shown = " ".join(problems[0].split())[:80]
            msg = (
                f"the store {self.where!r} is damaged (PRAGMA quick_check: {shown}); "
                + self.damaged.partition("is damaged; ")[2]
            )
            raise StoreError(msg)

    def _not_found(self, session_id: int) -> NotFoundError:
        msg = (
            f"no session with id {session_id!r} in the run store {self.where!r}; "
            f"{HISTORY_HINT}"
        )
        return NotFoundError(msg)
