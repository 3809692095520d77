"""The SQLite engine of the run store: opening its file for writing or reading only.

A writable store is one WAL file with a busy timeout; a store that cannot be written
(a read-only mount, another user's file) is opened ``mode=ro``, else as ``immutable``
where not even its ``-shm`` file can be made. Every message is one line that says
what to do. :class:`~nsight_lab.store.connection.StoreBase` calls these.
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse
from typing import TYPE_CHECKING

from nsight_lab.errors import StoreError
from nsight_lab.store import health

if TYPE_CHECKING:
    from pathlib import Path

BUSY_TIMEOUT_S = 30.0
"""How long a statement waits for another process's write lock (read at each open)."""
IN_MEMORY = ":memory:"
"""The location of a store that lives in memory only (tests, an empty server)."""


def connect(target: Path | str, *, uri: bool = False) -> sqlite3.Connection:
    """Open a file, ``:memory:`` or (``uri``) a ``file:`` URI, autocommit, busy timeout.

    Raises:
        sqlite3.Error: It cannot be opened.
    """
    conn = sqlite3.connect(
        target,
        uri=uri,
        timeout=BUSY_TIMEOUT_S,
        isolation_level=None,  # autocommit; transactions are explicit
        check_same_thread=False,
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def connect_uri(uri: str) -> sqlite3.Connection:
    """Open a ``file:`` URI (``mode=ro``, ``immutable=1``): :func:`connect`."""
    return connect(uri, uri=True)


def open_for_writing(path: Path) -> sqlite3.Connection:
    """Create the store's directory and open its file: WAL, foreign keys on.

    Raises:
        StoreError: The directory cannot be made, or the file cannot be opened
            (one line naming the path and what to do).
        sqlite3.Error: A PRAGMA failed (the caller tells a locked or unreadable
            file apart).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        msg = (
            f"cannot create the directory of the run store {str(path)!r}: "
            f"{exc.strerror or exc}; set NSIGHT_LAB_HOME to a writable directory"
        )
        raise StoreError(msg) from exc
    try:
        conn = connect(path)
    except sqlite3.Error as exc:
        msg = (
            f"cannot open the run store {str(path)!r}: {exc}; "
            "check the path and its permissions, or set NSIGHT_LAB_HOME"
        )
        raise StoreError(msg) from exc
    try:
        conn.execute("PRAGMA journal_mode = WAL").fetchall()
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        conn.close()
        raise
    return conn


def open_read_only(
    path: Path, version: int
) -> tuple[sqlite3.Connection, str] | sqlite3.Error:
    """Open an existing store for reading: ``mode=ro``, else ``immutable=1``.

    A WAL database opened read-only still needs its ``-shm`` and ``-wal`` files;
    where they cannot be created (a read-only directory) the file is opened as
    immutable: no locks, no WAL, the snapshot the file holds.

    Args:
        path: The store's file.
        version: The schema version it must have (it cannot be upgraded).

    Returns:
        The connection and the URI it was opened with, or the last error when
        neither way opens it.

    Raises:
        StoreError: No such file, not a store, or another schema version.
    """
    if not path.is_file():
        msg = (
            f"cannot open the run store {str(path)!r} read-only: no such "
            "file; profile a cell with %%nsight first, or set NSIGHT_LAB_HOME"
        )
        raise StoreError(msg)
    base = "file:" + urllib.parse.quote(str(path.resolve()))
    error: sqlite3.Error = sqlite3.OperationalError("not opened")
    for query in ("?mode=ro", "?mode=ro&immutable=1"):
        try:
            conn = connect_uri(base + query)
        except sqlite3.Error as exc:
            error = exc
            continue
        try:
            found = int(conn.execute("PRAGMA user_version").fetchone()[0])
            conn.execute("SELECT count(*) FROM sessions").fetchone()
        except sqlite3.Error as exc:
            conn.close()
            error = exc
            if "no such table" in str(exc) or not isinstance(
                exc, sqlite3.OperationalError
            ):
                raise not_a_store(path, exc) from exc
            continue
        if found != version:
            conn.close()
            msg = (
                f"the read-only run store {str(path)!r} has schema version "
                f"{found}, not {version}, and cannot be upgraded in place; open it "
                "with the nsight-lab that wrote it, or copy it to a writable directory"
            )
            raise StoreError(msg)
        return conn, base + query
    return error


def not_a_store(path: Path | None, exc: sqlite3.Error) -> StoreError:
    """The error for a file that is not an nsight-lab store, or is a damaged one."""
    if path is not None and health.cause_of(exc, None) == "damaged":
        text = " ".join(str(exc).split())
        fix = health.fix_for("damaged", str(path), path).partition("is damaged; ")[2]
        return StoreError(f"the store {str(path)!r} is damaged ({text}); {fix}")
    msg = (
        f"{str(path)!r} is not a readable nsight-lab run store ({exc}); "
        "move the file aside and nsight-lab will create a new store there, "
        "or set NSIGHT_LAB_HOME to another directory"
    )
    return StoreError(msg)


def unwritable(path: Path) -> bool:
    """Tell whether an existing store file, or its directory, cannot be written.

    ``os.access`` answers for the real user; on a read-only filesystem it refuses
    even root (``EROFS``).
    """
    if not path.is_file():
        return False
    return not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK))
