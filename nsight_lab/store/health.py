"""What a failed store operation means, and the store's own check (``doctor``).

A driver's error text names the symptom, not the fix: "database disk image is
malformed" is a damaged file (no permission would help), "disk I/O error" under
``ulimit -f`` or "database or disk is full" is a full disk. :func:`cause_of` tells
these apart (SQLite's result codes, PostgreSQL's SQLSTATEs, and the disk's free space
and this process's file size limit where SQLite only says "I/O error"), and
:func:`fix_for` says what to do. :func:`check_store` is what ``doctor`` asks of a
store: ``PRAGMA quick_check``, the schema version and the space left, read without
writing a byte (a damaged file is opened read-only and never upgraded).
"""

from __future__ import annotations

import contextlib
import resource
import shutil
import sqlite3
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from pathlib import Path

Cause = Literal["damaged", "full", "file_size"]

SQLITE_IOERR = 10
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
PG_DISK_FULL = "53100"
PG_DAMAGED = frozenset({"XX001", "XX002"})  # data_corrupted, index_corrupted
LOW_SPACE_BYTES = 64 * 1024**2
"""Less free space than this on the store's disk is a full disk (and a doctor warning):
SQLite needs room for its WAL and a checkpoint, not just the next page."""
_DAMAGED_TEXTS = ("malformed", "database corruption")
"""SQLITE_NOTADB ("file is not a database") is not among them: a file that never was
a store gets :func:`~nsight_lab.store.sqlite_files.not_a_store`'s message."""
_QUICK_CHECK_SHOWN = 3


def cause_of(exc: BaseException, path: Path | None) -> Cause | None:
    """Why a store operation failed, where it is one :func:`fix_for` knows.

    ``path`` is the SQLite file (``None`` for PostgreSQL): an I/O error is a full
    disk when its disk has less than :data:`LOW_SPACE_BYTES` free, or the file size
    limit when the file (or its WAL) reached it.
    """
    text = str(exc).lower()
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    sqlstate = getattr(exc, "sqlstate", None)
    if (
        primary == SQLITE_CORRUPT
        or sqlstate in PG_DAMAGED
        or any(t in text for t in _DAMAGED_TEXTS)
    ):
        return "damaged"
    if primary == SQLITE_FULL or sqlstate == PG_DISK_FULL or "disk is full" in text:
        return "full"
    if path is not None and (primary == SQLITE_IOERR or "disk i/o error" in text):
        if at_file_size_limit(path):
            return "file_size"
        free = free_bytes(path.parent)
        if free is not None and free < LOW_SPACE_BYTES:
            return "full"
    return None


def fix_for(cause: Cause, where: str, path: Path | None) -> str:
    """The one-line cause and fix of a failure of ``cause`` at ``where``."""
    if cause == "damaged":
        if path is None:
            return (
                f"the store {where!r} reports damaged data; restore the database "
                "from a backup (REINDEX where only an index is damaged)"
            )
        return (
            f"the store {str(path)!r} is damaged; nothing more is written to it; "
            f"recover it: sqlite3 {str(path)!r} .recover | sqlite3 new.sqlite, then "
            "move it aside (nsight-lab doctor checks it)"
        )
    if path is None:
        return (
            f"no space left on the PostgreSQL server's disk of {where!r}; "
            "free space there"
        )
    folder = str(path.parent)
    if cause == "file_size":
        limit = file_size_limit()
        return (
            f"no space left on {folder!r} within this process's file size limit "
            f"(ulimit -f: {limit} bytes); raise it (ulimit -f unlimited) and retry"
        )
    free = free_bytes(path.parent)
    shown = "" if free is None else f" ({_size(free)} free)"
    return (
        f"no space left on the disk of {folder!r}{shown}; free space there, or set "
        "NSIGHT_LAB_HOME to a folder on another disk"
    )


def free_bytes(folder: Path) -> int | None:
    """The bytes this user may still write on ``folder``'s disk (``None``: unknown)."""
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def file_size_limit() -> int | None:
    """This process's file size limit in bytes (``ulimit -f``), ``None`` if none."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def at_file_size_limit(path: Path) -> bool:
    """Tell whether the store file or its WAL is within a page of the size limit."""
    limit = file_size_limit()
    if limit is None:
        return False
    for file in (path, path.with_name(path.name + "-wal")):
        with contextlib.suppress(OSError):
            if file.stat().st_size + 65536 >= limit:
                return True
    return False


def _size(count: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


Status = Literal["ok", "warn", "missing", "error"]


@dataclass(frozen=True)
class Finding:
    """One thing ``doctor`` found about the store (as its :class:`Check`)."""

    name: str
    status: Status
    detail: str
    hint: str = ""


def quick_check(conn: sqlite3.Connection) -> list[str]:
    """``PRAGMA quick_check``'s complaints (empty when the file is sound).

    Raises:
        sqlite3.Error: The file cannot even be walked (not a database, damaged).
    """
    rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
    return [] if rows == ["ok"] else rows


def check_sqlite(path: Path, latest: int) -> list[Finding]:
    """``doctor``'s findings on the SQLite store at ``path``, read-only.

    Opened ``mode=ro`` (a damaged file must not be upgraded or checkpointed into),
    it is walked by ``PRAGMA quick_check`` (every page and index entry, not the
    index-to-table cross check of ``integrity_check``), its schema version read, and
    the space left on its disk and under ``ulimit -f`` said.
    """
    if not path.exists():
        return [
            Finding(
                "store",
                "ok",
                f"no store yet at {str(path)!r}; the first %%nsight cell creates it",
            ),
            _space(path),
        ]
    if not path.is_file():
        return [
            Finding(
                "store",
                "error",
                f"{str(path)!r} is not a regular file",
                "set NSIGHT_LAB_HOME to another folder, or move it aside",
            )
        ]
    found = [_integrity(path, latest), _space(path)]
    return [f for f in found if f is not None]


def _integrity(path: Path, latest: int) -> Finding:
    base = "file:" + urllib.parse.quote(str(path.resolve()))
    try:
        conn = sqlite3.connect(base + "?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error as exc:
        return Finding(
            "store", "error", f"{str(path)!r} cannot be opened: {exc}",
            "check its permissions",
        )  # fmt: skip
    try:
        problems = quick_check(conn)
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.Error as exc:
        problems, version = [str(exc)], -1
    finally:
        conn.close()
    if problems:
        shown = "; ".join(problems[:_QUICK_CHECK_SHOWN])
        more = len(problems) - _QUICK_CHECK_SHOWN
        extra = f" (and {more} more)" if more > 0 else ""
        return Finding(
            "store",
            "error",
            f"{str(path)!r} is damaged: PRAGMA quick_check: {shown}{extra}",
            fix_for("damaged", str(path), path),
        )
    size = _size(path.stat().st_size)
    if version == latest:
        return Finding(
            "store", "ok", f"{str(path)!r} ({size}): quick_check ok, schema {version}"
        )
    if version < latest:
        return Finding(
            "store",
            "warn",
            f"{str(path)!r} ({size}): quick_check ok, schema {version} (this "
            f"nsight-lab writes {latest})",
            "it is upgraded the next time nsight-lab writes to it; keep a copy first "
            "if an older nsight-lab still reads it",
        )
    return Finding(
        "store",
        "error",
        f"{str(path)!r} ({size}): schema {version}, newer than this nsight-lab's "
        f"{latest}",
        "upgrade nsight-lab (pip install -U nsight-lab)",
    )


def _space(path: Path) -> Finding:
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    free = free_bytes(folder)
    limit = file_size_limit()
    limit_text = "" if limit is None else f"; file size limit {_size(limit)}"
    if free is None:
        return Finding(
            "store space", "warn", f"cannot read the free space of {str(folder)!r}"
        )
    detail = f"{_size(free)} free on the disk of {str(folder)!r}{limit_text}"
    if free < LOW_SPACE_BYTES:
        return Finding(
            "store space",
            "error",
            detail,
            fix_for("full", str(path), path).partition("; ")[2],
        )
    if (
        limit is not None
        and path.is_file()
        and path.stat().st_size + LOW_SPACE_BYTES > limit
    ):
        return Finding(
            "store space",
            "warn",
            detail,
            "the store is near this process's file size limit: ulimit -f unlimited",
        )
    return Finding("store space", "ok", detail)


def check_postgres(where: str, version: int, latest: int) -> list[Finding]:
    """``doctor``'s findings on a PostgreSQL store: reachable, its schema version.

    PostgreSQL checks its own pages (``data_checksums``); a damaged one is reported
    by the statement that reads it (:func:`cause_of`).
    """
    status: Status = "ok" if version == latest else "warn"
    hint = (
        ""
        if version == latest
        else "it is upgraded when nsight-lab next opens it writable"
    )
    return [Finding("store", status, f"PostgreSQL {where}: schema {version}", hint)]
