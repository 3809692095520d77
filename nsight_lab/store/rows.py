"""Row conversion and session-filter SQL of the run store (:mod:`.run_store`).

The column lists, ``sqlite3`` rows to and from
:class:`~nsight_lab.contract.records.RunRecord`
and :class:`~nsight_lab.contract.records.SessionInfo`, the session filters
(:class:`SessionFilters`) and their ``WHERE`` clause, and the ``IN (?, ...)`` list
of the per-session lookups (:func:`in_list`).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from typing import TYPE_CHECKING, Any, TypedDict

from nsight_lab.contract.records import (
    SESSION_STATUSES,
    RunRecord,
    SessionInfo,
    SessionStatus,
    Telemetry,
)
from nsight_lab.errors import QueryError

if TYPE_CHECKING:
    from collections.abc import Sequence


class SessionFilters(TypedDict, total=False):
    """The keyword filters of the session list; ``None`` or absent: no filter.

    Taken by ``RunStore.list_sessions``, ``count_sessions`` and ``list_session_page``.
    """

    notebook: str | None
    """Only sessions of this notebook path."""
    annotation: str | None
    """Only sessions with a region of exactly this name."""
    device: str | None
    """Only sessions on this device (GPU) name."""
    host: str | None
    """Only sessions written on this host."""
    user: str | None
    """Only sessions written by this login name."""
    backend: str | None
    """Only sessions measured by this backend id."""
    status: SessionStatus | None
    """Only sessions with this status."""
    since: str | None
    """Only sessions created at or after this ISO-8601 time (naive = UTC)."""
    until: str | None
    """Only sessions created before this ISO-8601 time (naive = UTC)."""
    text: str | None
    """Case-insensitive substring of name, notebook, cell source or a region."""


SESSION_FILTERS: tuple[str, ...] = tuple(SessionFilters.__annotations__)
"""The names of the :class:`SessionFilters`, in order."""


def in_list(ids: Sequence[int]) -> tuple[list[int], str]:
    """Return ``ids`` without repeats, in order, and their ``?, ?`` placeholders."""
    unique = list(dict.fromkeys(ids))
    return unique, ", ".join("?" * len(unique))


def check_page(limit: int | None, offset: int) -> None:
    """Check a page's ``limit`` (a count or ``None`` for all) and ``offset``.

    Raises:
        QueryError: Either is negative.
    """
    if limit is not None and limit < 0:
        msg = f"invalid limit {limit!r}; expected a count >= 0 or None for all"
        raise QueryError(msg)
    if offset < 0:
        msg = f"invalid offset {offset!r}; expected a count >= 0"
        raise QueryError(msg)


SESSION_COLUMNS = (
    "id, name, notebook, device, host, pid, backend, backend_reason, options_json,"
    " configs_json, runs_planned, cell_source, notes_json, status, error, created_at,"
    " finished_at, schema_version, user_name, uuid"
)
RUN_COLUMNS = (
    "id, session_id, config_index, config_json, run_index, annotation, duration_ns,"
    " backend, kernels_json, metrics_json, sm_clock_mhz, mem_clock_mhz, temperature_c,"
    " power_w, clock_event_reasons_json, throttled, thermal_wait_s, finished_at,"
    " series"
)


def session_from_row(row: Sequence[Any]) -> SessionInfo:
    """The session a ``SELECT {SESSION_COLUMNS} FROM sessions`` row holds."""
    (sid, name, notebook, device, host, pid, backend, backend_reason, options_json,
     configs_json, runs_planned, cell_source, notes_json, status, error, created_at,
     finished_at, schema_version, user_name, session_uuid) = row  # fmt: skip
    return SessionInfo(
        id=int(sid),
        status=status,
        backend=backend,
        created_at=created_at,
        name=name,
        notebook=notebook,
        device=device,
        host=host,
        pid=pid,
        user=user_name,
        backend_reason=backend_reason,
        options=json.loads(options_json),
        configs=json.loads(configs_json),
        runs_planned=int(runs_planned),
        cell_source=cell_source,
        notes=json.loads(notes_json),
        error=error,
        finished_at=finished_at,
        uuid=session_uuid or "",
        schema_version=int(schema_version),
    )


def run_to_row(r: RunRecord) -> tuple[Any, ...]:
    """The values of a new ``runs`` row (every column of RUN_COLUMNS but the id)."""
    return run_rows([r])[0]


def run_rows(records: Sequence[RunRecord]) -> list[tuple[Any, ...]]:
    """:func:`run_to_row` of each record; a text the batch repeats is encoded once.

    A session's records share their config's dict, and runs their kernel names and
    telemetry: encoded once per object in the batch (the objects live while the
    batch is written, so their ids are theirs), the writer thread's work per record
    halves (19 to 8-11 µs here) and so does its share of the GIL (issue 32).
    """
    texts: dict[int, str] = {}
    keep: list[object] = []  # every object whose id keys ``texts``, held alive

    def text(value: Any, *, as_list: bool) -> str:  # noqa: ANN401
        found = texts.get(id(value))
        if found is None:
            found = json.dumps(list(value) if as_list else dict(value), default=str)
            texts[id(value)] = found
            keep.append(value)
        return found

    rows = []
    for r in records:
        t = r.telemetry
        rows.append((
            r.session_id, r.config_index, text(r.config, as_list=False), r.run_index,
            r.annotation, r.duration_ns, r.backend, text(r.kernels, as_list=True),
            json.dumps(dict(r.metrics)), t.sm_clock_mhz, t.mem_clock_mhz,
            t.temperature_c, t.power_w, text(t.clock_event_reasons, as_list=True),
            int(t.throttled), r.thermal_wait_s, r.finished_at, r.series,
        ))  # fmt: skip
    return rows


@functools.lru_cache(maxsize=4096)
def _decoded(text: str) -> Any:  # noqa: ANN401  (a JSON value)
    """``json.loads(text)``, remembered: a session's runs repeat the same texts.

    Every run of a config stores the same config text, and most runs the same
    ``[]`` kernels and reasons (and ``{}`` metrics on the cpu backend): decoding
    each once halves what reading a run costs (issue 29: a million runs read
    for ``show``). Callers copy what they keep mutable (:func:`run_from_row`).
    """
    return json.loads(text)


def run_from_row(row: Sequence[Any]) -> RunRecord:
    """The record a ``SELECT {RUN_COLUMNS} FROM runs`` row holds.

    Its config and metrics are dicts of its own (copies of a remembered decode);
    kernels and reasons are tuples.
    """
    (_, sid, config_index, config_json, run_index, annotation, duration_ns, backend,
     kernels_json, metrics_json, sm_clock, mem_clock, temperature, power, reasons_json,
     throttled, thermal_wait_s, finished_at, series) = row  # fmt: skip
    return RunRecord(
        session_id=int(sid),
        config_index=int(config_index),
        config=dict(_decoded(config_json)),
        run_index=int(run_index),
        annotation=annotation,
        # SQLite stores NaN as NULL.
        duration_ns=float("nan") if duration_ns is None else float(duration_ns),
        backend=backend,
        kernels=tuple(_decoded(kernels_json)),
        metrics=dict(_decoded(metrics_json)),
        telemetry=Telemetry(
            sm_clock_mhz=sm_clock,
            mem_clock_mhz=mem_clock,
            temperature_c=temperature,
            power_w=power,
            clock_event_reasons=tuple(_decoded(reasons_json)),
            throttled=bool(throttled),
        ),
        thermal_wait_s=float(thermal_wait_s),
        finished_at=finished_at,
        series=None if series is None else bytes(series),
    )


def session_filter(
    filters: SessionFilters, like: str = "LIKE"
) -> tuple[str, list[Any]]:
    """Return the ``WHERE`` clause (or ``""``) and its parameters for the filters.

    ``like`` is the engine's case-insensitive ``LIKE`` (``Dialect.like``).

    Raises:
        QueryError: A filter is unknown or its value malformed (status, time).
    """
    _check_filters(filters)
    annotation, text = filters.get("annotation"), filters.get("text")
    since, until = filters.get("since"), filters.get("until")
    clauses: list[str] = []
    params: list[Any] = []
    for column, name in (
        ("notebook", "notebook"), ("device", "device"), ("backend", "backend"),
        ("status", "status"), ("host", "host"), ("user_name", "user"),
    ):  # fmt: skip
        value = filters.get(name)
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    if annotation is not None:
        clauses.append(
            "id IN (SELECT session_id FROM session_annotations WHERE annotation = ?)"
        )
        params.append(annotation)
    if since is not None:
        clauses.append("created_at >= ?")
        params.append(_iso_utc(since, "since"))
    if until is not None:
        clauses.append("created_at < ?")
        params.append(_iso_utc(until, "until"))
    if text:
        pattern = (
            "%"
            + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            + "%"
        )
        clauses.append(
            "(" + " OR ".join(
                f"{c} {like} ? ESCAPE '\\'"
                for c in ("name", "notebook", "cell_source", "annotations")
            ) + ")"
        )  # fmt: skip
        params.extend([pattern] * 4)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def _check_filters(filters: SessionFilters) -> None:
    """Refuse an unknown filter or status in one line (times: :func:`_iso_utc`)."""
    unknown = [name for name in filters if name not in SESSION_FILTERS]
    if unknown:
        msg = (
            f"unknown session filter {unknown[0]!r}; "
            f"expected one of {', '.join(SESSION_FILTERS)}"
        )
        raise QueryError(msg)
    text = filters.get("text")
    if text is not None and len(text) > MAX_TEXT_FILTER_CHARS:
        msg = (
            f"the text filter is {len(text):,} characters long; give at most "
            f"{MAX_TEXT_FILTER_CHARS:,} (a part of a name, notebook, region or cell)"
        )
        raise QueryError(msg)
    status = filters.get("status")
    if status is not None and status not in SESSION_STATUSES:
        cut = len(status) > _MAX_TIME_CHARS
        shown = status[:_MAX_TIME_CHARS] + "…" if cut else status
        msg = (
            f"invalid status filter {shown!r}; "
            f"expected one of {', '.join(map(repr, SESSION_STATUSES))}"
        )
        raise QueryError(msg)


_MAX_TIME_CHARS = 64
MAX_TEXT_FILTER_CHARS = 1_000
"""The longest ``text`` filter: a substring to look for, never a document. SQLite
refuses a ``LIKE`` pattern over 50,000 bytes ("pattern too complex"), and escaping
and UTF-8 can make a pattern several times its text."""
"""Longer time texts are refused before parsing (no ISO-8601 time is that long)."""
_UTC_MIN = dt.datetime.min.replace(tzinfo=dt.timezone.utc)
_UTC_MAX = dt.datetime.max.replace(tzinfo=dt.timezone.utc)


def _iso_utc(value: str, name: str) -> str:
    """Return ``value`` as the store's timestamp format (ISO-8601 UTC, microseconds).

    A time whose UTC equivalent lies beyond the years 1 to 9999 (e.g.
    ``9999-12-31T23:59:59-05:00``) is clamped to the first or last representable
    microsecond, so a filter at the ends of the range still means what it says.

    Raises:
        QueryError: ``value`` is not an ISO-8601 date or time (one line).
    """
    text = value.strip()
    try:
        if len(text) > _MAX_TIME_CHARS:
            raise ValueError(text)  # noqa: TRY301  (one message for every bad time)
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        cut = len(value) > _MAX_TIME_CHARS
        shown = value[:_MAX_TIME_CHARS] + "…" if cut else value
        msg = (
            f"invalid {name} time {shown!r}; expected an ISO-8601 date or time, "
            "e.g. '2025-06-01' or '2025-06-01T12:00:00+00:00'"
        )
        raise QueryError(msg) from exc
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    try:
        utc = when.astimezone(dt.timezone.utc)
    except OverflowError:  # beyond year 1 or 9999 once in UTC: clamp to that end
        offset = when.utcoffset() or dt.timedelta(0)
        utc = _UTC_MAX if offset < dt.timedelta(0) else _UTC_MIN
    return utc.isoformat(timespec="microseconds")
