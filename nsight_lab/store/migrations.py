"""Ordered schema steps of the run store (see :mod:`nsight_lab.store.run_store`).

``STEPS[i]`` takes a store from schema version ``i`` to ``i + 1``; the version lives
in ``PRAGMA user_version`` (PostgreSQL: the ``nsight_lab_schema`` table);
:func:`upgrade` runs the missing steps.
The same steps build both engines' schemas: write them in SQLite's spelling with the
vocabulary :mod:`nsight_lab.store.dialect` translates (types INTEGER, REAL, TEXT, BLOB;
``INTEGER PRIMARY KEY AUTOINCREMENT`` ids; no SQLite-only functions or defaults), and
the store suite runs them on both (tests/store/test_run_store.py).
:func:`upgrade` runs the missing steps of an older store in one transaction, so a
failed upgrade leaves the store as it was.
Never edit a released step: append a new one and bump ``records.SCHEMA_VERSION``.
A step may also hold a function, called with the open connection inside the same
transaction, for what SQL cannot say alike on both engines (filling new columns with
values made in Python); it must use only ``?`` parameters and portable SQL.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from typing import TYPE_CHECKING, Any, Protocol, cast

from nsight_lab.errors import StoreError
from nsight_lab.store import postgres as pg

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from nsight_lab.store.dialect import Connection, Dialect

logger = logging.getLogger(__name__)


class _Connection(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Any: ...  # noqa: ANN401


Step = tuple["str | Callable[[Any], None]", ...]

_STATUSES = "'running', 'completed', 'failed', 'interrupted'"

_STEP_1: tuple[str, ...] = (
    f"""
    CREATE TABLE sessions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT,
        notebook TEXT,
        device TEXT,
        host TEXT,
        pid INTEGER,
        pid_token TEXT,
        backend TEXT NOT NULL,
        backend_reason TEXT NOT NULL DEFAULT '',
        options_json TEXT NOT NULL DEFAULT '{{}}',
        configs_json TEXT NOT NULL DEFAULT '[]',
        runs_planned INTEGER NOT NULL DEFAULT 0,
        cell_source TEXT NOT NULL DEFAULT '',
        notes_json TEXT NOT NULL DEFAULT '[]',
        status TEXT NOT NULL CHECK (status IN ({_STATUSES})),
        error TEXT,
        created_at TEXT NOT NULL,
        finished_at TEXT,
        schema_version INTEGER NOT NULL,
        run_count INTEGER NOT NULL DEFAULT 0,
        annotations TEXT NOT NULL DEFAULT ''
    )
    """,
    "CREATE INDEX sessions_created_at ON sessions (created_at)",
    "CREATE INDEX sessions_status ON sessions (status)",
    "CREATE INDEX sessions_notebook ON sessions (notebook)",
    "CREATE INDEX sessions_device ON sessions (device)",
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        config_index INTEGER NOT NULL,
        config_json TEXT NOT NULL,
        run_index INTEGER NOT NULL,
        annotation TEXT NOT NULL,
        duration_ns REAL,
        backend TEXT NOT NULL,
        kernels_json TEXT NOT NULL DEFAULT '[]',
        metrics_json TEXT NOT NULL DEFAULT '{}',
        sm_clock_mhz REAL,
        mem_clock_mhz REAL,
        temperature_c REAL,
        power_w REAL,
        clock_event_reasons_json TEXT NOT NULL DEFAULT '[]',
        throttled INTEGER NOT NULL DEFAULT 0,
        thermal_wait_s REAL NOT NULL DEFAULT 0,
        finished_at TEXT NOT NULL
    )
    """,
    "CREATE INDEX runs_session_id ON runs (session_id, id)",
    "CREATE INDEX runs_annotation ON runs (annotation)",
    # One row per (session, annotation): an exact, indexed annotation filter for the
    # session list that never touches ``runs``.
    """
    CREATE TABLE session_annotations (
        session_id INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        annotation TEXT NOT NULL,
        PRIMARY KEY (session_id, annotation)
    ) WITHOUT ROWID
    """,
    (
        "CREATE INDEX session_annotations_annotation"
        " ON session_annotations (annotation, session_id)"
    ),
    """
    CREATE TABLE cache (
        key TEXT PRIMARY KEY,
        value_json TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )
    """,
    # A counter bumped by every write, so pollers also see status changes and deletes.
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    "INSERT INTO meta (key, value) VALUES ('change_seq', 0)",
)

_STEP_2: tuple[str, ...] = (
    # The pm backend's counter timeline of each region and run (a few KB at most,
    # packed float32: nsight_lab/backends/pm/series.py); NULL for other backends.
    "ALTER TABLE runs ADD COLUMN series BLOB",
)

_STEP_3: tuple[str, ...] = (
    # Named baselines: a name that points at one session, set again to move it
    # (``%nsight baseline set NAME [ID]``, ``nsight-lab baseline set``).
    """
    CREATE TABLE baselines (
        name TEXT PRIMARY KEY,
        session_id INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        set_at TEXT NOT NULL
    )
    """,
    "CREATE INDEX baselines_session_id ON baselines (session_id)",
    # The overall verdict of a session profiled with ``--baseline NAME``, kept at the
    # time of the profile (a baseline moved later does not rewrite history), so the
    # session list shows a regression badge with one indexed join, no comparison.
    """
    CREATE TABLE session_verdicts (
        session_id INTEGER PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
        baseline_name TEXT NOT NULL,
        baseline_session_id INTEGER REFERENCES sessions (id) ON DELETE SET NULL,
        verdict TEXT,
        threshold REAL NOT NULL DEFAULT 0,
        computed_at TEXT NOT NULL
    )
    """,
)

_STEP_4: tuple[str, ...] = (
    # Who profiled: the history of a team store filters by host, user and GPU
    # (``device``). ``user`` is a reserved word in PostgreSQL, hence ``user_name``.
    "ALTER TABLE sessions ADD COLUMN user_name TEXT",
    "CREATE INDEX sessions_host ON sessions (host)",
    "CREATE INDEX sessions_user_name ON sessions (user_name)",
)


def new_session_uuid() -> str:
    """A new session's identity: a random UUID, kept wherever the session goes."""
    return str(uuid.uuid4())


def _give_sessions_uuids(conn: _Connection) -> None:
    """Give every session stored before schema 5 a UUID of its own."""
    ids = [int(row[0]) for row in conn.execute("SELECT id FROM sessions").fetchall()]
    for sid in ids:
        conn.execute(
            "UPDATE sessions SET uuid = ? WHERE id = ?", (new_session_uuid(), sid)
        )


_STEP_5: Step = (
    # An identity that survives a change of store (issue 22): ids are per-store
    # numbers, so a saved output's "Open in nsight-lab" link carries the UUID too, and
    # the lab says so when its store holds no such session, or another profile under
    # that id.
    "ALTER TABLE sessions ADD COLUMN uuid TEXT",
    _give_sessions_uuids,
    "CREATE UNIQUE INDEX sessions_uuid ON sessions (uuid)",
)

_STEP_6: Step = (
    # Each session's complete runs (distinct config and run index; a run of three
    # regions is three records) kept beside it, so the session list never counts
    # runs (issue 22: a page of 20 beside a 130,000-run session read ~100 ms). The
    # store's writer adds each batch's new run keys here and their number to
    # ``sessions.runs_done`` in the batch's own transaction: the count is always the
    # runs committed (RunStore.add_runs).
    """
    CREATE TABLE session_runs (
        session_id INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        config_index INTEGER NOT NULL,
        run_index INTEGER NOT NULL,
        PRIMARY KEY (session_id, config_index, run_index)
    ) WITHOUT ROWID
    """,
    (
        "INSERT INTO session_runs (session_id, config_index, run_index)"
        " SELECT DISTINCT session_id, config_index, run_index FROM runs"
    ),
    "ALTER TABLE sessions ADD COLUMN runs_done INTEGER NOT NULL DEFAULT 0",
    (
        "UPDATE sessions SET runs_done = (SELECT count(*) FROM session_runs"
        " WHERE session_runs.session_id = sessions.id)"
        " WHERE id IN (SELECT session_id FROM session_runs)"
    ),
)

STEPS: list[Step] = [_STEP_1, _STEP_2, _STEP_3, _STEP_4, _STEP_5, _STEP_6]
"""``STEPS[i]``: the SQL statements that upgrade schema version ``i`` to ``i + 1``."""


def latest_version() -> int:
    """Return the version the steps lead to (equals ``records.SCHEMA_VERSION``)."""
    return len(STEPS)


def schema_version(conn: Connection, dialect: Dialect) -> int:
    """Return the schema version the store records; 0 for an empty database."""
    if dialect.postgres:
        return pg.schema_version(cast("pg.PgConnection", conn))
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def upgrade(
    conn: Connection, dialect: Dialect, where: str,
    errors: tuple[type[Exception], ...],
) -> None:  # fmt: skip
    """Bring the store on ``conn`` to :func:`latest_version`, in one transaction.

    On PostgreSQL one process creates or upgrades the tables while the others wait
    for its lock; each checks the version again once it holds it.

    Args:
        conn: The store's write connection (autocommit).
        dialect: Its engine's dialect.
        where: The store, for messages.
        errors: The engine's error classes (a failed step rolls back).

    Raises:
        StoreError: The store is newer than this nsight-lab, or a step failed
            (nothing was changed).
    """
    target = latest_version()
    version = schema_version(conn, dialect)
    if version == target:
        return
    if version > target:
        msg = (
            f"the run store {where!r} has schema version {version}, newer "
            f"than this nsight-lab understands ({target}); upgrade nsight-lab: "
            "pip install -U nsight-lab"
        )
        raise StoreError(msg)
    if dialect.postgres:
        conn.execute("BEGIN")
        conn.execute("SELECT pg_advisory_xact_lock(?, ?)", pg.MIGRATION_LOCK)
    else:
        conn.execute("BEGIN IMMEDIATE")
    try:
        # Another process may have upgraded it while we waited for the lock.
        version = schema_version(conn, dialect)
        for step in STEPS[version:target]:
            for statement in step:
                if callable(statement):  # values made in Python
                    statement(conn)
                else:
                    conn.execute(dialect.ddl(statement))
        if dialect.postgres:
            pg.set_schema_version(cast("pg.PgConnection", conn), target)
        else:
            conn.execute(f"PRAGMA user_version = {target}")
        conn.execute("COMMIT")
    except errors as exc:
        with contextlib.suppress(*errors):
            conn.execute("ROLLBACK")
        msg = (
            f"cannot upgrade the run store {where!r} from schema version "
            f"{version} to {target}: {exc}; nothing was changed; report this at "
            "https://github.com/nsight-lab/nsight-lab/issues"
        )
        raise StoreError(msg) from exc
    logger.info("[nsight-lab] upgraded %s to schema %d", where, target)
