r"""REST handlers of the nsight-lab server extension; every verb is authenticated.

Routes (below ``<base_url>/nsight-lab/api/``; ids match ``\d+`` in the route):

- ``GET status``: version, store engine and path, whether it exists.
- ``GET sessions``: filtered, paged list, newest first.
- ``GET sessions/<id>``: one session and a page of its runs (``after_id``,
  ``limit``, ``tail``, ``figures``).
- ``DELETE sessions/<id>``: the session, its runs and its kept reports (409 while
  its writer is still running it).

- ``GET compare?a=<id>&b=<id>[&threshold=PCT]``: ratios b/a with 95% intervals and
  verdicts (:mod:`nsight_lab.analysis.compare`, the core's comparison;
  :mod:`nsight_lab.analysis.baselines`' verdict table).

A session in every payload carries ``baseline_verdict``: its overall verdict against
the baseline it was profiled with (``--baseline``), kept at profile time, or null.

Thin handlers: each parses its arguments, checks the session, calls the view model
(:mod:`nsight_lab.viewmodel`) and serialises. Every handler that reads more than a
few rows does it in a worker thread (``run_in_executor``), so no request holds up
another; large pages of runs and comparisons are built in a child process
(:class:`nsight_lab.server.workers.Workers`). A session's figures and summary come
from its view model, kept up to date with the runs stored since the last request
(:class:`nsight_lab.viewmodel.cache.ViewModels`): a refresh costs the new runs only.
Nothing here computes a statistic.

Downloads (export, ``.ncu-rep``) live in :mod:`nsight_lab.server.downloads`.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tornado.web

from nsight_lab._version import __version__
from nsight_lab.contract.registry import registered
from nsight_lab.errors import RequestError
from nsight_lab.server.base import (
    NsightLabHandler,
    opened_store,
    parse_count,
    session_store,
)
from nsight_lab.store.run_store import SESSION_FILTERS
from nsight_lab.viewmodel.delta import parse_version
from nsight_lab.viewmodel.encode import dumps, dumps_bytes, joined
from nsight_lab.viewmodel.jobs import compare_json, page_json, page_of
from nsight_lab.viewmodel.pages import session_page, sessions_page

if TYPE_CHECKING:
    from nsight_lab.contract.records import SessionInfo

__all__ = [
    "FILTERS",
    "MAX_LIMIT",
    "MAX_RUN_LIMIT",
    "CompareHandler",
    "SessionHandler",
    "SessionsHandler",
    "StatusHandler",
]

logger = logging.getLogger(__name__)

FILTERS = SESSION_FILTERS
"""Query arguments of ``GET sessions`` that filter; the store checks their values."""
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
DEFAULT_RUN_LIMIT = 5_000
"""Runs per page of ``GET sessions/<id>`` unless ``limit`` says otherwise."""
MAX_RUN_LIMIT = 20_000
"""The most runs one ``GET sessions/<id>`` answers (``limit`` or ``tail``)."""
THREAD_RUNS = 500
"""Pages of up to this many runs are built in a server thread; larger ones in a child
process (building thousands of records would make the garbage collector hold up the
event loop; see :mod:`nsight_lab.server.workers`)."""


class StatusHandler(NsightLabHandler):
    """``GET /nsight-lab/api/status``: the version, the run store, the backends."""

    @tornado.web.authenticated
    def get(self) -> None:
        """Answer the version, the store, whether it exists, and the backends.

        ``store_engine`` is ``"sqlite"`` or ``"postgresql"``; ``store_path`` the
        SQLite file, or the PostgreSQL URL with its password replaced by ``***``.

        ``backends`` lists the registry
        (:func:`~nsight_lab.contract.registry.registered`), in order, each
        ``{"id", "description"}``: what the sidebar's backend filter offers. No
        backend is probed or imported here (probing may load PyTorch or run ncu).
        """
        handle = self.store_handle
        self.reply(
            {
                "version": __version__,
                "store_engine": handle.engine,
                "store_path": handle.where,
                "store_exists": handle.exists(),
                "backends": [
                    {"id": entry.id, "description": entry.description}
                    for entry in registered()
                ],
            }
        )


class SessionsHandler(NsightLabHandler):
    """``GET sessions``: the sessions, filtered and paged, newest first."""

    @tornado.web.authenticated
    async def get(self) -> None:
        """Answer ``{"schema_version", "total", "sessions"}``.

        Query arguments: the :data:`FILTERS` (``since``/``until`` ISO-8601, naive =
        UTC, clamped to the years 1-9999; ``status`` one of the session statuses;
        ``text`` a substring of name, notebook, cell source or a region), ``limit``
        (default 50, at most 500) and ``offset``. ``total`` counts every match; each
        session carries ``run_count``. Read in a worker thread
        (:func:`nsight_lab.viewmodel.pages.sessions_page`).

        Raises:
            RequestError: A filter, ``limit`` or ``offset`` is malformed (400).
            StoreError: The store cannot be read (500).
        """
        filters: dict[str, Any] = {
            name: self.get_query_argument(name, None) or None for name in FILTERS
        }
        limit = self.count_argument("limit", DEFAULT_LIMIT, maximum=MAX_LIMIT)
        offset = self.count_argument("offset", 0)
        handle = self.store_handle

        def read() -> dict[str, Any]:
            return sessions_page(
                handle.get_or_empty(), filters, limit=limit, offset=offset
            )

        self.reply_json(await self.blocking(self.encode_reply, read))
        self.view_models.prepare()  # the sidebar is open: a session view may follow


class SessionHandler(NsightLabHandler):
    """``GET`` and ``DELETE sessions/<id>``."""

    @tornado.web.authenticated
    async def get(self, session_id: str) -> None:
        """Answer one page of a session's runs, and its view when asked.

        The body is ``{"schema_version", "session", "runs", "last_run_id",
        "next_after_id", "has_more"}`` (:func:`nsight_lab.viewmodel.pages.
        session_page`): ``session`` is the list's session object plus ``progress``;
        each run is :func:`~nsight_lab.contract.records.record_to_json` plus its
        store ``id``, in id order.

        Query arguments:

        - ``after_id=N``: only runs stored after run ``N`` (paging, live updates);
        - ``limit=N``: at most ``N`` runs (default 5,000, at most 20,000); when more
          follow, ``has_more`` is true: ask again with ``after_id=next_after_id``;
        - ``tail=N``: instead of the first page, the last ``N`` runs after
          ``after_id`` (at most 20,000; ``has_more`` is then false);
        - ``figures=1``: adds the session's view over every run, from its view model
          (:meth:`nsight_lab.viewmodel.SessionViewModel.to_json`): ``"figures"``
          (chart name -> plotly JSON, each trace its latest
          :data:`~nsight_lab.contract.points.MAX_POINTS` points),
          ``"chart_order"``, ``"summary"``, ``"counters"`` and ``"verdicts"``, and
          ``"view_version"``, the version of that view;
        - ``since=V`` (with ``figures=1``): the ``view_version`` held: ``"delta"``
          (what changed since, :mod:`nsight_lab.viewmodel.delta`) in place of the
          view, or the whole view when the server cannot tell.

        ``last_run_id`` and ``next_after_id`` are the largest id returned (or
        ``after_id``). Everything is read and encoded off the event loop.

        Raises:
            RequestError: An argument is malformed (400).
            NotFoundError: No such session (404).
            StoreError: The store cannot be read (500).
        """
        sid = _session_id(session_id)
        after_id, limit, tail = self._run_arguments()
        with_view = self.flag_argument("figures")
        since = self.get_query_argument("since", None) or None
        if since is not None and parse_version(since) is None:
            msg = f"since must be a view_version the server sent, got {since[:40]!r}"
            raise RequestError(msg)
        page, session = await self._page(sid, after_id, limit, tail, text=not with_view)
        if isinstance(page, str):  # thousands of runs, no view: a child's JSON text
            self.reply_json(page)
            return
        handle, models = self.store_handle, self.view_models
        missing = self.missing_store_message

        def encode() -> str | bytes:
            if not with_view:
                return dumps(page)
            store = opened_store(handle, sid, missing)
            # The view (or delta) is encoded once for every panel that asks it; the
            # session as the page read it (issue 32: one round trip less).
            view = models.view_bytes(store, sid, since, session=session)
            return joined(dumps_bytes(page), view)

        self.reply_json(await self.blocking(encode))

    def _run_arguments(self) -> tuple[int, int, int]:
        """``after_id``, ``limit`` and ``tail`` (-1: none), checked.

        Raises:
            RequestError: One is malformed, or both ``limit`` and ``tail`` given.
        """
        after_id = self.count_argument("after_id", 0)
        limit = self.count_argument("limit", DEFAULT_RUN_LIMIT, maximum=MAX_RUN_LIMIT)
        tail = self.count_argument("tail", -1, maximum=MAX_RUN_LIMIT)
        if tail >= 0 and self.get_query_argument("limit", None):
            msg = "pass either limit (first runs) or tail (last runs), not both"
            raise RequestError(msg)
        return after_id, limit, tail

    async def _page(
        self, sid: int, after_id: int, limit: int, tail: int, *, text: bool
    ) -> tuple[dict[str, Any] | str, SessionInfo | None]:
        """The page of runs: read in a thread when small, else in a child process.

        From a child, as JSON text with ``text`` (nothing to add to it), else as
        the payload; with the session as read in this process (``None`` from a child).
        """
        handle, missing = self.store_handle, self.missing_store_message
        wanted = tail if tail >= 0 else limit

        def small_page() -> tuple[str, bool, dict[str, Any] | None, SessionInfo | None]:
            if wanted <= THREAD_RUNS:  # a live refresh: no count, no check
                store = opened_store(handle, sid, missing)  # session_state reads it
                state = store.session_state(sid)
                page = session_page(store, sid, after_id, limit, tail, state)
                return store.location, store.read_only, page, state.session
            store = session_store(handle, sid, missing)
            count = store.count_runs_after(sid, after_id=after_id, limit=wanted)
            if min(count, wanted) > THREAD_RUNS:
                return store.location, store.read_only, None, None
            state = store.session_state(sid)
            page = session_page(store, sid, after_id, limit, tail, state)
            return store.location, store.read_only, page, state.session

        location, read_only, page, session = await self.blocking(small_page)
        if page is not None:
            return page, session
        job = page_json if text else page_of
        return await self.workers.run(
            job, location, read_only, sid, after_id, limit, tail
        ), None

    @tornado.web.authenticated
    async def delete(self, session_id: str) -> None:
        """Delete the session, its runs and its kept reports; answer 204.

        A session still being written by a live process is refused (409): stop the
        cell first. A ``running`` session whose writer is gone is deleted.

        Raises:
            SessionRunningError: The session is running and its writer is alive (409).
            NotFoundError: No such session (404).
            StoreError: The store cannot be written (500).
        """
        sid = _session_id(session_id)
        handle, models = self.store_handle, self.view_models
        missing = self.missing_store_message
        reports = Path(self.nsight_config.reports_dir) / f"session_{sid}"

        def delete() -> None:
            store = session_store(handle, sid, missing)
            store.delete_stopped_session(sid)
            models.forget((store.location, sid))
            if reports.is_dir() and not reports.is_symlink():
                shutil.rmtree(reports, ignore_errors=True)

        await self.blocking(delete)
        self.set_status(204)
        self.finish()


class CompareHandler(NsightLabHandler):
    """``GET compare?a=<id>&b=<id>[&threshold=PCT]``: session b relative to a."""

    @tornado.web.authenticated
    async def get(self) -> None:
        """Answer the verdict table of session b against session a.

        Keys: ``schema_version, a, b, baseline, threshold, method, confidence,
        verdict, rows, scope`` (:func:`nsight_lab.viewmodel.compare.compare_payload`).

        One row per (annotation, metric, config) in both sessions, configs matched by
        equal dicts: ``annotation, metric, unit, config, config_index_a,
        config_index_b, n_a, n_b, median_a, median_b, mean_a, mean_b, std_a, std_b,
        ratio`` (``median_b / median_a``), ``ci_low, ci_high, significant, verdict``
        and what qualifies it: ``threshold, sm_clock_mhz_a, sm_clock_mhz_b,
        clock_differs, throttled_a, throttled_b, flagged, note``. ``verdict`` is
        b's overall verdict (:func:`nsight_lab.analysis.compare.session_verdict`);
        ``threshold`` (query, a percentage, default 0) widens "no change".
        ``scope`` says which regions and configs were compared, which only one
        session has, and ``reason`` when nothing could be. See
        :mod:`nsight_lab.analysis.compare` for the ratio, its interval and the
        verdicts. Computed in a child process.

        Raises:
            RequestError: ``a`` or ``b`` is missing or malformed (400).
            NotFoundError: Either session is unknown (404).
            StoreError: The store cannot be read (500).
        """
        ids = []
        for name in ("a", "b"):
            raw = self.get_query_argument(name, None)
            if not raw:
                msg = f"missing {name}; pass two session ids: compare?a=ID&b=ID"
                raise RequestError(msg)
            ids.append(parse_count(raw, name))
        a, b = ids
        from nsight_lab.viewmodel.compare import (  # noqa: PLC0415  (numpy: keeps the server start light)
            threshold_fraction,
        )

        threshold = threshold_fraction(self.get_query_argument("threshold", None))
        handle = self.store_handle
        missing = self.missing_store_message

        def check() -> tuple[str, bool]:
            store = session_store(handle, a, missing)
            session_store(handle, b, missing)
            return store.location, store.read_only

        location, read_only = await self.blocking(check)
        body = await self.workers.run(
            compare_json, location, read_only, a, b, threshold
        )
        self.reply_json(body)


def _session_id(raw: str) -> int:
    """Return the route's id; ids beyond SQLite's integer range are refused (400)."""
    return parse_count(raw, "session id")
