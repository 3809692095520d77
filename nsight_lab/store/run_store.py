"""The run store: every session and run, persisted as it happens (SQLite or PostgreSQL).

:class:`RunStore` is the only place in nsight-lab that writes SQL. It is made of
parts, one concept each: its connections and transactions
(:mod:`nsight_lab.store.connection`, on a SQLite file through
:mod:`nsight_lab.store.sqlite_files` or a PostgreSQL database through
:mod:`nsight_lab.store.postgres`), sessions (:mod:`nsight_lab.store.sessions`),
writers' liveness (:mod:`nsight_lab.store.liveness`), adding runs
(:mod:`nsight_lab.store.run_writes`), reading them (:mod:`nsight_lab.store.runs`),
baselines (:mod:`nsight_lab.store.baselines`), the session list's one read
(:mod:`nsight_lab.store.listing`); row conversion and filter SQL in
:mod:`nsight_lab.store.rows`. The writer (the kernel) commits each batch of runs in
one short transaction, so readers on other connections (the Jupyter server, the CLI)
see each run as soon as ``add_runs`` returns. The schema is versioned with ``PRAGMA
user_version`` (on PostgreSQL, the ``nsight_lab_schema`` table); the steps live in
:mod:`nsight_lab.store.migrations`.

Two engines behind this one class: a SQLite file (WAL), the embedded default, and a
PostgreSQL database when the location is a ``postgresql://`` URL, as
``$NSIGHT_LAB_STORE`` gives it. The SQL is written once and translated
(:mod:`nsight_lab.store.dialect`).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from nsight_lab.contract.records import utc_now
from nsight_lab.errors import StoreError
from nsight_lab.store.baselines import BaselineQueries
from nsight_lab.store.listing import ListingQueries
from nsight_lab.store.liveness import INTERRUPTED_ERROR
from nsight_lab.store.rows import SESSION_FILTERS
from nsight_lab.store.run_writes import RunWrites
from nsight_lab.store.runs import RunQueries
from nsight_lab.store.sessions import SessionQueries, SessionRunningError

if TYPE_CHECKING:
    import os

__all__ = ["INTERRUPTED_ERROR", "SESSION_FILTERS", "RunStore", "SessionRunningError"]

logger = logging.getLogger(__name__)


class RunStore(SessionQueries, RunWrites, RunQueries, BaselineQueries, ListingQueries):
    """Sessions and their per-run records in one SQLite file or PostgreSQL database.

    Its connections (one for writes, one per reading thread) are
    :class:`~nsight_lab.store.connection.StoreBase`'s. A store whose
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
        """Open the store at ``path``, then mark its orphaned sessions interrupted.

        A session still ``running`` whose writer process is gone becomes
        ``interrupted``; on a read-only store that is left undone (logged).

        Args:
            path: The SQLite file or a ``postgresql://`` URL; default
                :func:`nsight_lab.paths.store_location`.
            read_only: ``True`` opens an existing store for reading only; ``None``
                (default) does so when the file exists but it or its directory is
                not writable (a read-only mount, another user's store); ``False``
                always opens it for writing. On PostgreSQL ``None`` means writable.
        """
        super().__init__(path, read_only=read_only)
        try:
            self.mark_interrupted()
        except StoreError as exc:  # e.g. a read-only store: reading still works
            logger.warning("[nsight-lab] %s", exc)

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
