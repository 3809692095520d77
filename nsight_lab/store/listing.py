"""The session list's one read: a page of sessions with what a history row shows.

:meth:`ListingQueries.list_session_page` answers ``GET sessions`` (and any other
list of sessions with their counts) in two statements on one connection: the total
that matches and the page, each session with its stored ``run_count`` and
``runs_done`` and its kept verdict (one statement), then the page's region names
(one more), instead of a call per column.

A listed session's ``configs`` are its first :data:`LISTED_CONFIGS` only, with
``config_count`` beside them: the list reads a prefix of each session's config list
and counts the rest in SQL, so a page costs the same for a grid of ten configs and
one of a million (issue 29: every page of a list holding a 1,000,000-config session
was 17.8 MB and 5.7 s).
"""

from __future__ import annotations

import json
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
    from nsight_lab.store.dialect import Dialect
    from nsight_lab.store.rows import SessionFilters

__all__ = ["LISTED_CONFIGS", "ListedSession", "ListingQueries", "SessionPage"]

LISTED_CONFIGS = 20
"""Configs a listed session carries (its first); ``config_count`` says how many."""
_CONFIGS_PREFIX = 8_192
"""Characters of ``configs_json`` read per listed session (its first configs)."""

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
    config_count: int = 0
    """How many configs it has; ``session.configs`` holds the first
    :data:`LISTED_CONFIGS` of them only."""


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
        sql, params = page_query(filters, self._dialect, limit, offset)
        with self._read("list sessions") as conn:
            rows = conn.execute(sql, params).fetchall()
            regions = read_regions(
                conn,
                [int(r[1]) for r in rows if r[1] is not None],
                self._dialect.max_parameters,
            )
        return SessionPage(
            total=int(rows[0][0]),
            sessions=[_listed(row[1:], regions) for row in rows if row[1] is not None],
        )


def page_query(
    filters: SessionFilters, dialect: Dialect, limit: int | None, offset: int
) -> tuple[str, list[Any]]:
    """The one statement of :meth:`ListingQueries.list_session_page`, its parameters.

    Raises:
        QueryError: A filter is unknown or malformed, or the limit or offset is.
    """
    where, params = session_filter(filters, dialect.like)
    check_page(limit, offset)
    # One row always (the total), with the page's sessions joined to it. Of each
    # config list, a prefix and its length (counted by the engine, not parsed
    # here): a page's cost does not grow with the sessions' grids. The page's ids
    # are chosen first, from the index alone, and only those rows are read: with
    # the columns in the paged query, PostgreSQL built every skipped row of an
    # OFFSET (the last page of 100,000 sessions: 204 ms, 32 ms this way; issue 32).
    configs = "configs_json::json" if dialect.postgres else "configs_json"
    inner = SESSION_COLUMNS.replace(
        "configs_json",
        f"substr(configs_json, 1, {_CONFIGS_PREFIX}) AS configs_json",
    )
    sql = (
        f"SELECT t.total, {_PAGE_COLUMNS}, p.run_count, p.runs_done,"  # noqa: S608  (constant SQL)
        f" {_VERDICT_COLUMNS}, p.config_count"
        f" FROM ({total_sql(filters, where)}) AS t"
        f" LEFT JOIN (SELECT {inner}, run_count, runs_done,"
        f" json_array_length({configs}) AS config_count"
        f" FROM sessions WHERE id IN (SELECT id FROM sessions{where}"
        " ORDER BY id DESC LIMIT ? OFFSET ?)) AS p ON 1 = 1"
        " LEFT JOIN session_verdicts AS v ON v.session_id = p.id"
        " ORDER BY p.id DESC"
    )
    page = (dialect.no_limit if limit is None else limit, offset)
    return sql, [*total_params(filters, params), *params, *page]


def _only_annotation(filters: SessionFilters) -> bool:
    """Whether the one filter given is ``annotation``.

    As :func:`~nsight_lab.store.rows.session_filter` reads them: ``None`` is no
    filter, nor is an empty ``text``.
    """
    given = [
        name
        for name, value in filters.items()
        if value is not None and (name != "text" or value)
    ]
    return given == ["annotation"]


def total_sql(filters: SessionFilters, where: str) -> str:
    """How many sessions match: one ``count(*)`` statement for the filters.

    By annotation alone, counted in ``session_annotations``' own index: each of
    its rows names a stored session once (its key, a cascading foreign key), so
    its count is the sessions' without a lookup of each in ``sessions`` (61 ms
    for 5,000 of 100,000 sessions on SQLite, 0.15 ms this way; issue 32).
    """
    if _only_annotation(filters):
        return "SELECT count(*) AS total FROM session_annotations WHERE annotation = ?"
    return f"SELECT count(*) AS total FROM sessions{where}"  # noqa: S608  (constant SQL)


def total_params(filters: SessionFilters, params: list[Any]) -> list[Any]:
    """The parameters of :func:`total_sql`'s statement."""
    return [filters["annotation"]] if _only_annotation(filters) else params


_SESSION_WIDTH = len(SESSION_COLUMNS.split(","))


_CONFIGS_AT = [c.strip() for c in SESSION_COLUMNS.split(",")].index("configs_json")


def first_configs(prefix: str, most: int = LISTED_CONFIGS) -> list[Any]:
    """The first ``most`` whole items of a JSON array of which ``prefix`` is the start.

    Decodes item by item and stops at the first one the prefix cuts, so a listed
    session's configs cost :data:`_CONFIGS_PREFIX` characters however many it has.
    """
    decoder = json.JSONDecoder()
    items: list[Any] = []
    at = prefix.find("[") + 1
    while 0 < at < len(prefix) and len(items) < most:
        while at < len(prefix) and prefix[at] in " \t\r\n,":
            at += 1
        if at >= len(prefix) or prefix[at] == "]":
            break
        try:
            item, at = decoder.raw_decode(prefix, at)
        except json.JSONDecodeError:  # cut by the prefix
            break
        items.append(item)
    return items


def _listed(row: tuple[Any, ...], regions: dict[int, list[str]]) -> ListedSession:
    """A ``{SESSION_COLUMNS}, run_count, runs_done, {_VERDICT_COLUMNS}, count`` row.

    Its ``configs_json`` is a prefix of the stored list (see the query).
    """
    head = list(row[:_SESSION_WIDTH])
    head[_CONFIGS_AT] = json.dumps(first_configs(head[_CONFIGS_AT] or "[]"))
    session = session_from_row(head)
    run_count, runs_done = row[_SESSION_WIDTH : _SESSION_WIDTH + 2]
    verdict_row = row[_SESSION_WIDTH + 2 : -1]
    return ListedSession(
        session=session,
        run_count=int(run_count),
        runs_done=int(runs_done),
        regions=regions.get(session.id, []),
        verdict=None if verdict_row[0] is None else verdict_from_row(verdict_row),
        config_count=int(row[-1] or 0),
    )
