"""Reading runs from the run store: :class:`RunQueries` (a mixin of ``RunStore``).

Runs read back by id; a session's runs a page at a time (:meth:`RunQueries.
run_pages`: every read of a whole session streams them, since a 1,000,000-run
session read at once took 1.6-2.3 GB, issue 29); the counts a view needs (kept per
session by the writer: :mod:`nsight_lab.store.run_writes`), and the cheap change
counters pollers use.
Its transactions and error helpers come from
:class:`~nsight_lab.store.connection.StoreBase`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from nsight_lab.store.connection import StoreBase
from nsight_lab.store.rows import RUN_COLUMNS, in_list, run_from_row

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from nsight_lab.contract.records import RunRecord
    from nsight_lab.store.dialect import Connection


RUN_PAGE = 20_000
"""Runs one page holds (:meth:`RunQueries.run_pages`): about 30 MB of records, and
a statement per page costs nothing beside decoding them."""


class RunQueries(StoreBase):
    """The run reads of :class:`~nsight_lab.store.run_store.RunStore`."""

    def run_pages(
        self, session_id: int, *, page: int = RUN_PAGE
    ) -> Iterator[list[RunRecord]]:
        """Yield a session's runs in the order stored, ``page`` runs at a time.

        Each page is its own short read (``id > last`` with ``LIMIT``), so no read
        transaction spans the whole session and at most one page of records is
        held here at once, however many runs the session has: what ``show``,
        ``compare``, ``export`` and the server's view models read whole sessions
        with. A run stored while the pages are read is read too when its id comes
        after the last page's (runs are stored in id order).

        Raises:
            NotFoundError: No session has that id (before the first page).
            StoreError: The store is closed or unreadable.
        """
        after = 0
        while True:
            pairs = self.runs_with_ids(session_id, after_id=after, limit=page)
            if not pairs:
                return
            after = pairs[-1][0]
            yield [record for _, record in pairs]
            if len(pairs) < page:
                return

    def run_keys(
        self, session_id: int, *, page: int = RUN_PAGE
    ) -> tuple[list[str], list[str]]:
        """Every parameter and metric name of a session's runs, in first-seen order.

        Reads the config and metrics columns alone, a page at a time (no record
        is built): what a streamed export needs to fix its columns before its first
        row, as a table of every run at once would have them.

        Raises:
            NotFoundError: No session has that id.
            StoreError: The store is closed or unreadable.
        """
        params: dict[str, None] = {}
        metrics: dict[str, None] = {}
        seen: set[str] = set()
        after = 0
        while True:
            with self._read("read run keys") as conn:
                rows = conn.execute(
                    "SELECT id, config_json, metrics_json FROM runs"
                    " WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?",
                    (session_id, after, page),
                ).fetchall()
            if not rows:
                if not after:
                    self._require_session(session_id)
                break
            after = int(rows[-1][0])
            for _, config_json, metrics_json in rows:
                if config_json not in seen:
                    seen.add(config_json)
                    params.update(dict.fromkeys(json.loads(config_json)))
                metrics.update(dict.fromkeys(json.loads(metrics_json)))
            if len(rows) < page:
                break
        return list(params), list(metrics)

    def _require_session(self, session_id: int) -> None:
        """Raise :class:`NotFoundError` unless a session ``session_id`` exists.

        Raises:
            NotFoundError: No session has that id.
            StoreError: The store is closed or unreadable.
        """
        with self._read("read a session") as conn:
            found = conn.execute(
                "SELECT 1 FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
        if not found:
            raise self._not_found(session_id)

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
                f"SELECT {RUN_COLUMNS} FROM runs WHERE session_id = ? AND id > ?"  # noqa: S608  (constant SQL)
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
        return [(int(row[0]), run_from_row(row)) for row in rows]

    def runs_done(self, session_id: int) -> tuple[int, tuple[int, int] | None]:
        """Return a session's complete runs and its newest run's place.

        ``(distinct (config_index, run_index) pairs, (config_index, run_index) of the
        newest stored run or None)``: what :func:`nsight_lab.contract.progress.
        session_progress` needs. Two indexed lookups: the count is kept with the
        session (:meth:`runs_done_counts`).

        Raises:
            StoreError: The store is closed or unreadable.
        """
        with self._read("count complete runs") as conn:
            row = conn.execute(
                "SELECT runs_done FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            newest = conn.execute(
                "SELECT config_index, run_index FROM runs WHERE session_id = ?"
                " ORDER BY id DESC LIMIT 1",
                (session_id,),
            ).fetchone()
        place = (int(newest[0]), int(newest[1])) if newest is not None else None
        return (int(row[0]) if row is not None else 0), place

    def runs_done_counts(self, session_ids: Sequence[int]) -> dict[int, int]:
        """Return each session's complete runs (distinct config and run index).

        What a "run" means everywhere (the progress line, the history, ``show``):
        one execution of the cell for one config, whatever its number of regions
        (:meth:`runs_done` for one session). Sessions without runs are left out.
        Read from ``sessions.runs_done``, which the writer keeps in the transaction
        of the runs it counts (:mod:`nsight_lab.store.run_writes`): one indexed
        read per session, however many runs it holds.

        Raises:
            StoreError: The store is closed or unreadable.
        """
        ids, marks = in_list(session_ids)
        if not ids:
            return {}
        with self._read("count complete runs") as conn:
            rows = conn.execute(
                "SELECT id, runs_done FROM sessions"  # noqa: S608  (constant SQL)
                f" WHERE id IN ({marks}) AND runs_done > 0",
                ids,
            ).fetchall()
        return {int(i): int(n) for i, n in rows}

    def regions_of(self, session_ids: Sequence[int]) -> dict[int, list[str]]:
        """Return each session's regions (annotations), in name order.

        Raises:
            StoreError: The store is closed or unreadable.
        """
        with self._read("read regions") as conn:
            return read_regions(conn, session_ids, self._dialect.max_parameters)

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


def read_regions(
    conn: Connection, session_ids: Sequence[int], step: int
) -> dict[int, list[str]]:
    """Each of ``session_ids``' regions, sorted; ``step`` ids a statement at most."""
    ids = list(dict.fromkeys(session_ids))
    out: dict[int, list[str]] = {}
    for start in range(0, len(ids), step):
        chunk, marks = in_list(ids[start : start + step])
        rows = conn.execute(
            "SELECT session_id, annotation FROM session_annotations"  # noqa: S608  (constant SQL)
            f" WHERE session_id IN ({marks}) ORDER BY session_id, annotation",
            chunk,
        ).fetchall()
        for session_id, annotation in rows:
            out.setdefault(int(session_id), []).append(str(annotation))
    return out
