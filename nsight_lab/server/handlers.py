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

Every handler that reads more than a few rows does it in a worker thread
(``run_in_executor``), so no request holds up another; figures, summaries and
comparisons of large sessions are built in a child process
(:mod:`nsight_lab.server._worker`). Nothing here computes a statistic: progress,
summary rows, figures and comparisons come from the core.

Downloads (export, ``.ncu-rep``) live in :mod:`nsight_lab.server.downloads`.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tornado.web

import nsight_lab
from nsight_lab.contract.records import (
    SCHEMA_VERSION,
    SessionInfo,
    record_to_json,
    session_to_json,
)
from nsight_lab.errors import OptionError
from nsight_lab.server._worker import (
    compare_json,
    in_worker,
    page_json_of,
    session_view_json,
)
from nsight_lab.server.base import NsightLabHandler, dumps, parse_count, session_store
from nsight_lab.store.run_store import SESSION_FILTERS
from nsight_lab.viewmodel.progress import session_progress

if TYPE_CHECKING:
    from nsight_lab.store.baselines import StoredVerdict
    from nsight_lab.store.run_store import RunStore

__all__ = [
    "FILTERS",
    "MAX_FIGURE_POINTS",
    "MAX_LIMIT",
    "MAX_RUN_LIMIT",
    "CompareHandler",
    "SessionHandler",
    "SessionsHandler",
    "StatusHandler",
    "session_page_json",
    "session_view",
    "sessions_page",
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
event loop; see :mod:`nsight_lab.server._worker`)."""
MAX_FIGURE_POINTS = 2_000
"""The most points of one per-run trace in the figures a session is served with."""


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
        from nsight_lab.contract.registry import registered  # the table only

        handle = self.store_handle
        self.reply(
            {
                "version": nsight_lab.__version__,
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
        session carries ``run_count``. Read in a worker thread.

        Raises:
            OptionError: A filter, ``limit`` or ``offset`` is malformed (400).
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


class SessionHandler(NsightLabHandler):
    """``GET`` and ``DELETE sessions/<id>``."""

    @tornado.web.authenticated
    async def get(self, session_id: str) -> None:
        """Answer one page of a session's runs, and its figures when asked.

        The body is ``{"schema_version", "session", "runs", "last_run_id",
        "next_after_id", "has_more"}``. ``session`` is the list's session object
        plus ``progress`` (:func:`nsight_lab.viewmodel.progress.session_progress`, over
        every stored run). Each run is
        :func:`~nsight_lab.contract.records.record_to_json`
        plus its store ``id``, in id order.

        Query arguments:

        - ``after_id=N``: only runs stored after run ``N`` (paging, live updates);
        - ``limit=N``: at most ``N`` runs (default 5,000, at most 20,000); when more
          follow, ``has_more`` is true: ask again with ``after_id=next_after_id``;
        - ``tail=N``: instead of the first page, the last ``N`` runs after
          ``after_id`` (at most 20,000; ``has_more`` is then false);
        - ``figures=1``: adds what the session view shows, built from every run
          (:func:`session_view`): ``"figures"`` (chart name -> plotly JSON, at most
          2,000 points per trace), ``"chart_order"`` (the order to draw them in)
          and ``"summary"`` (the summary table's rows, the widget's).

        ``last_run_id`` and ``next_after_id`` are the largest id returned (or
        ``after_id``). Everything is read and encoded in a worker thread, so a large
        session never holds up other requests.

        Raises:
            OptionError: An argument is malformed (400).
            NotFoundError: No such session (404).
            StoreError: The store cannot be read (500).
        """
        sid = _session_id(session_id)
        after_id = self.count_argument("after_id", 0)
        limit = self.count_argument("limit", DEFAULT_RUN_LIMIT, maximum=MAX_RUN_LIMIT)
        tail = self.count_argument("tail", -1, maximum=MAX_RUN_LIMIT)
        if tail >= 0 and self.get_query_argument("limit", None):
            msg = "pass either limit (first runs) or tail (last runs), not both"
            raise OptionError(msg)
        with_figures = self.flag_argument("figures")
        handle = self.store_handle
        missing = self.missing_store_message

        wanted = tail if tail >= 0 else limit

        def small_page() -> tuple[RunStore, str | None]:
            """The page when it is small (read here), else ``None`` (for a child)."""
            store = session_store(handle, sid, missing)
            count = store.count_runs_after(sid, after_id=after_id, limit=wanted)
            if min(count, wanted) > THREAD_RUNS:
                return store, None
            return store, session_page_json(store, sid, after_id, limit, tail)

        store, body = await self.blocking(small_page)
        if body is None:  # thousands of runs: built in a child process
            body = await in_worker(
                page_json_of, store.location, store.read_only, sid, after_id, limit,
                tail,
            )  # fmt: skip
        if with_figures:  # built in a child process: see nsight_lab.server._worker
            view = await in_worker(
                session_view_json, store.location, store.read_only, sid,
                MAX_FIGURE_POINTS,
            )  # fmt: skip
            body = f"{body[:-1]}, {view[1:]}"
        self.reply_json(body)

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
        handle = self.store_handle
        missing = self.missing_store_message
        reports = Path(self.nsight_config.reports_dir) / f"session_{sid}"

        def delete() -> None:
            store = session_store(handle, sid, missing)
            store.delete_stopped_session(sid)
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
        verdict, rows, scope``.

        One row per (annotation, metric, config) in both sessions, configs matched by
        equal dicts: ``annotation, metric, unit, config, config_index_a,
        config_index_b, n_a, n_b, median_a, median_b, mean_a, mean_b, std_a, std_b,
        ratio`` (``median_b / median_a``), ``ci_low, ci_high, significant, verdict``
        and what qualifies it: ``threshold, sm_clock_mhz_a, sm_clock_mhz_b,
        clock_differs, throttled_a, throttled_b, flagged, note``. ``verdict`` is
        b's
        overall verdict (:func:`nsight_lab.analysis.compare.session_verdict`);
        ``threshold``
        (query, a percentage, default 0) widens "no change".
        ``scope`` says which regions and configs were compared, which only one
        session has, and ``reason`` when nothing could be. See
        :mod:`nsight_lab.analysis.compare` for the ratio, its interval and the verdicts.
        Computed in a worker thread.

        Raises:
            OptionError: ``a`` or ``b`` is missing or malformed (400).
            NotFoundError: Either session is unknown (404).
            StoreError: The store cannot be read (500).
        """
        ids = []
        for name in ("a", "b"):
            raw = self.get_query_argument(name, None)
            if not raw:
                msg = f"missing {name}; pass two session ids: compare?a=ID&b=ID"
                raise OptionError(msg)
            ids.append(parse_count(raw, name))
        a, b = ids
        threshold = _threshold(self.get_query_argument("threshold", None))
        handle = self.store_handle
        missing = self.missing_store_message

        def check() -> RunStore:
            store = session_store(handle, a, missing)
            session_store(handle, b, missing)
            return store

        store = await self.blocking(check)
        body = await in_worker(
            compare_json, store.location, store.read_only, a, b, threshold
        )
        self.reply_json(body)


def sessions_page(
    store: RunStore, filters: dict[str, Any], *, limit: int, offset: int
) -> dict[str, Any]:
    """Return the ``GET sessions`` body but ``schema_version``: one page of the list.

    Each session is :func:`~nsight_lab.contract.records.session_to_json` plus its stored
    ``run_count`` (records: one per region per run), ``runs_done`` (runs: one
    per config and repetition, what ``runs_planned_total`` counts) and its
    ``regions`` (names, sorted); no progress (per session, in ``GET
    sessions/<id>``), so the list stays a few indexed reads.

    Raises:
        OptionError: A filter value is malformed.
        StoreError: The store cannot be read.
    """
    total = store.count_sessions(**filters)
    sessions = store.list_sessions(**filters, limit=limit, offset=offset)
    ids = [s.id for s in sessions]
    counts = store.run_counts(ids)
    done = store.runs_done_counts(ids)
    regions = store.regions_of(ids)
    verdicts = store.session_verdicts(ids)
    return {
        "total": total,
        "sessions": [
            {
                **_session_json(s, counts.get(s.id, 0), verdicts.get(s.id)),
                "runs_done": done.get(s.id, 0),
                "regions": regions.get(s.id, []),
            }
            for s in sessions
        ],
    }


def session_page_json(
    store: RunStore, session_id: int, after_id: int, limit: int, tail: int
) -> str:
    """Return the ``GET sessions/<id>`` body without figures, as JSON text.

    ``tail >= 0`` asks for the last ``tail`` runs after ``after_id``, else the first
    ``limit``.

    Raises:
        NotFoundError: No such session.
        StoreError: The store cannot be read.
    """
    session = store.get_session(session_id)
    if tail >= 0:
        pairs = store.runs_tail(session_id, after_id=after_id, limit=tail)
        has_more = False
    else:
        pairs = store.runs_with_ids(session_id, after_id=after_id, limit=limit + 1)
        has_more = len(pairs) > limit
        del pairs[limit:]
    count = store.run_counts([session_id]).get(session_id, 0)
    verdict = store.session_verdicts([session_id]).get(session_id)
    done, newest = store.runs_done(session_id)
    progress = session_progress(session, runs_done_total=done, newest=newest)
    last = pairs[-1][0] if pairs else after_id
    return dumps(
        {
            "schema_version": SCHEMA_VERSION,
            "session": {
                **_session_json(session, count, verdict),
                "progress": progress.to_json(),
            },
            "runs": [{**record_to_json(r), "id": run_id} for run_id, r in pairs],
            "last_run_id": last,
            "next_after_id": last,
            "has_more": has_more,
        }
    )


def _session_id(raw: str) -> int:
    """Return the route's id; ids beyond SQLite's integer range are refused (400)."""
    return parse_count(raw, "session id")


def _session_json(
    session: SessionInfo, run_count: int, verdict: StoredVerdict | None = None
) -> dict[str, Any]:
    """A session as the REST payloads send it: its run count, verdict and report.

    ``has_report``: its backend keeps an Nsight Compute report that
    ``GET sessions/<id>/report`` serves (the registry's ``keeps_report``), so the
    front end offers the download without knowing any backend by name.
    """
    from nsight_lab.contract.registry import keeps_report  # the registry table only

    return {
        **session_to_json(session),
        "run_count": run_count,
        "baseline_verdict": None if verdict is None else verdict.to_json(),
        "has_report": keeps_report(session.backend),
    }


def _threshold(raw: str | None) -> float:
    """The ``threshold`` query argument (a percentage) as a fraction.

    Absent: the comparison's practical threshold
    (:data:`nsight_lab.analysis.compare.DEFAULT_THRESHOLD`).

    Raises:
        OptionError: Not a number from 0 to 99 (400).
    """
    if raw is None or raw == "":
        from nsight_lab.analysis.compare import DEFAULT_THRESHOLD

        return DEFAULT_THRESHOLD
    from nsight_lab.analysis.baselines import check_threshold_pct
    from nsight_lab.options import shown

    try:
        value = float(raw)
    except ValueError:
        msg = f"invalid threshold {shown(raw)}; expected a percentage, e.g. 2"
        raise OptionError(msg) from None
    return check_threshold_pct(value, "threshold")


def session_view(
    store: RunStore, session_id: int, *, max_points: int = MAX_FIGURE_POINTS
) -> dict[str, Any]:
    """Return what the session view shows beside the runs, built from every run.

    ``{"figures", "chart_order", "summary", "counters", "verdicts"}``: the figures of
    :func:`nsight_lab.figures.figures_to_json` (the one assembler, also the
    widget's; roofline and traffic where the device's roofs are known: datasheet
    table, else peaks measured earlier and cached in ``store``), the order to draw
    them in (:data:`nsight_lab.figures.CHART_ORDER`), and the summary table's rows
    (:func:`nsight_lab.results.summary_rows` of the stored results, the rows the
    widget shows), the other metrics (:func:`nsight_lab.results.summary_counters`,
    all-zero ones flagged), and the verdict table against the baseline the session was
    profiled with (:func:`nsight_lab.analysis.baselines.verdict_table` with its kept
    threshold; null without one, or once that baseline's session is deleted).
    Every statistic uses all runs; each per-run trace is thinned to at most
    ``max_points`` points. Heavy for large sessions: the server runs it in
    a child process (:func:`nsight_lab.server._worker.session_view_json`); plotly
    and pandas are imported here, on the first request that needs them.

    Raises:
        NotFoundError: No such session.
        StoreError: The store cannot be read.
    """
    from nsight_lab.contract.registry import times_the_host  # the registry table only
    from nsight_lab.figures import CHART_ORDER, figures_to_json
    from nsight_lab.results import stored_results, summary_counters, summary_rows
    from nsight_lab.roofline.peaks import known_peaks

    session = store.get_session(session_id)
    records = store.runs(session_id)
    peaks = known_peaks(store, session.device, cpu=times_the_host(session.backend))
    kept = store.session_verdicts([session_id]).get(session_id)
    verdicts = None
    if kept is not None and kept.baseline_session_id is not None:
        from nsight_lab.analysis.baselines import table_of

        verdicts = table_of(
            store.runs(kept.baseline_session_id),
            records,
            a=kept.baseline_session_id,
            b=session_id,
            baseline=kept.baseline_name,
            threshold=kept.threshold,
        ).to_json()
    results = stored_results(records, session, peaks)
    return {
        "figures": figures_to_json(records, peaks, max_points=max_points),
        "chart_order": list(CHART_ORDER),
        "summary": summary_rows(results),
        "counters": summary_counters(results),
        "verdicts": verdicts,
    }
