"""The session list's one read: a page of sessions with what a history row shows.

:meth:`ListingQueries.list_session_page` answers ``GET sessions`` (and any other
list of sessions with their counts) in two statements on one connection: the total
that matches and the page, each session with its stored ``run_count`` and
``runs_done`` and its kept verdict (one statement), then the page's region names
(one more), instead of a call per column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nsight_lab.store.baselines import StoredVerdict, verdict_from_row
from nsight_lab.store.connection import StoreBase
from nsight_lab.store.rows import (
    SESSION_COLUMNS,
    check_page,
    session_filter,
    session_from_row,
)
from nsight_lab.store.runs import read_regions

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from nsight_lab.contract.records import SessionInfo
    from nsight_lab.store.rows import SessionFilters

__all__ = ["ListedSession", "ListingQueries", "SessionPage"]

_PAGE_COLUMNS = ", ".join(f"p.{c.strip()}" for c in SESSION_COLUMNS.split(","))
_VERDICT_COLUMNS = (
    "v.session_id, v.baseline_name, v.baseline_session_id, v.verdict, v.threshold,"
    " v.computed_at"
)


@dataclass(frozen=True)
class ListedSession:
    """One session of a page, with what its history row shows."""

    session: SessionInfo
    run_count: int
    """Stored records (one per region per run)."""
    runs_done: int
    """Complete runs (one per config and repetition)."""
    regions: list[str]
    """Its region names, sorted."""
    verdict: StoredVerdict | None
    """Its kept verdict against a baseline, if any."""


@dataclass(frozen=True)
class SessionPage:
    """A page of sessions, newest first, and how many match without paging."""

    total: int
    sessions: list[ListedSession]


class ListingQueries(StoreBase):
    """The session list method of :class:`~nsight_lab.store.run_store.RunStore`."""

    def list_session_page(
        self,
        *,
        limit: int | None = 50,
        offset: int = 0,
        **filters: Unpack[SessionFilters],
    ) -> SessionPage:
        """Return a page of sessions with their counts, regions and verdicts.

        The :class:`~nsight_lab.store.rows.SessionFilters`, ``limit`` and
        ``offset`` mean what they mean for ``list_sessions``; ``total`` is what
        ``count_sessions`` would say.

        Raises:
            QueryError: A filter is unknown or malformed (time, status), or the
                limit or offset is.
            StoreError: The store is closed or unreadable.
        """
        where, params = session_filter(filters, self._dialect.like)
        check_page(limit, offset)
        # One row always (the total), with the page's sessions joined to it.
        sql = (
            f"SELECT t.total, {_PAGE_COLUMNS}, p.run_count, p.runs_done,"  # noqa: S608  (constant SQL)
            f" {_VERDICT_COLUMNS}"
            f" FROM (SELECT count(*) AS total FROM sessions{where}) AS t"
            f" LEFT JOIN (SELECT {SESSION_COLUMNS}, run_count, runs_done"
            f" FROM sessions{where} ORDER BY id DESC LIMIT ? OFFSET ?) AS p ON 1 = 1"
            " LEFT JOIN session_verdicts AS v ON v.session_id = p.id"
            " ORDER BY p.id DESC"
        )
        no_limit = self._dialect.no_limit
        page = (no_limit if limit is None else limit, offset)
        with self._read("list sessions") as conn:
            rows = conn.execute(sql, (*params, *params, *page)).fetchall()
            regions = read_regions(
                conn,
                [int(r[1]) for r in rows if r[1] is not None],
                self._dialect.max_parameters,
            )
        return SessionPage(
            total=int(rows[0][0]),
            sessions=[_listed(row[1:], regions) for row in rows if row[1] is not None],
        )


_SESSION_WIDTH = len(SESSION_COLUMNS.split(","))


def _listed(row: tuple[Any, ...], regions: dict[int, list[str]]) -> ListedSession:
    """A ``{SESSION_COLUMNS}, run_count, runs_done, {_VERDICT_COLUMNS}`` row."""
    session = session_from_row(row[:_SESSION_WIDTH])
    run_count, runs_done = row[_SESSION_WIDTH : _SESSION_WIDTH + 2]
    verdict_row = row[_SESSION_WIDTH + 2 :]
    return ListedSession(
        session=session,
        run_count=int(run_count),
        runs_done=int(runs_done),
        regions=regions.get(session.id, []),
        verdict=None if verdict_row[0] is None else verdict_from_row(verdict_row),
    )
