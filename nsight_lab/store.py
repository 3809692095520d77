"""The run store: every session and run, persisted as it happens (SQLite, WAL).

:class:`RunStore` is the only place in nsight-lab that writes SQL. The writer (the
kernel) commits each batch of runs in one short transaction, so readers on other
connections (the Jupyter server, the CLI) see each run as soon as ``add_runs`` returns.
The schema is versioned with ``PRAGMA user_version``; the steps live in
:mod:`nsight_lab._migrations`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import socket
import sqlite3
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsight_lab import _migrations
from nsight_lab.errors import NotFoundError, OptionError, StoreError
from nsight_lab.paths import db_path
from nsight_lab.records import (
    SCHEMA_VERSION,
    SESSION_STATUSES,
    RunRecord,
    SessionInfo,
    SessionStatus,
    Telemetry,
    utc_now,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence
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
_SESSION_COLUMNS = (
    "id, name, notebook, device, host, pid, backend, backend_reason, options_json,"
    " configs_json, runs_planned, cell_source, notes_json, status, error, created_at,"
    " finished_at, schema_version"
)
_RUN_COLUMNS = (
    "id, session_id, config_index, config_json, run_index, annotation, duration_ns,"
    " backend, kernels_json, metrics_json, sm_clock_mhz, mem_clock_mhz, temperature_c,"
    " power_w, clock_event_reasons_json, throttled, thermal_wait_s, finished_at"
)
_FINAL_STATUSES = tuple(s for s in SESSION_STATUSES if s != "running")


class RunStore:
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

    # -- sessions --------------------------------------------------------------------

    def create_session(  # noqa: PLR0913  (one keyword per SessionInfo field)
        self,
        *,
        backend: str,
        backend_reason: str = "",
        name: str | None = None,
        notebook: str | None = None,
        device: str | None = None,
        host: str | None = None,
        pid: int | None = None,
        options: Mapping[str, Any] | None = None,
        configs: Sequence[Mapping[str, Any]] | None = None,
        runs_planned: int = 0,
        cell_source: str = "",
        notes: Sequence[str] | None = None,
    ) -> SessionInfo:
        """Create a session with status ``"running"`` and commit it at once.

        Args:
            backend: The backend id that measures the session.
            backend_reason: Why that backend was chosen (``auto``).
            name: A user label (``--name``).
            notebook: The notebook path, where known.
            device: The device name, e.g. ``"NVIDIA H200"``.
            host: The writer's host; default ``socket.gethostname()``.
            pid: The writer's process id; default ``os.getpid()``. Together with
                ``host`` it lets :meth:`mark_interrupted` tell a dead writer.
            options: The profile options, as JSON-able values.
            configs: The configs, one dict of parameter values each.
            runs_planned: Runs per config the plan asks for.
            cell_source: The profiled cell's source.
            notes: Notes to show with the session (e.g. the backend's caveats).

        Returns:
            The stored session.

        Raises:
            StoreError: The store is closed or the write failed.
        """
        host = self._host if host is None else host
        pid = os.getpid() if pid is None else pid
        token = _pid_token(pid) if host == self._host else None
        row = (
            name, notebook, device, host, pid, token, backend, backend_reason,
            json.dumps(dict(options or {}), default=str),
            json.dumps([dict(c) for c in configs or ()], default=str),
            runs_planned, cell_source, json.dumps(list(notes or ())), "running",
            utc_now(), SCHEMA_VERSION,
        )  # fmt: skip
        with self._write("create a session") as conn:
            cur = conn.execute(
                "INSERT INTO sessions (name, notebook, device, host, pid, pid_token,"
                " backend, backend_reason, options_json, configs_json, runs_planned,"
                " cell_source, notes_json, status, created_at, schema_version)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            session_id = int(cur.lastrowid or 0)
        return self.get_session(session_id)

    def get_session(self, session_id: int) -> SessionInfo:
        """Return one session.

        Raises:
            NotFoundError: No session has that id.
            StoreError: The store is closed or unreadable.
        """
        with self._read("read a session") as conn:
            row = conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?",  # noqa: S608
                (session_id,),
            ).fetchone()
        if row is None:
            raise self._not_found(session_id)
        return _session_from_row(row)

    def add_note(self, session_id: int, note: str) -> None:
        """Append a note to a session.

        Raises:
            NotFoundError: No session has that id.
            StoreError: The store is closed or the write failed.
        """
        with self._write("add a note") as conn:
            row = conn.execute(
                "SELECT notes_json FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            if row is None:
                raise self._not_found(session_id)
            notes = [*json.loads(row[0]), note]
            conn.execute(
                "UPDATE sessions SET notes_json = ? WHERE id = ?",
                (json.dumps(notes), session_id),
            )

    def finish_session(
        self, session_id: int, status: SessionStatus, error: str | None = None
    ) -> None:
        """Set a session's final status (and error) and its ``finished_at``.

        Args:
            session_id: The session.
            status: ``"completed"``, ``"failed"`` or ``"interrupted"``.
            error: What went wrong, for a failed or interrupted session.

        Raises:
            OptionError: ``status`` is not a final status.
            NotFoundError: No session has that id.
            StoreError: The store is closed or the write failed.
        """
        if status not in _FINAL_STATUSES:
            msg = (
                f"cannot finish session {session_id} with status {status!r}; "
                f"expected one of {', '.join(map(repr, _FINAL_STATUSES))}"
            )
            raise OptionError(msg)
        with self._write("finish a session") as conn:
            cur = conn.execute(
                "UPDATE sessions SET status = ?, error = ?, finished_at = ?"
                " WHERE id = ?",
                (status, error, utc_now(), session_id),
            )
            if cur.rowcount == 0:
                raise self._not_found(session_id)

    def delete_session(self, session_id: int) -> None:
        """Delete a session and all its runs.

        Raises:
            NotFoundError: No session has that id.
            StoreError: The store is closed or the write failed.
        """
        with self._write("delete a session") as conn:
            cur = conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            if cur.rowcount == 0:
                raise self._not_found(session_id)

    def list_sessions(  # noqa: PLR0913  (one keyword per filter)
        self,
        *,
        notebook: str | None = None,
        annotation: str | None = None,
        device: str | None = None,
        backend: str | None = None,
        status: SessionStatus | None = None,
        since: str | None = None,
        until: str | None = None,
        text: str | None = None,
        limit: int | None = 50,
        offset: int = 0,
    ) -> list[SessionInfo]:
        """Return sessions newest first, filtered and paged. Never reads ``runs``.

        Args:
            notebook: Only sessions of this notebook path.
            annotation: Only sessions with a region of exactly this name.
            device: Only sessions on this device name.
            backend: Only sessions measured by this backend id.
            status: Only sessions with this status.
            since: Only sessions created at or after this ISO-8601 time (naive = UTC).
            until: Only sessions created before this ISO-8601 time (naive = UTC).
            text: Case-insensitive substring of name, notebook, cell source or a region.
            limit: At most this many sessions; ``None`` for all.
            offset: Skip this many matching sessions first.

        Returns:
            The matching sessions, newest first.

        Raises:
            OptionError: A filter value is malformed (time, status, limit or offset).
            StoreError: The store is closed or unreadable.
        """
        where, params = _session_filter(
            notebook=notebook, annotation=annotation, device=device, backend=backend,
            status=status, since=since, until=until, text=text,
        )  # fmt: skip
        if limit is not None and limit < 0:
            msg = f"invalid limit {limit!r}; expected a count >= 0 or None for all"
            raise OptionError(msg)
        if offset < 0:
            msg = f"invalid offset {offset!r}; expected a count >= 0"
            raise OptionError(msg)
        sql = (
            f"SELECT {_SESSION_COLUMNS} FROM sessions{where}"  # noqa: S608  (constant SQL)
            " ORDER BY id DESC LIMIT ? OFFSET ?"
        )
        with self._read("list sessions") as conn:
            rows = conn.execute(sql, (*params, -1 if limit is None else limit, offset))
            return [_session_from_row(r) for r in rows.fetchall()]

    def count_sessions(  # noqa: PLR0913  (same filters as list_sessions)
        self,
        *,
        notebook: str | None = None,
        annotation: str | None = None,
        device: str | None = None,
        backend: str | None = None,
        status: SessionStatus | None = None,
        since: str | None = None,
        until: str | None = None,
        text: str | None = None,
    ) -> int:
        """Return how many sessions :meth:`list_sessions` would match without paging.

        Raises:
            OptionError: A filter value is malformed.
            StoreError: The store is closed or unreadable.
        """
        where, params = _session_filter(
            notebook=notebook, annotation=annotation, device=device, backend=backend,
            status=status, since=since, until=until, text=text,
        )  # fmt: skip
        with self._read("count sessions") as conn:
            row = conn.execute(f"SELECT count(*) FROM sessions{where}", params)  # noqa: S608  (constant SQL)
            return int(row.fetchone()[0])

    def run_counts(self, session_ids: Sequence[int]) -> dict[int, int]:
        """Return the number of stored runs of each known session (cheap: no scan).

        Raises:
            StoreError: The store is closed or unreadable.
        """
        ids = list(dict.fromkeys(session_ids))
        if not ids:
            return {}
        marks = ", ".join("?" * len(ids))
        with self._read("count runs") as conn:
            rows = conn.execute(
                f"SELECT id, run_count FROM sessions WHERE id IN ({marks})",  # noqa: S608
                ids,
            ).fetchall()
        return {int(i): int(n) for i, n in rows}

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

    # -- runs ------------------------------------------------------------------------

    def add_runs(self, records: Sequence[RunRecord]) -> list[int]:
        """Store runs in one short transaction, committed before this returns.

        Also keeps each session's run count and region names up to date in the same
        transaction.

        Args:
            records: The runs, in order; they may belong to several sessions.

        Returns:
            The new run ids, in the order of ``records``.

        Raises:
            NotFoundError: A record names a session that is not in the store; nothing
                of the batch is stored.
            StoreError: The store is closed or the write failed.
        """
        if not records:
            return []
        rows = [_run_to_row(r) for r in records]
        per_session: dict[int, set[str]] = {}
        counts: dict[int, int] = {}
        for r in records:
            per_session.setdefault(r.session_id, set()).add(r.annotation)
            counts[r.session_id] = counts.get(r.session_id, 0) + 1
        ids: list[int] = []
        with self._write("add runs") as conn:
            for sid in per_session:
                if conn.execute(
                    "SELECT 1 FROM sessions WHERE id = ?", (sid,)
                ).fetchone():
                    continue
                msg = (
                    f"cannot add runs to session {sid!r}: no such session in the run "
                    f"store {str(self.path)!r}; create it with create_session() first"
                )
                raise NotFoundError(msg)
            for row in rows:
                cur = conn.execute(
                    f"INSERT INTO runs ({_RUN_COLUMNS.partition(', ')[2]}) VALUES"  # noqa: S608  (constant SQL)
                    " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
                ids.append(int(cur.lastrowid or 0))
            for sid, names in per_session.items():
                new = sum(
                    conn.execute(
                        "INSERT OR IGNORE INTO session_annotations VALUES (?, ?)",
                        (sid, name),
                    ).rowcount
                    for name in sorted(names)
                )
                annotations_sql = (
                    ", annotations = (SELECT group_concat(annotation, char(10)) FROM"
                    " (SELECT annotation FROM session_annotations"
                    " WHERE session_id = :sid ORDER BY annotation))"
                    if new
                    else ""
                )
                conn.execute(
                    "UPDATE sessions SET run_count = run_count + :added"  # noqa: S608  (constant SQL)
                    f"{annotations_sql} WHERE id = :sid",
                    {"sid": sid, "added": counts[sid]},
                )
        return ids

    def runs_with_ids(
        self, session_id: int, *, after_id: int = 0, limit: int | None = None
    ) -> list[tuple[int, RunRecord]]:
        """Return ``(run id, record)`` pairs of a session with ids above ``after_id``.

        Args:
            session_id: The session.
            after_id: Only runs with a larger id (a poller's last seen id).
            limit: At most this many runs; ``None`` for all.

        Returns:
            The pairs, ordered by run id (the order they were stored in).

        Raises:
            NotFoundError: No session has that id.
            StoreError: The store is closed or unreadable.
        """
        with self._read("read runs") as conn:
            rows = conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs WHERE session_id = ? AND id > ?"  # noqa: S608  (constant SQL)
                " ORDER BY id LIMIT ?",
                (session_id, after_id, -1 if limit is None else limit),
            ).fetchall()
            if (
                not rows
                and not conn.execute(
                    "SELECT 1 FROM sessions WHERE id = ?", (session_id,)
                ).fetchone()
            ):
                raise self._not_found(session_id)
        return [(int(row[0]), _run_from_row(row)) for row in rows]

    def runs(
        self, session_id: int, *, after_id: int = 0, limit: int | None = None
    ) -> list[RunRecord]:
        """Return a session's runs with ids above ``after_id``, in the order stored.

        Raises:
            NotFoundError: No session has that id.
            StoreError: The store is closed or unreadable.
        """
        pairs = self.runs_with_ids(session_id, after_id=after_id, limit=limit)
        return [record for _, record in pairs]

    def last_run_id(self, session_id: int | None = None) -> int:
        """Return the largest run id (of one session, or of all); 0 when none.

        Raises:
            StoreError: The store is closed or unreadable.
        """
        with self._read("read the last run id") as conn:
            if session_id is None:
                row = conn.execute("SELECT max(id) FROM runs").fetchone()
            else:
                row = conn.execute(
                    "SELECT max(id) FROM runs WHERE session_id = ?", (session_id,)
                ).fetchone()
        return int(row[0] or 0)

    def latest_change(self) -> tuple[int, int]:
        """Return ``(largest session id, largest run id)``, each 0 when none.

        Two cheap index lookups, for pollers that push new sessions and runs.

        Raises:
            StoreError: The store is closed or unreadable.
        """
        with self._read("read the latest change") as conn:
            row = conn.execute(
                "SELECT (SELECT max(id) FROM sessions), (SELECT max(id) FROM runs)"
            ).fetchone()
        return int(row[0] or 0), int(row[1] or 0)

    def change_seq(self) -> int:
        """Return a counter that every write bumps (statuses, notes and deletes too).

        Raises:
            StoreError: The store is closed or unreadable.
        """
        with self._read("read the change counter") as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'change_seq'")
            return int(row.fetchone()[0])

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


# -- rows ----------------------------------------------------------------------------


def _session_from_row(row: Sequence[Any]) -> SessionInfo:
    (sid, name, notebook, device, host, pid, backend, backend_reason, options_json,
     configs_json, runs_planned, cell_source, notes_json, status, error, created_at,
     finished_at, schema_version) = row  # fmt: skip
    return SessionInfo(
        id=int(sid),
        status=status,
        backend=backend,
        created_at=created_at,
        name=name,
        notebook=notebook,
        device=device,
        host=host,
        pid=pid,
        backend_reason=backend_reason,
        options=json.loads(options_json),
        configs=json.loads(configs_json),
        runs_planned=int(runs_planned),
        cell_source=cell_source,
        notes=json.loads(notes_json),
        error=error,
        finished_at=finished_at,
        schema_version=int(schema_version),
    )


def _run_to_row(r: RunRecord) -> tuple[Any, ...]:
    t = r.telemetry
    return (
        r.session_id, r.config_index, json.dumps(dict(r.config), default=str),
        r.run_index, r.annotation, r.duration_ns, r.backend,
        json.dumps(list(r.kernels)), json.dumps(dict(r.metrics)), t.sm_clock_mhz,
        t.mem_clock_mhz, t.temperature_c, t.power_w,
        json.dumps(list(t.clock_event_reasons)), int(t.throttled), r.thermal_wait_s,
        r.finished_at,
    )  # fmt: skip


def _run_from_row(row: Sequence[Any]) -> RunRecord:
    (_, sid, config_index, config_json, run_index, annotation, duration_ns, backend,
     kernels_json, metrics_json, sm_clock, mem_clock, temperature, power, reasons_json,
     throttled, thermal_wait_s, finished_at) = row  # fmt: skip
    return RunRecord(
        session_id=int(sid),
        config_index=int(config_index),
        config=json.loads(config_json),
        run_index=int(run_index),
        annotation=annotation,
        # SQLite stores NaN as NULL.
        duration_ns=float("nan") if duration_ns is None else float(duration_ns),
        backend=backend,
        kernels=tuple(json.loads(kernels_json)),
        metrics=json.loads(metrics_json),
        telemetry=Telemetry(
            sm_clock_mhz=sm_clock,
            mem_clock_mhz=mem_clock,
            temperature_c=temperature,
            power_w=power,
            clock_event_reasons=tuple(json.loads(reasons_json)),
            throttled=bool(throttled),
        ),
        thermal_wait_s=float(thermal_wait_s),
        finished_at=finished_at,
    )


def _session_filter(  # noqa: PLR0913
    *,
    notebook: str | None,
    annotation: str | None,
    device: str | None,
    backend: str | None,
    status: str | None,
    since: str | None,
    until: str | None,
    text: str | None,
) -> tuple[str, list[Any]]:
    """Return the ``WHERE`` clause (or ``""``) and its parameters for the filters."""
    if status is not None and status not in SESSION_STATUSES:
        msg = (
            f"invalid status filter {status!r}; "
            f"expected one of {', '.join(map(repr, SESSION_STATUSES))}"
        )
        raise OptionError(msg)
    clauses: list[str] = []
    params: list[Any] = []
    for column, value in (
        ("notebook", notebook), ("device", device), ("backend", backend),
        ("status", status),
    ):  # fmt: skip
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    if annotation is not None:
        clauses.append(
            "id IN (SELECT session_id FROM session_annotations WHERE annotation = ?)"
        )
        params.append(annotation)
    if since is not None:
        clauses.append("created_at >= ?")
        params.append(_iso_utc(since, "since"))
    if until is not None:
        clauses.append("created_at < ?")
        params.append(_iso_utc(until, "until"))
    if text:
        pattern = (
            "%"
            + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            + "%"
        )
        clauses.append(
            "(" + " OR ".join(
                f"{c} LIKE ? ESCAPE '\\'"
                for c in ("name", "notebook", "cell_source", "annotations")
            ) + ")"
        )  # fmt: skip
        params.extend([pattern] * 4)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def _iso_utc(value: str, name: str) -> str:
    """Return ``value`` as the store's timestamp format (ISO-8601 UTC, microseconds)."""
    try:
        when = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        msg = (
            f"invalid {name} time {value!r}; expected an ISO-8601 date or time, "
            "e.g. '2025-06-01' or '2025-06-01T12:00:00+00:00'"
        )
        raise OptionError(msg) from exc
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return when.astimezone(dt.timezone.utc).isoformat(timespec="microseconds")


# -- writer liveness -----------------------------------------------------------------


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


def _pid_token(pid: int) -> str | None:
    """Return ``"<boot id>:<start time>"`` of a local Linux process, else ``None``."""
    if not _has_proc():
        return None
    stat = _read_proc_stat(pid)
    return None if stat is None else f"{_boot_id()}:{stat[1]}"


def _writer_alive(pid: int | None, token: str | None) -> bool:
    """Tell whether a local writer process still runs; ``True`` when it cannot tell."""
    if pid is None or os.name != "posix":
        return True  # on Windows os.kill(pid, 0) would terminate the process
    if _has_proc():
        stat = _read_proc_stat(pid)
        alive = stat is not None and stat[0] not in {"Z", "X", "x"}
        return alive and (token is None or token == _pid_token(pid))
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: alive, owned by another user
        return True
    return True
