r"""REST handlers of the nsight-lab server extension; every verb is authenticated.

Routes (below ``<base_url>/nsight-lab/api/``; ids match ``\d+`` in the route):

- ``GET status``: version, store path, whether it exists.
- ``GET sessions``: filtered, paged list, newest first.
- ``GET sessions/<id>``: one session and its runs (``after_id``, ``figures``).
- ``DELETE sessions/<id>``: the session, its runs and its kept reports.
- ``GET compare?a=<id>&b=<id>``: ratios b/a with 95% intervals.

Downloads (export, ``.ncu-rep``) live in :mod:`nsight_lab.server.downloads`.
"""

from __future__ import annotations

import importlib
import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tornado.web
from tornado.ioloop import IOLoop

import nsight_lab
from nsight_lab.errors import OptionError
from nsight_lab.records import (
    RunRecord,
    SessionInfo,
    record_to_json,
    session_to_json,
)
from nsight_lab.server.base import NsightLabHandler, parse_count
from nsight_lab.server.compare import CONFIDENCE, METHOD, compare_runs
from nsight_lab.store import SESSION_FILTERS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.store import RunStore

__all__ = [
    "FILTERS",
    "MAX_LIMIT",
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


class StatusHandler(NsightLabHandler):
    """``GET /nsight-lab/api/status``: the version and where the run store lives."""

    @tornado.web.authenticated
    def get(self) -> None:
        """Answer the nsight-lab version, the store path and whether it exists."""
        handle = self.store_handle
        self.reply(
            {
                "version": nsight_lab.__version__,
                "store_path": str(handle.path),
                "store_exists": handle.exists(),
            }
        )


class SessionsHandler(NsightLabHandler):
    """``GET sessions``: the sessions, filtered and paged, newest first."""

    @tornado.web.authenticated
    def get(self) -> None:
        """Answer ``{"schema_version", "total", "sessions"}``.

        Query arguments: the :data:`FILTERS` (``since``/``until`` ISO-8601, naive =
        UTC; ``status`` one of the session statuses; ``text`` a substring of name,
        notebook, cell source or a region), ``limit`` (default 50, at most 500) and
        ``offset``. ``total`` counts every match; each session carries ``run_count``.

        Raises:
            OptionError: A filter, ``limit`` or ``offset`` is malformed (400).
            StoreError: The store cannot be read (500).
        """
        filters: dict[str, Any] = {
            name: self.get_query_argument(name, None) or None for name in FILTERS
        }
        limit = self.count_argument("limit", DEFAULT_LIMIT, maximum=MAX_LIMIT)
        offset = self.count_argument("offset", 0)
        store = self.any_store()
        total = store.count_sessions(**filters)
        sessions = store.list_sessions(**filters, limit=limit, offset=offset)
        counts = store.run_counts([s.id for s in sessions])
        self.reply(
            {
                "total": total,
                "sessions": [_session_json(s, counts.get(s.id, 0)) for s in sessions],
            }
        )


class SessionHandler(NsightLabHandler):
    """``GET`` and ``DELETE sessions/<id>``."""

    @tornado.web.authenticated
    async def get(self, session_id: str) -> None:
        """Answer ``{"schema_version", "session", "runs", "last_run_id"}``.

        Each run is :func:`~nsight_lab.records.record_to_json` plus its store ``id``.
        ``?after_id=N`` returns only runs stored after run ``N`` (for live updates);
        ``last_run_id`` is the largest id returned (or ``after_id``). ``?figures=1``
        adds ``"figures"``: the session's charts built from all its runs.

        Raises:
            OptionError: ``after_id`` or ``figures`` is malformed (400).
            NotFoundError: No such session (404).
            StoreError: The store cannot be read (500).
        """
        sid = _session_id(session_id)
        after_id = self.count_argument("after_id", 0)
        with_figures = self.flag_argument("figures")
        store = self.session_store(sid)
        session = store.get_session(sid)
        pairs = store.runs_with_ids(sid, after_id=after_id)
        count = store.run_counts([sid]).get(sid, 0)
        payload: dict[str, Any] = {
            "session": _session_json(session, count),
            "runs": [{**record_to_json(r), "id": run_id} for run_id, r in pairs],
            "last_run_id": pairs[-1][0] if pairs else after_id,
        }
        if with_figures:
            records = (
                [r for _, r in pairs] if after_id == 0 else store.runs(sid)
            )  # figures always show the whole session
            loop = IOLoop.current()
            payload["figures"] = await loop.run_in_executor(
                None, _session_figures, records, session, store
            )
        self.reply(payload)

    @tornado.web.authenticated
    def delete(self, session_id: str) -> None:
        """Delete the session, its runs and its kept reports; answer 204.

        Raises:
            NotFoundError: No such session (404).
            StoreError: The store cannot be written (500).
        """
        sid = _session_id(session_id)
        store = self.session_store(sid)
        store.delete_session(sid)
        reports = Path(self.nsight_config.reports_dir) / f"session_{sid}"
        if reports.is_dir() and not reports.is_symlink():
            shutil.rmtree(reports, ignore_errors=True)
        self.set_status(204)
        self.finish()


class CompareHandler(NsightLabHandler):
    """``GET compare?a=<id>&b=<id>``: session b relative to session a."""

    @tornado.web.authenticated
    def get(self) -> None:
        """Answer ``{"schema_version", "a", "b", "method", "confidence", "rows"}``.

        One row per (annotation, metric, config) in both sessions, configs matched by
        equal dicts: ``annotation, metric, config, config_index_a, config_index_b,
        n_a, n_b, mean_a, mean_b, std_a, std_b, ratio`` (``mean_b / mean_a``),
        ``ci_low, ci_high, df, significant``; see
        :mod:`nsight_lab.server.compare` for the interval.

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
        store = self.session_store(a)
        self.session_store(b)
        sessions = [store.get_session(a), store.get_session(b)]
        counts = store.run_counts(ids)
        rows = compare_runs(store.runs(a), store.runs(b))
        self.reply(
            {
                "a": _session_json(sessions[0], counts.get(a, 0)),
                "b": _session_json(sessions[1], counts.get(b, 0)),
                "method": METHOD,
                "confidence": CONFIDENCE,
                "rows": [row.to_json() for row in rows],
            }
        )


def _session_id(raw: str) -> int:
    """Return the route's id; ids beyond SQLite's integer range are refused (400)."""
    return parse_count(raw, "session id")


def _session_json(session: SessionInfo, run_count: int) -> dict[str, Any]:
    return {**session_to_json(session), "run_count": run_count}


def _session_figures(
    records: Sequence[RunRecord], session: SessionInfo, store: RunStore | None = None
) -> dict[str, Any]:
    """Return the session's figures as plotly JSON by chart name (runs in a thread).

    Built by :func:`nsight_lab.figures.figures_to_json` (the one chart
    implementation): ``duration`` and ``clocks`` always, ``roofline`` and ``traffic``
    where the device's roofs are known (datasheet table, else peaks measured earlier
    and cached in ``store``) and regions have FLOP and byte figures. Imported lazily,
    so the server loads plotly only once a client asks for figures; answers ``{}``
    while that module or function is missing.
    """
    # TODO(lead): keep in step with figures.py while its API settles.  # noqa: FIX002, TD003
    try:
        figures = importlib.import_module("nsight_lab.figures")
    except ModuleNotFoundError as exc:
        if exc.name != "nsight_lab.figures":
            raise
        return {}
    build = getattr(figures, "figures_to_json", None)
    if build is None:
        return {}
    peaks = None
    if store is not None and session.device:
        from nsight_lab.peaks import known_peaks

        peaks = known_peaks(store, session.device, cpu=session.backend == "cpu")
    built: dict[str, Any] = build(list(records), peaks)
    return built
