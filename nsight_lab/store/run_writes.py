"""Adding runs to the run store: :meth:`RunWrites.add_runs` (a mixin of ``RunStore``).

One short transaction per batch: the rows, the session's region names, its run keys
and its two counters (records and complete runs), so whatever a reader or a count
sees is what was committed, a killed writer included. Its transactions come from
:class:`~nsight_lab.store.connection.StoreBase`.
"""

from __future__ import annotations

import functools
import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nsight_lab.errors import NotFoundError
from nsight_lab.store.connection import StoreBase
from nsight_lab.store.postgres import PgConnection
from nsight_lab.store.rows import RUN_COLUMNS, run_rows

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from nsight_lab.contract.records import RunRecord
    from nsight_lab.store.dialect import Connection, Dialect

RUN_FIELDS = RUN_COLUMNS.partition(", ")[2]
"""The ``runs`` columns a new row gives (all but its id)."""
_ROW_MARKS = f"({', '.join('?' * (RUN_FIELDS.count(',') + 1))})"
MAX_ROWS_PER_INSERT = 500


@functools.cache
def _insert_runs_sql(n: int) -> str:
    """``INSERT INTO runs`` of ``n`` rows in one statement."""
    return f"INSERT INTO runs ({RUN_FIELDS}) VALUES {', '.join([_ROW_MARKS] * n)}"  # noqa: S608  (constant SQL)


def insert_runs(
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
        return conn.insert_rows("runs", RUN_FIELDS, rows)
    per = _rows_per_statement(conn, dialect, _ROW_MARKS.count("?"))
    ids: list[int] = []
    for start in range(0, len(rows), per):
        chunk = rows[start : start + per]
        values = [v for r in chunk for v in r]
        cur = conn.execute(_insert_runs_sql(len(chunk)), values)
        last = int(getattr(cur, "lastrowid", 0) or 0)
        ids.extend(range(last - len(chunk) + 1, last + 1))
    return ids


def _rows_per_statement(conn: Connection, dialect: Dialect, width: int) -> int:
    """How many rows of ``width`` parameters one statement may carry (at most 500)."""
    return max(1, min(MAX_ROWS_PER_INSERT, variable_limit(conn, dialect) // width))


def variable_limit(conn: Connection, dialect: Dialect) -> int:
    """The most parameters one statement may carry on ``conn``."""
    if dialect.postgres:
        return dialect.max_parameters
    getlimit = getattr(conn, "getlimit", None)  # Python >= 3.11
    if getlimit is None:
        return 999  # SQLite's default before 3.32
    return int(getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))  # type: ignore[attr-defined, unused-ignore]


def insert_new(
    conn: Connection, table: str, columns: str, rows: Sequence[tuple[Any, ...]],
    dialect: Dialect,
) -> int:  # fmt: skip
    """Insert the ``rows`` not already in ``table`` (its key); how many went in.

    ``rows`` must not repeat themselves; one statement per chunk.
    """
    if not rows:
        return 0
    marks = f"({', '.join('?' * len(rows[0]))})"
    per = _rows_per_statement(conn, dialect, len(rows[0]))
    added = 0
    for start in range(0, len(rows), per):
        chunk = rows[start : start + per]
        added += conn.execute(
            f"INSERT INTO {table} ({columns}) VALUES"  # noqa: S608  (our own names)
            f" {', '.join([marks] * len(chunk))} ON CONFLICT DO NOTHING",
            [v for row in chunk for v in row],
        ).rowcount
    return added


@dataclass
class Batch:
    """What a batch of records adds to each of its sessions."""

    records: dict[int, int] = field(default_factory=dict)
    """Session -> its records in the batch."""
    regions: dict[int, set[str]] = field(default_factory=dict)
    """Session -> the region names of its records."""
    keys: dict[int, dict[tuple[int, int], None]] = field(default_factory=dict)
    """Session -> its (config index, run index) pairs, in order, once each."""

    @classmethod
    def of(cls, records: Iterable[RunRecord]) -> Batch:
        """Sort ``records`` by session."""
        batch = cls()
        for r in records:
            sid = r.session_id
            batch.records[sid] = batch.records.get(sid, 0) + 1
            batch.regions.setdefault(sid, set()).add(r.annotation)
            batch.keys.setdefault(sid, {})[r.config_index, r.run_index] = None
        return batch


class RunWrites(StoreBase):
    """The write method of :class:`~nsight_lab.store.run_store.RunStore`'s runs."""

    def add_runs(self, records: Sequence[RunRecord]) -> list[int]:
        """Store runs in one short transaction, committed before this returns.

        The rows go in through multi-row INSERT statements (see :func:`insert_runs`):
        per-row statements cost a fast profile loop dearly. The same transaction keeps
        each session's region names, its record count (``run_count``) and its count
        of complete runs (``runs_done``: new ``(config_index, run_index)`` pairs,
        however many regions or writers report them) up to date, so a count is never
        more nor less than the rows committed.

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
        rows = run_rows(records)
        batch = Batch.of(records)
        # Sorted: writers of several sessions take their row locks in one order.
        # Only the pairs this store has not committed before: a profile's regions
        # repeat every run, and the statement they would cost is a GIL hand-back.
        pairs = sorted(
            (sid, name)
            for sid, names in batch.regions.items()
            for name in names
            if (sid, name) not in self._annotated
        )
        with self._write("add runs") as conn:
            ids = self._insert_rows(conn, rows, batch)
            added = insert_new(
                conn, "session_annotations", "session_id, annotation", pairs,
                self._dialect,
            )  # fmt: skip
            self._count(conn, batch, regions_added=added > 0)
            if isinstance(conn, PgConnection):  # what this write's NOTIFY says
                conn.runs_only = True
                for record, run_id in zip(records, ids, strict=True):
                    conn.runs[record.session_id] = run_id  # the last is the largest
        self._annotated.update(pairs)  # committed: a rolled-back batch never gets here
        return ids

    def _insert_rows(
        self, conn: Connection, rows: Sequence[tuple[Any, ...]], batch: Batch
    ) -> list[int]:
        """Insert the batch's rows; their ids. A missing session stores nothing.

        Few statements: each one costs the writer thread a GIL hand-back (see
        :func:`insert_runs`), so on SQLite the session's existence is left to the
        foreign key. On PostgreSQL the sessions' rows are locked first: that orders
        the writers of one session (ids then grow in commit order, which the events
        socket relies on; run keys and counts are added one writer after the other)
        and lets the annotation list see every writer's.
        """
        dialect = self._dialect
        if not dialect.postgres:
            try:
                return insert_runs(conn, rows, dialect)
            except sqlite3.IntegrityError as exc:
                raise self._missing_session(conn, batch.records) or exc from None
        wanted = sorted(batch.records)
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
            raise self._missing_session(conn, missing) or self._not_found(missing[0])
        return insert_runs(conn, rows, dialect)

    def _count(self, conn: Connection, batch: Batch, *, regions_added: bool) -> None:
        """Add the batch's new run keys and its counts to each of its sessions."""
        dialect = self._dialect
        annotations_sql = (
            f", annotations = {dialect.annotations_sql}" if regions_added else ""
        )
        for sid in sorted(batch.records):
            keys = [(sid, c, r) for c, r in batch.keys[sid]]
            done = insert_new(
                conn, "session_runs", "session_id, config_index, run_index", keys,
                dialect,
            )  # fmt: skip
            conn.execute(
                "UPDATE sessions SET run_count = run_count + :added,"  # noqa: S608  (constant SQL)
                f" runs_done = runs_done + :done{annotations_sql} WHERE id = :sid",
                {"sid": sid, "added": batch.records[sid], "done": done},
            )

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
