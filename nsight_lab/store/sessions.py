"""The session methods of :class:`~nsight_lab.store.run_store.RunStore` (a mixin).

Create, read, annotate, finish, delete, list and count sessions. Its transactions
and error helpers come from :class:`~nsight_lab.store.connection.StoreBase`.
"""

from __future__ import annotations

import getpass
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nsight_lab.contract.records import SCHEMA_VERSION, SESSION_STATUSES, utc_now
from nsight_lab.errors import QueryError, StoreError
from nsight_lab.store.baselines import StoredVerdict, verdict_from_row
from nsight_lab.store.listing import total_params, total_sql
from nsight_lab.store.liveness import Liveness, pid_token
from nsight_lab.store.migrations import new_session_uuid
from nsight_lab.store.rows import (
    RUN_COLUMNS,
    SESSION_COLUMNS,
    check_page,
    in_list,
    run_from_row,
    session_filter,
    session_from_row,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from typing_extensions import Unpack

    from nsight_lab.contract.records import RunRecord, SessionInfo, SessionStatus
    from nsight_lab.store.rows import SessionFilters

_FINAL_STATUSES = tuple(s for s in SESSION_STATUSES if s != "running")
_INSERT_SESSION_SQL = (
    "INSERT INTO sessions (name, notebook, device, host, pid, pid_token,"
    " backend, backend_reason, options_json, configs_json, runs_planned,"
    " cell_source, notes_json, status, created_at, schema_version, user_name,"
    " uuid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


_STATE_SQL = (
    "SELECT "  # noqa: S608  (constant SQL)
    + ", ".join(f"s.{c.strip()}" for c in SESSION_COLUMNS.split(","))
    + ", s.run_count, s.runs_done, v.session_id, v.baseline_name,"
    " v.baseline_session_id, v.verdict, v.threshold, v.computed_at, "
    + ", ".join(f"r.{c.strip()}" for c in RUN_COLUMNS.split(","))
    + " FROM sessions AS s"
    " LEFT JOIN session_verdicts AS v ON v.session_id = s.id"
    " LEFT JOIN runs AS r ON r.id ="
    " (SELECT id FROM runs WHERE session_id = s.id ORDER BY id DESC LIMIT 1)"
    " WHERE s.id = ?"
)
_SESSION_WIDTH = len(SESSION_COLUMNS.split(","))


@dataclass(frozen=True)
class SessionState:
    """A session and what its page shows beside it, read in one query."""

    session: SessionInfo
    run_count: int
    """Records stored (one per region per run)."""
    runs_done: int
    """Complete runs (distinct config and run index)."""
    verdict: StoredVerdict | None
    newest_run: tuple[int, RunRecord] | None
    """The newest stored record and its id (a live refresh's ``tail=1``)."""

    @property
    def newest(self) -> tuple[int, int] | None:
        """``(config_index, run_index)`` of the newest stored run; ``None``: no run."""
        if self.newest_run is None:
            return None
        record = self.newest_run[1]
        return record.config_index, record.run_index


class SessionRunningError(StoreError):
    """A session still being written (its writer process is alive) was to be deleted."""


class SessionQueries(Liveness):
    """Session methods of :class:`~nsight_lab.store.run_store.RunStore`."""

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
        user: str | None = None,
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
                ``host`` it lets :meth:`mark_interrupted` tell a dead writer (on
                SQLite; on PostgreSQL this store's connection stands for the writer).
            user: The writer's login name; default ``getpass.getuser()``.
            options: The profile options, as JSON-able values.
            configs: The configs, one dict of parameter values each.
            runs_planned: Measured runs the plan asks for over all configs.
            cell_source: The profiled cell's source.
            notes: Notes to show with the session (e.g. the backend's caveats).

        Returns:
            The stored session.

        Raises:
            StoreError: The store is closed or the write failed.
        """
        host = self._host if host is None else host
        pid = os.getpid() if pid is None else pid
        token = pid_token(pid) if host == self._host else None
        user = _login() if user is None else user
        row = (
            name, notebook, device, host, pid, token, backend, backend_reason,
            json.dumps(dict(options or {}), default=str),
            json.dumps([dict(c) for c in configs or ()], default=str),
            runs_planned, cell_source, json.dumps(list(notes or ())), "running",
            utc_now(), SCHEMA_VERSION, user, new_session_uuid(),
        )  # fmt: skip
        return self.get_session(self._insert_session(row))

    def _insert_session(self, row: Sequence[Any]) -> int:
        """Commit a new session's row (taking its writer lock on PostgreSQL); its id."""
        sql = _INSERT_SESSION_SQL
        with self._write("create a session") as conn:
            if self._dialect.postgres:
                session_id = int(conn.execute(sql + " RETURNING id", row).fetchone()[0])
            else:
                cur = conn.execute(sql, row)
                session_id = int(getattr(cur, "lastrowid", 0) or 0)
            self._hold_session(conn, session_id)
        return session_id

    def get_session(self, session_id: int) -> SessionInfo:
        """Return one session.

        Raises:
            NotFoundError: No session has that id.
            StoreError: The store is closed or unreadable.
        """
        with self._read("read a session") as conn:
            row = conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?",  # noqa: S608
                (session_id,),
            ).fetchone()
        if row is None:
            raise self._not_found(session_id)
        return session_from_row(row)

    def session_state(self, session_id: int) -> SessionState:
        """Return a session with its counts, kept verdict and newest run.

        What ``get_session``, ``run_counts``, ``session_verdicts``, ``runs_done``
        and ``runs_tail(limit=1)`` read, in one round trip: a live refresh asks
        it five times a second per open panel (issue 32: on PostgreSQL each round
        trip waits its turn for the GIL behind the view model's follower).

        Raises:
            NotFoundError: No session has that id.
            StoreError: The store is closed or unreadable.
        """
        with self._read("read a session") as conn:
            row = conn.execute(_STATE_SQL, (session_id,)).fetchone()
        if row is None:
            raise self._not_found(session_id)
        width = _SESSION_WIDTH
        kept, run = row[width + 2 : width + 8], row[width + 8 :]
        return SessionState(
            session=session_from_row(row[:width]),
            run_count=int(row[width]),
            runs_done=int(row[width + 1]),
            verdict=None if kept[0] is None else verdict_from_row(kept),
            newest_run=None if run[0] is None else (int(run[0]), run_from_row(run)),
        )

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
            QueryError: ``status`` is not a final status.
            NotFoundError: No session has that id.
            StoreError: The store is closed or the write failed.
        """
        if status not in _FINAL_STATUSES:
            msg = (
                f"cannot finish session {session_id} with status {status!r}; "
                f"expected one of {', '.join(map(repr, _FINAL_STATUSES))}"
            )
            raise QueryError(msg)
        with self._write("finish a session") as conn:
            cur = conn.execute(
                "UPDATE sessions SET status = ?, error = ?, finished_at = ?"
                " WHERE id = ?",
                (status, error, utc_now(), session_id),
            )
            if cur.rowcount == 0:
                raise self._not_found(session_id)
        self._release_session(session_id)

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
        self._release_session(session_id)

    def delete_stopped_session(self, session_id: int) -> None:
        """Delete a session and its runs unless its writer is still writing it.

        A ``running`` session whose writer process (on this host) is gone is deleted
        like a finished one; one whose writer is alive, or runs on another host, is
        refused: deleting it would pull the rows from under the kernel's cell.

        Raises:
            SessionRunningError: The session is running and its writer is (or may
                be) alive.
            NotFoundError: No session has that id.
            StoreError: The store is closed or the write failed.
        """
        with self._write("delete a session") as conn:
            row = conn.execute(
                "SELECT status, host, pid, pid_token FROM sessions WHERE id = ?",
                (session_id,),
            ).fetchone()
            if row is None:
                raise self._not_found(session_id)
            status, host, pid, token = row
            if status == "running" and self._writer_alive(
                conn, session_id, host, pid, token
            ):
                where = "" if host == self._host else f" on host {host!r}"
                msg = (
                    f"session {session_id} is still running (writer pid {pid}{where}); "
                    "stop the cell first, then delete it"
                )
                raise SessionRunningError(msg)
            conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

    def list_sessions(
        self,
        *,
        limit: int | None = 50,
        offset: int = 0,
        **filters: Unpack[SessionFilters],
    ) -> list[SessionInfo]:
        """Return sessions newest first, filtered and paged. Never reads ``runs``.

        Args:
            limit: At most this many sessions; ``None`` for all.
            offset: Skip this many matching sessions first.
            **filters: The :class:`~nsight_lab.store.rows.SessionFilters`.

        Returns:
            The matching sessions, newest first.

        Raises:
            QueryError: A filter is unknown or malformed (time, status), or the
                limit or offset is.
            StoreError: The store is closed or unreadable.
        """
        where, params = session_filter(filters, self._dialect.like)
        check_page(limit, offset)
        sql = (
            f"SELECT {SESSION_COLUMNS} FROM sessions{where}"  # noqa: S608  (constant SQL)
            " ORDER BY id DESC LIMIT ? OFFSET ?"
        )
        with self._read("list sessions") as conn:
            no_limit = self._dialect.no_limit
            rows = conn.execute(
                sql, (*params, no_limit if limit is None else limit, offset)
            )
            return [session_from_row(r) for r in rows.fetchall()]

    def count_sessions(self, **filters: Unpack[SessionFilters]) -> int:
        """Return how many sessions :meth:`list_sessions` would match without paging.

        Raises:
            QueryError: A filter is unknown or malformed.
            StoreError: The store is closed or unreadable.
        """
        where, params = session_filter(filters, self._dialect.like)
        with self._read("count sessions") as conn:
            row = conn.execute(total_sql(filters, where), total_params(filters, params))
            return int(row.fetchone()[0])

    def run_counts(self, session_ids: Sequence[int]) -> dict[int, int]:
        """Return the number of stored runs of each known session (cheap: no scan).

        Raises:
            StoreError: The store is closed or unreadable.
        """
        ids, marks = in_list(session_ids)
        if not ids:
            return {}
        with self._read("count runs") as conn:
            rows = conn.execute(
                f"SELECT id, run_count FROM sessions WHERE id IN ({marks})",  # noqa: S608
                ids,
            ).fetchall()
        return {int(i): int(n) for i, n in rows}


def _login() -> str | None:
    """The writer's login name, or ``None`` where none can be told (a bare uid)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry, no LOGNAME/USER
        return None
