"""The PostgreSQL engine of the run store: connections, schema version, liveness.

Chosen by a ``postgresql://`` (or ``postgres://``) location, usually from
``$NSIGHT_LAB_STORE`` (:func:`nsight_lab.paths.store_location`). Needs PostgreSQL 15
or later and psycopg 3 (``pip install nsight-lab[postgres]``), imported only here and
only when such a store is opened.

Liveness. On SQLite a running session's writer is a local process, told alive by its
pid (:mod:`nsight_lab.store.liveness`). With PostgreSQL the writer may be a kernel on
another host, whose pid means nothing here. So the writer's *database connection*
stands for it: the write connection that creates a session takes a session-level
advisory lock ``(LOCK_SPACE, session id)`` in the same transaction, and gives it back
once the session is finished. A process that dies, however it dies, closes its
connection; PostgreSQL ends that backend and releases its locks, so a ``running``
session whose lock nobody holds (``pg_locks``) has lost its writer and is marked
``interrupted``. Chosen over a heartbeat column because it needs no timer thread in
the kernel, no clock agreement between hosts and no staleness threshold to tune: a
killed kernel is seen at once (a host that vanishes without closing its sockets is
seen when TCP keepalive gives up on it). Over ``pg_stat_activity`` because a backend
pid recorded per session could be reused by a later connection, and reading other
users' activity needs privileges. Caveat: a pooler in transaction mode (pgbouncer)
does not keep session locks; point ``NSIGHT_LAB_STORE`` at PostgreSQL itself.

Live updates: every write transaction ends with ``pg_notify(CHANNEL, payload)``,
delivered to listeners when (and only if) it commits: the server extension LISTENs
instead of polling (:mod:`nsight_lab.server.events`).
"""

from __future__ import annotations

import json
import urllib.parse
from typing import TYPE_CHECKING, Any

from nsight_lab.errors import StoreError
from nsight_lab.store.dialect import POSTGRES

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import psycopg

__all__ = [
    "CHANNEL",
    "LOCK_SPACE",
    "PgConnection",
    "connect",
    "is_postgres_url",
    "redact",
]

SCHEMES = ("postgresql://", "postgres://")
MANGLED = ("postgresql:/", "postgres:/")
"""What ``Path`` leaves of a URL (one slash): refused rather than made a file."""
CHANNEL = "nsight_lab"
"""The ``LISTEN``/``NOTIFY`` channel of the store's changes (one per database)."""
LOCK_SPACE = 0x6E736C62
"""The first key of the store's advisory locks ("nslb"): apart from other users'."""
MIN_SERVER_VERSION = 150_000
_INSTALL_HINT = "install the driver with: pip install 'nsight-lab[postgres]'"


def is_postgres_url(location: object) -> bool:
    """Tell whether a store location names a PostgreSQL database."""
    return isinstance(location, str) and location.lower().startswith(SCHEMES)


def redact(url: str) -> str:
    """Return ``url`` without its password (nor a ``password=`` query parameter)."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user = userinfo.partition(":")[0]
        netloc = f"{user}:***@{hostport}" if ":" in userinfo else f"{user}@{hostport}"
    query = urllib.parse.urlencode(
        [
            (k, "***" if k.lower() == "password" else v)
            for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        ],
        safe="*",
    )
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def _driver() -> Any:  # noqa: ANN401  (the psycopg module)
    try:
        import psycopg  # noqa: PLC0415  (optional driver, only for a PostgreSQL store)
    except ImportError as exc:
        msg = (
            "the run store is a PostgreSQL database but psycopg 3 is missing; "
            + _INSTALL_HINT
        )
        raise StoreError(msg) from exc
    return psycopg


def errors() -> tuple[type[Exception], ...]:
    """The driver's error classes (empty when psycopg is not installed)."""
    try:
        import psycopg  # noqa: PLC0415  (optional driver, only for a PostgreSQL store)
    except ImportError:
        return ()
    return (psycopg.Error,)


class PgConnection:
    """A psycopg connection that speaks the store's SQLite-spelled SQL.

    Autocommit, like the store's SQLite connections: transactions are explicit
    ``BEGIN``/``COMMIT``. ``notify`` collects what the open write transaction
    changed, sent as one ``NOTIFY`` before it commits.
    """

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        """Wrap an open autocommit connection."""
        self.raw = conn
        self.runs: dict[int, int] = {}
        """Session id -> largest run id added by the open write transaction."""
        self.runs_only = False
        """The open write transaction only added runs (no session news)."""
        self._insert_sql: dict[str, str] = {}
        """Table -> its unnest ``INSERT`` (column types read once per connection)."""

    def execute(
        self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()
    ) -> psycopg.Cursor[Any]:
        """Run one statement (``?``/``:name`` parameters) and return its cursor."""
        return self.raw.execute(POSTGRES.sql(sql), params)

    def insert_rows(
        self, table: str, fields: str, rows: Sequence[Sequence[Any]]
    ) -> list[int]:
        """Insert ``rows`` (values of ``fields``) into ``table``; their ids, in order.

        Two statements whatever the count, each of constant text (parsed once; the
        column types are read once per connection): the ids are drawn from the
        table's identity sequence first (sorted, so they grow in row order), then
        every row goes in through one ``INSERT ... SELECT FROM unnest(...)`` of one
        binary array per column. In the store's writer thread every wait for the
        server is a GIL hand-back; one pipelined ``INSERT ... RETURNING`` per row
        waited ~10 times per 500 rows, and beside a busy cell a 500-run commit took
        135-139 ms against 111-121 ms this way (before ``StoreWriter.put`` handed
        the GIL over).
        """
        if not rows:
            return []
        raw = self.raw
        sql = self._insert_sql.get(table)
        if sql is None:
            types = dict(
                raw.execute(
                    "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute"
                    " WHERE attrelid = %s::regclass AND attnum > 0"
                    " AND NOT attisdropped",
                    (table,),
                ).fetchall()
            )
            names = ["id", *(name.strip() for name in fields.split(","))]
            arrays = ", ".join(f"%b::{types[name]}[]" for name in names)
            sql = (
                f"INSERT INTO {table} ({', '.join(names)})"  # noqa: S608  (our own names)
                f" SELECT * FROM unnest({arrays})"
            )
            self._insert_sql[table] = sql
        ids = sorted(
            int(row[0])
            for row in raw.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, 'id'))"
                " FROM generate_series(1, %s)",
                (table, len(rows)),
            ).fetchall()
        )
        raw.execute(sql, [ids, *(list(column) for column in zip(*rows, strict=True))])
        return ids

    def notify(self) -> None:
        """Send the change notice of the open transaction (delivered on commit)."""
        payload: dict[str, Any] = {
            "runs": {str(k): v for k, v in self.runs.items()},
            "sessions": not self.runs_only,
        }
        self.forget()
        self.raw.execute(
            "SELECT pg_notify(%s, %s)",
            (CHANNEL, json.dumps(payload, separators=(",", ":"))),
        )

    def forget(self) -> None:
        """Drop what the open transaction noted (after its notice, or a rollback)."""
        self.runs = {}
        self.runs_only = False

    def close(self) -> None:
        """Close the connection (its advisory locks go with it)."""
        self.raw.close()


def connect(url: str, *, read_only: bool = False) -> PgConnection:
    """Open an autocommit connection to the store's database.

    Raises:
        StoreError: psycopg is missing, the server cannot be reached or refuses the
            login, or is older than PostgreSQL 15 (one line, password left out).
    """
    psycopg = _driver()
    options = {"application_name": "nsight-lab"}
    if read_only:
        options["options"] = "-c default_transaction_read_only=on"
    try:
        conn = psycopg.connect(url, autocommit=True, **options)
    except psycopg.Error as exc:
        reason = " ".join(str(exc).replace(url, redact(url)).split())
        msg = (
            f"cannot connect to the run store {redact(url)!r}: {reason}; check "
            "NSIGHT_LAB_STORE (postgresql://user:password@host:port/database) and "
            "that the server is up"
        )
        raise StoreError(msg) from None
    if conn.info.server_version < MIN_SERVER_VERSION:
        version = conn.info.server_version
        conn.close()
        msg = (
            f"the run store {redact(url)!r} runs PostgreSQL {version // 10_000}; "
            "nsight-lab needs PostgreSQL 15 or later"
        )
        raise StoreError(msg)
    return PgConnection(conn)


SCHEMA_TABLE_SQL = (
    "CREATE TABLE IF NOT EXISTS nsight_lab_schema (id INTEGER PRIMARY KEY"
    " CHECK (id = 1), version INTEGER NOT NULL)"
)
"""PostgreSQL has no ``PRAGMA user_version``: the schema version is this row."""
MIGRATION_LOCK = (LOCK_SPACE, 0)
"""Held (transaction-level) while one process creates or upgrades the schema."""


def schema_version(conn: PgConnection) -> int:
    """Return the store's schema version; 0 for a database without one."""
    # Not to_regclass(): it answers from the backend's catalog cache, which may
    # still say "no such table" after another process created it while this one
    # waited for the migration lock. pg_class read by a query sees the statement's
    # snapshot.
    exists = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class AS c"
        " JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace"
        " WHERE c.relname = 'nsight_lab_schema' AND n.nspname = current_schema())"
    ).fetchone()
    if exists is None or not exists[0]:
        return 0
    row = conn.execute("SELECT version FROM nsight_lab_schema WHERE id = 1").fetchone()
    return 0 if row is None else int(row[0])


def set_schema_version(conn: PgConnection, version: int) -> None:
    """Record ``version`` (inside the upgrade's transaction)."""
    conn.execute(SCHEMA_TABLE_SQL)
    conn.execute(
        "INSERT INTO nsight_lab_schema (id, version) VALUES (1, ?)"
        " ON CONFLICT (id) DO UPDATE SET version = excluded.version",
        (version,),
    )


LOCK_SESSION_SQL = f"SELECT pg_advisory_lock({LOCK_SPACE}, CAST(? AS INTEGER))"
UNLOCK_SESSION_SQL = f"SELECT pg_advisory_unlock({LOCK_SPACE}, CAST(? AS INTEGER))"
ORPHANS_SQL = (
    "SELECT id FROM sessions WHERE status = 'running' AND NOT EXISTS ("  # noqa: S608  (constants only)
    " SELECT 1 FROM pg_locks AS l WHERE l.locktype = 'advisory' AND l.granted"
    " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    f" AND l.classid = {LOCK_SPACE} AND l.objsubid = 2"
    " AND CAST(l.objid AS BIGINT) = sessions.id)"
    " ORDER BY id"
)
"""Running sessions whose writer's connection (and so its advisory lock) is gone."""
