"""The run methods of :class:`~nsight_lab.store.run_store.RunStore` (a mixin).

Add runs, read them back, and the cheap change counters pollers use. ``RunStore``
provides the connection (``_read``, ``_write``) and the error helpers.
"""

from __future__ import annotations

import functools
import sqlite3
from typing import TYPE_CHECKING, Any

from nsight_lab.errors import NotFoundError
from nsight_lab.store.postgres import PgConnection
from nsight_lab.store.rows import _RUN_COLUMNS, _run_from_row, _run_to_row, in_list

if TYPE_CHECKING:
    import contextlib
    from collections.abc import Iterable, Sequence

    from nsight_lab.contract.records import RunRecord
    from nsight_lab.store.dialect import Connection, Dialect


_RUN_FIELDS = _RUN_COLUMNS.partition(", ")[2]
_ROW_MARKS = f"({', '.join('?' * (_RUN_FIELDS.count(',') + 1))})"
_MAX_ROWS_PER_INSERT = 500


@functools.cache
def _insert_runs_sql(n: int) -> str:
    """``INSERT INTO runs`` of ``n`` rows in one statement."""
    return f"INSERT INTO runs ({_RUN_FIELDS}) VALUES {', '.join([_ROW_MARKS] * n)}"  # noqa: S608  (constant SQL)


def _insert_runs(
    conn: Connection, rows: Sequence[tuple[Any, ...]], dialect: Dialect
) -> list[int]:
    """Insert ``rows`` with as few statements as the engine's variable limit allows.

    Python's sqlite3 releases the GIL around every statement step, and taking it back
    from a busy profiling thread can take a whole switch interval (5 ms): per-row
    INSERTs (or ``executemany``, which steps once per row) in the writer thread made
    a 500-run batch take seconds while a fast cell ran. One multi-row statement per
    chunk steps once.

    SQLite hands out consecutive ``AUTOINCREMENT`` ids within the one write
    transaction, in row order; PostgreSQL's identity may interleave with other
    writers' rows, so there the ids are drawn first and every row goes in through
    one statement of arrays (:meth:`PgConnection.insert_rows`).

    Returns:
        The new ids, in the order of ``rows``.
    """
    if isinstance(conn, PgConnection):
        return conn.insert_rows("runs", _RUN_FIELDS, rows)
    width = _ROW_MARKS.count("?")
    per = max(1, min(_MAX_ROWS_PER_INSERT, _variable_limit(conn, dialect) // width))
    ids: list[int] = []
    for start in range(0, len(rows), per):
        chunk = rows[start : start + per]
        values = [v for r in chunk for v in r]
        cur = conn.execute(_insert_runs_sql(len(chunk)), values)
        last = int(getattr(cur, "lastrowid", 0) or 0)
        ids.extend(range(last - len(chunk) + 1, last + 1))
    return ids


def _variable_limit(conn: Connection, dialect: Dialect) -> int:
    if dialect.postgres:
        return dialect.max_parameters
    getlimit = getattr(conn, "getlimit", None)  # Python >= 3.11
    if getlimit is None:
        return 999  # SQLite's default before 3.32
    return int(getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))  # type: ignore[attr-defined, unused-ignore]


class _RunQueries:
    """Run methods of :class:`~nsight_lab.store.run_store.RunStore`."""

    if TYPE_CHECKING:  # provided by RunStore
        where: str
        _dialect: Dialect
        _annotated: set[tuple[int, str]]

        def _read(
            self, action: str
        ) -> contextlib.AbstractContextManager[Connection]: ...

        def _write(
            self, action: str
        ) -> contextlib.AbstractContextManager[Connection]: ...

        def _not_found(self, session_id: int) -> NotFoundError: ...

    def add_runs(self, records: Sequence[RunRecord]) -> list[int]:
        """Store runs in one short transaction, committed before this returns.

        The rows go in through multi-row INSERT statements (see ``_insert_runs``):
        per-row statements cost a fast profile loop dearly.

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
        # Sorted: writers of several sessions take their row locks in one order.
        # Only the pairs this store has not committed before: a profile's regions
        # repeat every run, and the statement they would cost is a GIL hand-back.
        pairs = sorted(
            (sid, name)
            for sid, names in per_session.items()
            for name in names
            if (sid, name) not in self._annotated
        )
        dialect = self._dialect
        # Few statements: each one costs the writer thread a GIL hand-back (see
        # _insert_runs), so on SQLite the session's existence is left to the foreign
        # key. On PostgreSQL the sessions' rows are locked first: that orders the
        # writers of one session (ids then grow in commit order, which the events
        # socket relies on) and lets the annotation list below see every writer's.
        with self._write("add runs") as conn:
            if dialect.postgres:
                wanted = sorted(counts)
                locked = {
                    int(r[0])
                    for r in conn.execute(
                        "SELECT id FROM sessions WHERE id IN"  # noqa: S608  (constant SQL)
                        f" ({', '.join('?' * len(wanted))}) ORDER BY id FOR UPDATE",
                        wanted,
                    ).fetchall()
                }
                missing = [sid for sid in wanted if sid not in locked]
                if missing:
                    raise self._missing_session(conn, missing) or self._not_found(
                        missing[0]
                    )
                ids = _insert_runs(conn, rows, dialect)
            else:
                try:
                    ids = _insert_runs(conn, rows, dialect)
                except sqlite3.IntegrityError as exc:
                    raise self._missing_session(conn, per_session) or exc from None
            per = max(1, min(_MAX_ROWS_PER_INSERT, _variable_limit(conn, dialect) // 2))
            added = sum(
                conn.execute(
                    "INSERT INTO session_annotations (session_id, annotation) VALUES"  # noqa: S608  (constant SQL)
                    f" {', '.join(['(?, ?)'] * len(chunk))} ON CONFLICT DO NOTHING",
                    [v for pair in chunk for v in pair],
                ).rowcount
                for chunk in (pairs[i : i + per] for i in range(0, len(pairs), per))
            )
            for sid in sorted(counts):
                count = counts[sid]
                annotations_sql = (
                    f", annotations = {dialect.annotations_sql}" if added else ""
                )
                conn.execute(
                    "UPDATE sessions SET run_count = run_count + :added"  # noqa: S608  (constant SQL)
                    f"{annotations_sql} WHERE id = :sid",
                    {"sid": sid, "added": count},
                )
            if isinstance(conn, PgConnection):  # what this write's NOTIFY says
                conn.runs_only = True
                for record, run_id in zip(records, ids, strict=True):
                    conn.runs[record.session_id] = run_id  # the last is the largest
        self._annotated.update(pairs)  # committed: a rolled-back batch never gets here
        return ids

    def _missing_session(
        self, conn: Connection, sessions: Iterable[int]
    ) -> NotFoundError | None:
        """The error for the first of ``sessions`` not in the store, if any is not."""
        for sid in sessions:
            if not conn.execute(
                "SELECT 1 FROM sessions WHERE id = ?", (sid,)
            ).fetchone():
                msg = (
                    f"cannot add runs to session {sid!r}: no such session in the run "
                    f"store {self.where!r}; create it with create_session() first"
                )
                return NotFoundError(msg)
        return None

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
        return self._run_pairs(session_id, after_id, limit, newest=False)

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

    def runs_tail(
        self, session_id: int, *, after_id: int = 0, limit: int
    ) -> list[tuple[int, RunRecord]]:
        """Return the last ``limit`` ``(run id, record)`` pairs after ``after_id``.

        Args:
            session_id: The session.
            after_id: Only runs with a larger id.
            limit: At most this many runs, the newest.

        Returns:
            The pairs, ordered by run id.

        Raises:
            NotFoundError: No session has that id.
            StoreError: The store is closed or unreadable.
        """
        return self._run_pairs(session_id, after_id, limit, newest=True)

    def _run_pairs(
        self, session_id: int, after_id: int, limit: int | None, *, newest: bool
    ) -> list[tuple[int, RunRecord]]:
        """The first (or, with ``newest``, the last) ``limit`` runs after ``after_id``.

        Returned in id order either way; an empty answer checks that the session
        exists, so a missing session is an error rather than no runs.
        """
        order = "DESC" if newest else "ASC"
        with self._read("read runs") as conn:
            rows = conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs WHERE session_id = ? AND id > ?"  # noqa: S608  (constant SQL)
                f" ORDER BY id {order} LIMIT ?",
                (
                    session_id,
                    after_id,
                    self._dialect.no_limit if limit is None else limit,
                ),
            ).fetchall()
            if (
                not rows
                and not conn.execute(
                    "SELECT 1 FROM sessions WHERE id = ?", (session_id,)
                ).fetchone()
            ):
                raise self._not_found(session_id)
        if newest:
            rows.reverse()
        return [(int(row[0]), _run_from_row(row)) for row in rows]

    def runs_done(self, session_id: int) -> tuple[int, tuple[int, int] | None]:
        """Return a session's complete runs and its newest run's place.

        ``(distinct (config_index, run_index) pairs, (config_index, run_index) of the
        newest stored run or None)``: what :func:`nsight_lab.views.progress.
        session_progress` needs. Counted in SQLite alone (no row reaches Python).

        Raises:
            StoreError: The store is closed or unreadable.
        """
        with self._read("count complete runs") as conn:
            row = conn.execute(
                "SELECT count(*) FROM (SELECT DISTINCT config_index, run_index"
                " FROM runs WHERE session_id = ?) AS d",
                (session_id,),
            ).fetchone()
            newest = conn.execute(
                "SELECT config_index, run_index FROM runs WHERE session_id = ?"
                " ORDER BY id DESC LIMIT 1",
                (session_id,),
            ).fetchone()
        place = (int(newest[0]), int(newest[1])) if newest is not None else None
        return int(row[0]), place

    def runs_done_counts(self, session_ids: Sequence[int]) -> dict[int, int]:
        """Return each session's complete runs (distinct config and run index).

        What a "run" means everywhere (the progress line, the history, ``show``):
        one execution of the cell for one config, whatever its number of regions
        (:meth:`runs_done` for one session). One query for a page of sessions.

        Raises:
            StoreError: The store is closed or unreadable.
        """
        ids, marks = in_list(session_ids)
        if not ids:
            return {}
        with self._read("count complete runs") as conn:
            rows = conn.execute(
                "SELECT session_id, count(*) FROM (SELECT DISTINCT session_id,"  # noqa: S608
                f" config_index, run_index FROM runs WHERE session_id IN ({marks}))"
                " AS d GROUP BY session_id",
                ids,
            ).fetchall()
        return {int(i): int(n) for i, n in rows}

    def regions_of(self, session_ids: Sequence[int]) -> dict[int, list[str]]:
        """Return each session's regions (annotations), in name order.

        Raises:
            StoreError: The store is closed or unreadable.
        """
        ids, marks = in_list(session_ids)
        if not ids:
            return {}
        with self._read("read regions") as conn:
            rows = conn.execute(
                "SELECT session_id, annotation FROM session_annotations"  # noqa: S608
                f" WHERE session_id IN ({marks}) ORDER BY session_id, annotation",
                ids,
            ).fetchall()
        out: dict[int, list[str]] = {}
        for session_id, annotation in rows:
            out.setdefault(int(session_id), []).append(str(annotation))
        return out

    def count_runs_after(
        self, session_id: int, *, after_id: int = 0, limit: int | None = None
    ) -> int:
        """Return how many runs of a session have ids above ``after_id``.

        Counted in SQLite alone (no row reaches Python); with ``limit``, counting
        stops there, so asking "more than N?" costs N index steps at most.

        Raises:
            StoreError: The store is closed or unreadable.
        """
        with self._read("count runs") as conn:
            row = conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM runs"
                " WHERE session_id = ? AND id > ? LIMIT ?) AS r",
                (
                    session_id,
                    after_id,
                    self._dialect.no_limit if limit is None else limit,
                ),
            ).fetchone()
        return int(row[0])
