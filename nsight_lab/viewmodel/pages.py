"""The server's payloads read from the store: session lists, pages of runs, comparisons.

What ``GET sessions`` and ``GET sessions/<id>`` (without its view) answer, built
here so the HTTP layer only parses, authorises, calls and serialises (``GET
compare``'s is :mod:`nsight_lab.viewmodel.compare`). Every function returns a
JSON-safe dict. Light to import: the Jupyter server loads it at start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsight_lab.contract.progress import session_progress
from nsight_lab.contract.records import (
    SCHEMA_VERSION,
    SessionInfo,
    record_to_json,
    session_to_json,
)
from nsight_lab.contract.registry import keeps_report
from nsight_lab.store.listing import LISTED_CONFIGS

if TYPE_CHECKING:
    from nsight_lab.store.baselines import StoredVerdict
    from nsight_lab.store.run_store import RunStore
    from nsight_lab.store.sessions import SessionState

__all__ = ["session_json", "session_page", "sessions_page"]


def session_json(
    session: SessionInfo,
    run_count: int,
    verdict: StoredVerdict | None = None,
    config_count: int | None = None,
) -> dict[str, Any]:
    """A session as the REST payloads send it: its run count, verdict and report.

    ``configs`` are the first :data:`~nsight_lab.store.listing.LISTED_CONFIGS`
    only and ``config_count`` says how many there are (``len(session.configs)``
    unless given: a listed session holds its first configs only), so no session
    payload grows with the grid; ``runs_per_config`` is counted over every config.

    ``has_report``: its backend keeps an Nsight Compute report that
    ``GET sessions/<id>/report`` serves (the registry's ``keeps_report``), so the
    front end offers the download without knowing any backend by name.

    Raises:
        Nothing.
    """
    count = len(session.configs) if config_count is None else config_count
    return {
        **session_to_json(session),
        "configs": session.configs[:LISTED_CONFIGS],
        "config_count": count,
        "runs_per_config": session.runs_planned // max(count, 1),
        "run_count": run_count,
        "baseline_verdict": None if verdict is None else verdict.to_json(),
        "has_report": keeps_report(session.backend),
    }


def sessions_page(
    store: RunStore, filters: dict[str, Any], *, limit: int, offset: int
) -> dict[str, Any]:
    """Return the ``GET sessions`` body but ``schema_version``: one page of the list.

    Each session is :func:`~nsight_lab.contract.records.session_to_json` plus its stored
    ``run_count`` (records: one per region per run), ``runs_done`` (runs: one
    per config and repetition, what ``runs_planned_total`` counts) and its
    ``regions`` (names, sorted); no progress (per session, in ``GET
    sessions/<id>``), so the list stays two indexed reads
    (:meth:`~nsight_lab.store.run_store.RunStore.list_session_page`).

    Raises:
        RequestError: A filter value is malformed.
        StoreError: The store cannot be read.
    """
    page = store.list_session_page(**filters, limit=limit, offset=offset)
    return {
        "total": page.total,
        "sessions": [
            {
                **session_json(
                    row.session, row.run_count, row.verdict, row.config_count
                ),
                "runs_done": row.runs_done,
                "regions": row.regions,
            }
            for row in page.sessions
        ],
    }


def session_page(  # noqa: PLR0913, PLR0917  (a page's four arguments, a state read)
    store: RunStore,
    session_id: int,
    after_id: int,
    limit: int,
    tail: int,
    state: SessionState | None = None,
) -> dict[str, Any]:
    """Return the ``GET sessions/<id>`` body without its view: a page of runs.

    ``tail >= 0`` asks for the last ``tail`` runs after ``after_id``, else the first
    ``limit``. ``state``: the session as already read (``store.session_state``).

    Raises:
        NotFoundError: No such session.
        StoreError: The store cannot be read.
    """
    state = store.session_state(session_id) if state is None else state
    if tail in {0, 1}:  # a live refresh or a view: the newest run, read with it
        newest = state.newest_run
        pairs = [newest] if tail and newest is not None and newest[0] > after_id else []
        has_more = False
    elif tail >= 0:
        pairs = store.runs_tail(session_id, after_id=after_id, limit=tail)
        has_more = False
    else:
        pairs = store.runs_with_ids(session_id, after_id=after_id, limit=limit + 1)
        has_more = len(pairs) > limit
        del pairs[limit:]
    progress = session_progress(
        state.session, runs_done_total=state.runs_done, newest=state.newest
    )
    last = pairs[-1][0] if pairs else after_id
    return {
        "schema_version": SCHEMA_VERSION,
        "session": {
            **session_json(state.session, state.run_count, state.verdict),
            "progress": progress.to_json(),
        },
        "runs": [{**record_to_json(r), "id": run_id} for run_id, r in pairs],
        "last_run_id": last,
        "next_after_id": last,
        "has_more": has_more,
    }
