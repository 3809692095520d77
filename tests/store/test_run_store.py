"""Tests of nsight_lab.store.run_store on both engines: real SQLite files and real
PostgreSQL databases (a throwaway cluster, tests/conftest.py), no mocks."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from nsight_lab.contract.records import SCHEMA_VERSION, RunRecord, Telemetry, utc_now
from nsight_lab.errors import NotFoundError, QueryError, StoreError
from nsight_lab.store import migrations as _migrations
from nsight_lab.store import sqlite_files
from nsight_lab.store.run_store import INTERRUPTED_ERROR, RunStore
from tests.conftest import POSTGRES_ONLY, SQLITE_ONLY

if TYPE_CHECKING:
    from collections.abc import Iterator

    from nsight_lab.contract.records import SessionStatus

ROOT = Path(__file__).resolve().parents[2]
WRITER = Path(__file__).with_name("_store_writer.py")


@pytest.fixture
def db(store_location: Path | str) -> Any:
    """The store's location: a SQLite file (Path) or a PostgreSQL URL (str)."""
    return store_location


@pytest.fixture
def store(db: Path) -> Iterator[RunStore]:
    with RunStore(db) as s:
        yield s


def record(session_id: int, run_index: int = 0, **kw: Any) -> RunRecord:
    fields: dict[str, Any] = {
        "session_id": session_id,
        "config_index": 1,
        "config": {"n": 2048, "dtype": "float16", "flag": True, "x": None},
        "run_index": run_index,
        "annotation": "matmul",
        "duration_ns": 123456.5 + run_index,
        "backend": "events",
        "kernels": ("sm90_xmma_gemm", "elementwise_kernel"),
        "metrics": {"dram__bytes_read.sum": 1.5e9, "derived.tflops": 412.25},
        "telemetry": Telemetry(
            sm_clock_mhz=1980.0,
            mem_clock_mhz=3201.0,
            temperature_c=61.0,
            power_w=512.5,
            clock_event_reasons=("software power cap", "hw thermal slowdown"),
            throttled=True,
        ),
        "thermal_wait_s": 0.25,
        "finished_at": "2025-06-01T12:00:00.000001+00:00",
    }
    fields.update(kw)
    return RunRecord(**fields)


def raw(db: Path | str) -> Any:
    """A plain connection to the store's database; ``?`` parameters on both engines."""
    if isinstance(db, str):
        import psycopg

        from nsight_lab.store.postgres import PgConnection

        return PgConnection(psycopg.connect(db, autocommit=True))
    return sqlite3.connect(db, isolation_level=None)


def user_version(db: Path | str) -> int:
    """The schema version the store records (PRAGMA user_version, or its PG table)."""
    conn = raw(db)
    try:
        if isinstance(db, str):
            row = conn.execute("SELECT version FROM nsight_lab_schema").fetchone()
            return int(row[0])
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def set_user_version(db: Path | str, version: int) -> None:
    conn = raw(db)
    if isinstance(db, str):
        conn.execute("UPDATE nsight_lab_schema SET version = ?", (version,))
    else:
        conn.execute(f"PRAGMA user_version = {version}")
    conn.close()


def table_names(db: Path | str) -> set[str]:
    conn = raw(db)
    sql = (
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
        if isinstance(db, str)
        else "SELECT name FROM sqlite_master"
    )
    names = {r[0] for r in conn.execute(sql).fetchall()}
    conn.close()
    return names


def writer_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p
    )
    return env


def wait_for(predicate: Any, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s} s")
        time.sleep(0.01)


# -- opening ---------------------------------------------------------------------------


@SQLITE_ONLY
def test_open_creates_directory_wal_and_schema(db: Path) -> None:
    with RunStore(db) as s:
        assert s.path == db
    assert db.exists()
    conn = raw(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert {"sessions", "runs", "cache", "session_annotations"} <= tables
    assert _migrations.latest_version() == SCHEMA_VERSION


def test_default_path_is_under_nsight_lab_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NSIGHT_LAB_HOME", str(tmp_path / "nlhome"))
    with RunStore() as s:
        assert s.path == tmp_path / "nlhome" / "store.sqlite"
    assert s.path.exists()


def test_closed_store_raises(db: Path) -> None:
    s = RunStore(db)
    s.close()
    s.close()
    with pytest.raises(StoreError, match="is closed; open a new RunStore"):
        s.list_sessions()


def test_non_sqlite_file_raises_store_error(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    path.write_bytes(b"this is not a database, just some text\n" * 100)
    with pytest.raises(StoreError) as info:
        RunStore(path)
    message = str(info.value)
    assert repr(str(path)) in message
    assert "move the file aside" in message
    assert "\n" not in message


def test_unwritable_directory_raises_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="NSIGHT_LAB_HOME"):
        RunStore(blocker / "sub" / "store.sqlite")


@SQLITE_ONLY
def test_write_lock_held_too_long_raises_store_error(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_files, "BUSY_TIMEOUT_S", 0.2)
    with RunStore(db) as s:
        sid = s.create_session(backend="cpu").id
        holder = raw(db)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StoreError, match=r"cannot add runs at .*locked"):
                s.add_runs([record(sid)])
            assert s.get_session(sid).status == "running"  # reads still work
        finally:
            holder.execute("ROLLBACK")
        s.add_runs([record(sid)])
        assert s.run_counts([sid]) == {sid: 1}


# -- migrations ------------------------------------------------------------------------


@SQLITE_ONLY
def test_version_0_database_is_upgraded(db: Path) -> None:
    db.parent.mkdir(parents=True)
    conn = raw(db)
    conn.execute("CREATE TABLE unrelated (x)")
    conn.close()
    with RunStore(db) as s:
        sid = s.create_session(backend="cpu").id
        s.add_runs([record(sid)])
    conn = raw(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 1


def test_older_schema_runs_missing_steps_and_keeps_data(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with RunStore(db) as s:
        sid = s.create_session(backend="cpu", name="old").id
        s.add_runs([record(sid)])
    step = (
        "ALTER TABLE sessions ADD COLUMN extra TEXT",
        "UPDATE sessions SET extra='x'",
    )
    monkeypatch.setattr(_migrations, "STEPS", [*_migrations.STEPS, step])
    with RunStore(db) as s:
        assert s.get_session(sid).name == "old"
        assert len(s.runs(sid)) == 1
    assert user_version(db) == SCHEMA_VERSION + 1
    conn = raw(db)
    assert conn.execute("SELECT extra FROM sessions").fetchone()[0] == "x"


def test_failed_migration_changes_nothing(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    RunStore(db).close()
    step = ("CREATE TABLE half_done (x INTEGER)", "THIS IS NOT SQL")
    monkeypatch.setattr(_migrations, "STEPS", [*_migrations.STEPS, step])
    with pytest.raises(StoreError, match="cannot upgrade the run store"):
        RunStore(db)
    assert user_version(db) == SCHEMA_VERSION
    assert "half_done" not in table_names(db)
    assert {"sessions", "runs", "cache", "session_annotations"} <= table_names(db)


def test_newer_schema_raises_store_error(db: Path) -> None:
    RunStore(db).close()
    set_user_version(db, SCHEMA_VERSION + 5)
    with pytest.raises(StoreError) as info:
        RunStore(db)
    message = str(info.value)
    assert f"schema version {SCHEMA_VERSION + 5}" in message
    assert "upgrade nsight-lab" in message


# -- sessions and runs -----------------------------------------------------------------


def test_session_round_trip(store: RunStore) -> None:
    before = utc_now()
    s = store.create_session(
        backend="ncu",
        backend_reason="counters asked for and ncu works",
        name="fusion",
        notebook="work/fusion.ipynb",
        device="NVIDIA H200",
        host="gpu-box",
        pid=4242,
        options={"runs": 20, "metrics": ["dram__bytes_read.sum"], "nested": {"a": 1}},
        configs=[{"n": 512}, {"n": 1024, "dtype": "bf16"}],
        runs_planned=20,
        cell_source="a @ a  # ünïcode",
        notes=["isolated ncu path"],
    )
    assert s.status == "running"
    assert s.created_at >= before
    assert s.finished_at is None
    assert s.error is None
    assert s.schema_version == SCHEMA_VERSION
    assert store.get_session(s.id) == s
    assert (s.name, s.notebook, s.device, s.host, s.pid) == (
        "fusion",
        "work/fusion.ipynb",
        "NVIDIA H200",
        "gpu-box",
        4242,
    )
    assert s.backend == "ncu"
    assert s.backend_reason == "counters asked for and ncu works"
    assert s.options == {
        "runs": 20,
        "metrics": ["dram__bytes_read.sum"],
        "nested": {"a": 1},
    }
    assert s.configs == [{"n": 512}, {"n": 1024, "dtype": "bf16"}]
    assert s.runs_planned == 20
    assert s.cell_source == "a @ a  # ünïcode"
    assert s.notes == ["isolated ncu path"]


def test_session_defaults_host_and_pid(store: RunStore) -> None:
    s = store.create_session(backend="cpu")
    assert s.host == socket.gethostname()
    assert s.pid == os.getpid()
    assert (s.options, s.configs, s.notes, s.name) == ({}, [], [], None)


def test_runs_round_trip_every_field(store: RunStore) -> None:
    sid = store.create_session(backend="events").id
    recs = [
        record(sid, 0),
        record(sid, 1, annotation="add", telemetry=Telemetry(), kernels=(), metrics={}),
        record(sid, 2, thermal_wait_s=0.0, config={}, config_index=0),
    ]
    ids = store.add_runs(recs)
    assert len(ids) == 3
    assert ids == sorted(ids)
    assert store.runs(sid) == recs
    assert store.runs_with_ids(sid) == list(zip(ids, recs, strict=True))
    assert store.runs(sid, after_id=ids[0]) == recs[1:]
    assert store.runs(sid, limit=2) == recs[:2]
    assert store.runs(sid, after_id=ids[2]) == []
    assert store.last_run_id(sid) == ids[2]
    assert store.last_run_id() == ids[2]
    assert store.run_counts([sid, sid, 999]) == {sid: 3}
    assert store.add_runs([]) == []


def test_add_runs_to_several_sessions_in_one_batch(store: RunStore) -> None:
    a = store.create_session(backend="cpu").id
    b = store.create_session(backend="cpu").id
    ids = store.add_runs([record(a, 0), record(b, 0), record(a, 1)])
    assert [i for i, _ in store.runs_with_ids(a)] == [ids[0], ids[2]]
    assert store.run_counts([a, b]) == {a: 2, b: 1}
    assert store.last_run_id(b) == ids[1]


def test_a_region_seen_before_costs_no_annotation_statement(store: RunStore) -> None:
    # The writer's later batches repeat the same regions: the store writes each
    # (session, region) pair once, and a new region in a later batch still lands.
    sid = store.create_session(backend="cpu").id
    other = store.create_session(backend="cpu").id
    statements: list[str] = []
    if store.engine == "sqlite":
        conn = cast("sqlite3.Connection", store._connection())  # noqa: SLF001
        conn.set_trace_callback(statements.append)
    store.add_runs([record(sid, 0, annotation="a")])
    first = sum("INTO session_annotations" in q for q in statements)
    store.add_runs([record(sid, 1, annotation="a"), record(sid, 2, annotation="a")])
    second = sum("INTO session_annotations" in q for q in statements) - first
    store.add_runs([record(sid, 3, annotation="b"), record(other, 0, annotation="a")])
    if store.engine == "sqlite":
        assert (first, second) == (1, 0)
    assert [s.id for s in store.list_sessions(annotation="b")] == [sid]
    assert {s.id for s in store.list_sessions(annotation="a")} == {sid, other}
    assert [s.id for s in store.list_sessions(text="b")] == [sid]
    assert store.run_counts([sid, other]) == {sid: 4, other: 1}


def test_add_runs_unknown_session_stores_nothing(store: RunStore) -> None:
    sid = store.create_session(backend="cpu").id
    with pytest.raises(NotFoundError, match=r"cannot add runs to session 999"):
        store.add_runs([record(sid), record(999)])
    assert store.runs(sid) == []
    assert store.run_counts([sid]) == {sid: 0}


def test_reader_sees_each_run_as_soon_as_add_runs_returns(db: Path) -> None:
    with RunStore(db) as writer, RunStore(db) as reader:
        sid = writer.create_session(backend="cpu").id
        assert reader.get_session(sid).status == "running"
        seen: list[int] = []
        for i in range(30):
            (run_id,) = writer.add_runs([record(sid, i)])
            pairs = reader.runs_with_ids(sid, after_id=seen[-1] if seen else 0)
            assert [p[0] for p in pairs] == [run_id]
            assert reader.latest_change() == (sid, run_id)
            seen.append(run_id)
        assert reader.run_counts([sid]) == {sid: 30}


@pytest.mark.parametrize("status", ["completed", "failed", "interrupted"])
def test_finish_session(store: RunStore, status: Any) -> None:
    sid = store.create_session(backend="cpu").id
    error = None if status == "completed" else "CUDA out of memory"
    store.finish_session(sid, status, error)
    s = store.get_session(sid)
    assert s.status == status
    assert s.error == error
    assert s.finished_at is not None
    assert s.finished_at >= s.created_at


def test_finish_session_rejects_bad_status_and_unknown_id(store: RunStore) -> None:
    sid = store.create_session(backend="cpu").id
    with pytest.raises(QueryError, match="status 'running'; expected one of"):
        store.finish_session(sid, "running")
    with pytest.raises(NotFoundError, match="no session with id 777"):
        store.finish_session(777, "completed")


def test_add_note(store: RunStore) -> None:
    sid = store.create_session(backend="cpu", notes=["first"]).id
    store.add_note(sid, "second")
    assert store.get_session(sid).notes == ["first", "second"]
    with pytest.raises(NotFoundError):
        store.add_note(sid + 1, "x")


def test_unknown_session_messages(store: RunStore) -> None:
    with pytest.raises(NotFoundError) as info:
        store.get_session(12345)
    assert "12345" in str(info.value)
    assert "nsight-lab history" in str(info.value)
    assert isinstance(info.value, LookupError)
    with pytest.raises(NotFoundError):
        store.runs(12345)


def test_delete_session_cascades(db: Path, store: RunStore) -> None:
    keep = store.create_session(backend="cpu").id
    gone = store.create_session(backend="cpu").id
    store.add_runs([record(keep), record(gone), record(gone, 1, annotation="x")])
    store.delete_session(gone)
    with pytest.raises(NotFoundError):
        store.get_session(gone)
    with pytest.raises(NotFoundError):
        store.runs(gone)
    with pytest.raises(NotFoundError):
        store.delete_session(gone)
    conn = raw(db)
    assert conn.execute("SELECT session_id FROM runs").fetchall() == [(keep,)]
    assert conn.execute("SELECT session_id FROM session_annotations").fetchall() == [
        (keep,)
    ]
    assert store.count_sessions(annotation="x") == 0


def test_latest_change_and_change_seq(store: RunStore) -> None:
    assert store.latest_change() == (0, 0)
    seq = store.change_seq()
    sid = store.create_session(backend="cpu").id
    (rid,) = store.add_runs([record(sid)])
    assert store.latest_change() == (sid, rid)
    store.finish_session(sid, "completed")
    assert store.latest_change() == (sid, rid)
    assert store.change_seq() == seq + 3


# -- listing ---------------------------------------------------------------------------


@pytest.fixture
def listed(store: RunStore) -> dict[str, Any]:
    """Five sessions with distinct attributes, created in order a..e."""
    made: dict[str, Any] = {}
    specs = [
        ("a", "nb/one.ipynb", "NVIDIA H200", "events", ["matmul"], "completed"),
        ("b", "nb/one.ipynb", "NVIDIA H100", "cpu", ["add", "addcmul"], "failed"),
        ("c", "nb/two.ipynb", "NVIDIA H200", "ncu", ["Matmul_100%"], "running"),
        ("d", None, "cpu", "cpu", [], "interrupted"),
        ("e", "nb/two.ipynb", "NVIDIA H200", "events", ["matmul", "add"], "completed"),
    ]
    for name, notebook, device, backend, regions, status in specs:
        s = store.create_session(
            backend=backend,
            name=f"label-{name}",
            notebook=notebook,
            device=device,
            cell_source=f"x = {name.upper()}_TENSOR * 2",
        )
        store.add_runs([record(s.id, i, annotation=a) for i, a in enumerate(regions)])
        if status != "running":
            store.finish_session(s.id, cast("SessionStatus", status))
        made[name] = s.id
        made[f"after_{name}"] = utc_now()
        time.sleep(0.002)
    return made


def names(sessions: list[Any]) -> list[str]:
    return [s.name.removeprefix("label-") for s in sessions]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, "edcba"),
        ({"notebook": "nb/one.ipynb"}, "ba"),
        ({"annotation": "matmul"}, "ea"),
        ({"annotation": "add"}, "eb"),
        ({"annotation": "addc"}, ""),
        ({"device": "NVIDIA H200"}, "eca"),
        ({"backend": "cpu"}, "db"),
        ({"status": "completed"}, "ea"),
        ({"status": "running"}, "c"),
        ({"text": "LABEL-C"}, "c"),
        ({"text": "two.IPYNB"}, "ec"),
        ({"text": "d_tensor"}, "d"),
        ({"text": "ADDCMUL"}, "b"),
        ({"text": "100%"}, "c"),
        ({"text": "_100"}, "c"),
        ({"text": "%"}, "c"),
        (
            {
                "device": "NVIDIA H200",
                "annotation": "matmul",
                "notebook": "nb/two.ipynb",
            },
            "e",
        ),
    ],
)
def test_list_and_count_filters(
    store: RunStore, listed: dict[str, Any], filters: dict[str, Any], expected: str
) -> None:
    del listed
    assert "".join(names(store.list_sessions(**filters))) == expected
    assert store.count_sessions(**filters) == len(expected)


def test_list_since_until(store: RunStore, listed: dict[str, Any]) -> None:
    assert names(store.list_sessions(since=listed["after_b"])) == ["e", "d", "c"]
    assert names(store.list_sessions(until=listed["after_b"])) == ["b", "a"]
    window = {"since": listed["after_a"], "until": listed["after_c"]}
    assert names(store.list_sessions(**window)) == ["c", "b"]
    assert store.count_sessions(**window) == 2
    assert store.count_sessions(since="2000-01-01") == 5
    assert store.count_sessions(since="2999-01-01T00:00:00Z") == 0
    assert store.count_sessions(until="2000-01-01T00:00:00") == 0


def test_list_paging_newest_first(store: RunStore, listed: dict[str, Any]) -> None:
    del listed
    assert names(store.list_sessions(limit=2)) == ["e", "d"]
    assert names(store.list_sessions(limit=2, offset=2)) == ["c", "b"]
    assert names(store.list_sessions(limit=2, offset=4)) == ["a"]
    assert names(store.list_sessions(limit=2, offset=6)) == []
    assert names(store.list_sessions(limit=None)) == list("edcba")
    assert names(store.list_sessions(limit=0)) == []
    assert names(store.list_sessions(notebook="nb/two.ipynb", limit=1, offset=1)) == [
        "c"
    ]


@pytest.mark.parametrize(
    ("filters", "match"),
    [
        ({"since": "yesterday"}, "invalid since time 'yesterday'"),
        ({"until": "2025-13-01"}, "invalid until time '2025-13-01'"),
        ({"status": "done"}, "invalid status filter 'done'"),
        ({"limit": -1}, "invalid limit -1"),
        ({"offset": -3}, "invalid offset -3"),
    ],
)
def test_list_rejects_malformed_filters(
    store: RunStore, filters: dict[str, Any], match: str
) -> None:
    with pytest.raises(QueryError, match=match):
        store.list_sessions(**filters)


@SQLITE_ONLY
def test_list_query_never_reads_runs_nor_sorts(db: Path, store: RunStore) -> None:
    """The list's pace is an index walk: no scan of runs, no sort of every session.

    What makes it fast is judged (the query plans); how fast it is on this host is
    benchmarks/ui_scale.py's (10,000 sessions, 1,000,000 runs).
    """
    sessions = [
        store.create_session(
            backend="cpu", notebook=f"nb{i % 7}", device=f"d{i % 2}"
        ).id
        for i in range(2000)
    ]
    batch: list[RunRecord] = []
    for sid in sessions:
        batch.extend(record(sid, i, annotation=f"r{i % 3}") for i in range(25))
        if len(batch) >= 5000:
            store.add_runs(batch)
            batch = []
    store.add_runs(batch)
    statements: list[str] = []
    reader = store._reader()  # noqa: SLF001  (this thread's read connection)
    assert reader is not None
    reader.set_trace_callback(statements.append)
    filter_sets: list[dict[str, Any]] = [
        {},
        {"notebook": "nb3"},
        {"annotation": "r2"},
        {"status": "running", "device": "d1", "backend": "cpu"},
        {"since": "2000-01-01", "until": "2999-01-01"},
        {"text": "nb"},
    ]
    for filters in filter_sets:
        page = store.list_sessions(**filters, limit=50, offset=100)
        assert page
        store.count_sessions(**filters)
    reader.set_trace_callback(None)
    conn = raw(db)
    # (A count by annotation alone reads session_annotations only: issue 32.)
    queries = [q for q in statements if "FROM session" in q and q.startswith("SELECT")]
    assert len(queries) == 2 * len(filter_sets)
    for q in queries:
        plan = " | ".join(r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {q}"))
        assert " runs" not in plan, plan
    unfiltered = next(q for q in queries if "WHERE" not in q and "ORDER BY" in q)
    plan = " | ".join(r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {unfiltered}"))
    assert "TEMP B-TREE" not in plan, plan


# -- processes -------------------------------------------------------------------------


def test_killed_writer_keeps_runs_and_is_marked_interrupted(db: Path) -> None:
    reader = RunStore(db)
    proc = subprocess.Popen(  # noqa: S603  (our own script)
        [sys.executable, str(WRITER), "loop", str(db)],
        stdout=subprocess.PIPE,
        env=writer_env(),
        text=True,
    )
    try:
        assert proc.stdout is not None
        sid = int(proc.stdout.readline())
        seen: list[int] = []

        def enough() -> bool:
            seen.extend(
                i
                for i, _ in reader.runs_with_ids(sid, after_id=seen[-1] if seen else 0)
            )
            return len(seen) >= 20

        wait_for(enough)
        assert reader.mark_interrupted() == []
        assert reader.get_session(sid).status == "running"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.stdout is not None
        proc.stdout.close()
    # PostgreSQL ends the killed writer's backend (and its lock) as its socket
    # closes: a moment after the kill, not necessarily before the next statement.
    marked: list[int] = []
    wait_for(lambda: bool(marked.extend(reader.mark_interrupted()) or marked), 10.0)
    assert marked == [sid]
    assert reader.mark_interrupted() == []
    reader.close()

    if not isinstance(db, str):
        conn = raw(db)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with RunStore(db) as after:
        s = after.get_session(sid)
        assert s.status == "interrupted"
        assert s.error == INTERRUPTED_ERROR
        assert s.finished_at is not None
        stored = [i for i, _ in after.runs_with_ids(sid)]
        assert set(seen) <= set(stored)
        assert after.run_counts([sid]) == {sid: len(stored)}
        # runs_done is kept in the runs' own transactions: what was committed
        assert after.runs_done_counts([sid]) == {sid: len(stored)}
        assert after.count_sessions(status="interrupted") == 1


def test_concurrent_writer_processes_lose_nothing(db: Path, tmp_path: Path) -> None:
    # 8 writer processes at once on PostgreSQL (a team store), 4 on a SQLite file
    # (its writers queue on one file lock; 2 cores here).
    writers = 8 if isinstance(db, str) else 4
    n = 250
    with RunStore(db) as s:
        own = [s.create_session(backend="cpu", name=f"w{i}").id for i in range(writers)]
        shared = s.create_session(backend="cpu", name="shared").id
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(  # noqa: S603  (our own script)
            [
                sys.executable,
                str(WRITER),
                "worker",
                str(db),
                str(o),
                str(shared),
                str(n),
                str(go),
            ],
            env=writer_env(),
        )
        for o in own
    ]
    time.sleep(0.5)
    go.touch()
    assert [p.wait(timeout=300) for p in procs] == [0] * writers
    with RunStore(db) as s:
        for o in own:
            runs = s.runs(o)
            assert sorted(r.run_index for r in runs) == list(range(n))
            assert {r.annotation for r in runs} == {"own"}
        shared_runs = s.runs(shared)
        assert len(shared_runs) == writers * n
        for o in own:
            mine = [r.run_index for r in shared_runs if r.annotation == f"w{o}"]
            assert mine == list(range(n))  # each writer's runs stay in its order
        counts = s.run_counts([*own, shared])
        assert counts == {**dict.fromkeys(own, n), shared: writers * n}
        # Every writer reports runs (0, 0) .. (0, n - 1) of the shared session: its
        # complete runs are n, however the writers' transactions interleaved.
        done = s.runs_done_counts([*own, shared])
        assert done == {**dict.fromkeys(own, n), shared: n}
        assert s.count_sessions(annotation=f"w{own[0]}") == 1
        assert [x.id for x in s.list_sessions(text=f"w{own[-1]}")] == [shared]
        ids = [i for i, _ in s.runs_with_ids(shared)]
        assert len(set(ids)) == len(ids) == writers * n
    conn = raw(db)
    assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 2 * writers * n
    # every writer's region name made it into the shared session's text index
    row = conn.execute("SELECT annotations FROM sessions WHERE id = ?", (shared,))
    assert sorted(row.fetchone()[0].split("\n")) == sorted(f"w{o}" for o in own)


def test_threads_share_one_store(store: RunStore) -> None:
    sid = store.create_session(backend="cpu").id
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(100):
                store.add_runs([record(sid, i, annotation=f"t{k}")])
                store.list_sessions(limit=5)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store.runs(sid)) == 400
    assert store.run_counts([sid]) == {sid: 400}


@SQLITE_ONLY
def test_mark_interrupted_spares_live_writers(db: Path, store: RunStore) -> None:
    mine = store.create_session(backend="cpu").id
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = store.create_session(backend="cpu", pid=sleeper.pid).id
        elsewhere = store.create_session(backend="cpu", host="another-host", pid=1).id
        reused = store.create_session(backend="cpu").id
        finished = store.create_session(backend="cpu", pid=sleeper.pid)
        store.finish_session(finished.id, "completed")
        if sys.platform.startswith("linux"):
            # Same pid, different start time: a pid reused by another process.
            conn = raw(db)
            conn.execute(
                "UPDATE sessions SET pid_token = 'x:1' WHERE id = ?", (reused,)
            )
            conn.close()
        assert store.mark_interrupted() == (
            [reused] if sys.platform.startswith("linux") else []
        )
        for sid in (mine, live, elsewhere):
            assert store.get_session(sid).status == "running"
    finally:
        sleeper.kill()
        sleeper.wait()
    assert store.mark_interrupted() == [live]
    assert store.get_session(live).error == INTERRUPTED_ERROR
    assert store.get_session(finished.id).status == "completed"
    assert store.get_session(mine).status == "running"
    assert store.get_session(elsewhere).status == "running"


def test_open_marks_dead_writers(db: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    with RunStore(db) as s:
        sid = s.create_session(backend="cpu", pid=proc.pid).id
    with RunStore(db) as s:
        assert s.get_session(sid).status == "interrupted"


# -- cache -----------------------------------------------------------------------------


def test_cache_get_put(db: Path, store: RunStore) -> None:
    assert store.cache_get("peaks/NVIDIA H200") is None
    value = {"copy_gbps": 4012.5, "tflops": {"bf16": 812.0}, "ok": True}
    store.cache_put("peaks/NVIDIA H200", value)
    assert store.cache_get("peaks/NVIDIA H200") == value
    store.cache_put("peaks/NVIDIA H200", [1, 2])
    assert store.cache_get("peaks/NVIDIA H200") == [1, 2]
    with RunStore(db) as other:
        assert other.cache_get("peaks/NVIDIA H200") == [1, 2]
    with pytest.raises(StoreError, match="cannot cache a value under 'bad'"):
        store.cache_put("bad", object())
    assert store.cache_get("bad") is None


# -- read-only stores ----------------------------------------------------------------


def _filled_store(db: Path) -> int:
    with RunStore(db) as s:
        sid = s.create_session(backend="cpu", name="kept").id
        s.add_runs([record(sid, i) for i in range(3)])
        s.finish_session(sid, "completed")
    return sid


def _check_read_only(s: RunStore, sid: int) -> None:
    assert s.read_only
    assert [x.id for x in s.list_sessions()] == [sid]
    assert len(s.runs(sid)) == 3
    with pytest.raises(StoreError) as info:
        s.create_session(backend="cpu")
    message = str(info.value)
    assert "read-only" in message
    assert "\n" not in message
    with pytest.raises(StoreError, match="read-only"):
        s.delete_session(sid)


def test_read_only_store_reads_and_refuses_writes(db: Path) -> None:
    sid = _filled_store(db)
    with RunStore(db, read_only=True) as s:
        _check_read_only(s, sid)
        # reads from another thread use their own (read-only) connection
        out: list[int] = []
        thread = threading.Thread(target=lambda: out.append(len(s.runs(sid))))
        thread.start()
        thread.join()
        assert out == [3]
    with RunStore(db) as s:  # untouched
        assert s.get_session(sid).name == "kept"


@SQLITE_ONLY
def test_unwritable_store_is_opened_read_only(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given: os.access says the directory is not writable (as on a read-only mount,
    # where it refuses root too; chmod does not stop root)
    sid = _filled_store(db)
    real = os.access

    def access(path: Any, mode: int, **kw: Any) -> bool:
        return False if mode & os.W_OK else real(path, mode, **kw)

    monkeypatch.setattr(sqlite_files.os, "access", access)

    # When / Then
    with RunStore(db) as s:
        _check_read_only(s, sid)


@SQLITE_ONLY
def test_read_only_falls_back_to_immutable(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given: mode=ro cannot be opened (its -shm cannot be created)
    sid = _filled_store(db)
    real = sqlite_files.connect_uri
    tried: list[str] = []

    def connect(uri: str) -> sqlite3.Connection:
        tried.append(uri)
        if "immutable=1" not in uri:
            msg = "unable to open database file"
            raise sqlite3.OperationalError(msg)
        return real(uri)

    monkeypatch.setattr(sqlite_files, "connect_uri", connect)

    # When / Then
    with RunStore(db, read_only=True) as s:
        _check_read_only(s, sid)
    assert tried[0].endswith("?mode=ro")
    assert tried[1].endswith("?mode=ro&immutable=1")


_READER = """
import json, os, sys
from nsight_lab.store.run_store import RunStore
if os.geteuid() == 0:  # chmod does not stop root: read as nobody
    os.setgid(65534)
    os.setuid(65534)
with RunStore(sys.argv[1]) as s:
    out = {"read_only": s.read_only, "uri": s._uri,
           "ids": [x.id for x in s.list_sessions()], "runs": len(s.runs(1))}
    try:
        s.create_session(backend="cpu")
    except Exception as exc:
        out["write_error"] = str(exc)
print(json.dumps(out))
"""


def test_store_in_a_read_only_directory_is_readable() -> None:
    # Given: a closed store (no -wal, no -shm) in a directory nobody may write; as
    # root the reader drops to the user nobody (chmod does not stop root)
    if os.geteuid() == 0 and not hasattr(os, "setuid"):
        pytest.skip("cannot drop root privileges here to make chmod count")
    import json
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="nsight-lab-ro-"))
    home.chmod(0o755)  # nobody must reach it (pytest's tmp_path is private)
    db = home / "store.sqlite"
    try:
        sid = _filled_store(db)
        assert sid == 1
        assert sorted(p.name for p in home.iterdir()) == ["store.sqlite"]
        db.chmod(0o444)
        home.chmod(0o555)

        # When
        done = subprocess.run(  # noqa: S603
            [sys.executable, "-c", _READER, str(db)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

        # Then: read through the immutable fallback; writes refused in one line
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        assert out["read_only"] is True
        assert out["uri"].endswith("immutable=1")
        assert out["ids"] == [sid]
        assert out["runs"] == 3
        assert "read-only" in out["write_error"]
        assert "\n" not in out["write_error"]
    finally:
        home.chmod(0o755)
        db.chmod(0o644)
        for path in home.iterdir():
            path.unlink()
        home.rmdir()


def test_read_only_store_without_the_file_is_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as info:
        RunStore(tmp_path / "none.sqlite", read_only=True)
    assert "no such file" in str(info.value)
    assert "\n" not in str(info.value)


# -- dates at the ends of the range --------------------------------------------------


@pytest.mark.parametrize(
    ("since", "until", "expected"),
    [
        ("9999-12-31T23:59:59-05:00", None, 0),
        ("0001-01-01T00:00:00+05:00", None, 1),
        (None, "9999-12-31T23:59:59-05:00", 1),
        (None, "0001-01-01T00:00:00+05:00", 0),
        ("9999-12-31T23:59:59.999999", None, 0),
    ],
)
def test_dates_at_the_ends_of_the_range_are_clamped(
    store: RunStore, since: str | None, until: str | None, expected: int
) -> None:
    store.create_session(backend="cpu")
    assert store.count_sessions(since=since, until=until) == expected


@SQLITE_ONLY
def test_cli_history_since_the_end_of_time_is_no_traceback(
    db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from nsight_lab.cli import main

    monkeypatch.setenv("NSIGHT_LAB_HOME", str(db.parent))
    _filled_store(db.parent / "store.sqlite")
    assert main(["history", "--since", "9999-12-31T23:59:59-05:00", "--json"]) == 0
    assert main(["history", "--since", "0001-01-01T00:00:00+05:00", "--json"]) == 0
    code = main(["history", "--since", "x" * 10_000])
    err = capsys.readouterr().err
    assert code != 0
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert len(err) < 400


@SQLITE_ONLY
def test_delete_stopped_session_refuses_a_live_writer(store: RunStore) -> None:
    from nsight_lab.store.run_store import SessionRunningError

    live = store.create_session(backend="cpu").id  # this process: alive
    dead = store.create_session(backend="cpu", pid=2**22 + 12345).id
    with pytest.raises(SessionRunningError) as info:
        store.delete_stopped_session(live)
    assert str(info.value).startswith(f"session {live} is still running")
    store.delete_stopped_session(dead)
    with pytest.raises(NotFoundError):
        store.get_session(dead)
    store.finish_session(live, "completed")
    store.delete_stopped_session(live)


# -- team store: who wrote a session, PostgreSQL specifics ----------------------------


def test_sessions_carry_host_user_and_gpu_and_filter_by_them(store: RunStore) -> None:
    import getpass

    mine = store.create_session(backend="cpu", device="NVIDIA H200")
    assert (mine.host, mine.user) == (socket.gethostname(), getpass.getuser())
    other = store.create_session(
        backend="cpu", host="gpu-node-7", user="ada", device="NVIDIA H100"
    ).id
    store.create_session(backend="cpu", host="gpu-node-7", user="bob")
    assert store.get_session(other).user == "ada"
    assert [s.id for s in store.list_sessions(host="gpu-node-7", user="ada")] == [other]
    assert store.count_sessions(host="gpu-node-7") == 2
    assert store.count_sessions(user="ada", device="NVIDIA H100") == 1
    assert store.count_sessions(user="nobody-at-all") == 0
    assert [s.id for s in store.list_sessions(device="NVIDIA H200")] == [mine.id]


@POSTGRES_ONLY
def test_nsight_lab_store_selects_postgres_and_hides_the_password(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NSIGHT_LAB_STORE", db)
    with RunStore() as s:
        assert (s.engine, s.path, s.location) == ("postgresql", None, db)
        assert "nsight-test-secret" not in s.where + repr(s)
        assert s.where.startswith("postgresql://nsight:***@127.0.0.1:")
        sid = s.create_session(backend="cpu").id
    with RunStore(db) as s:
        assert s.get_session(sid).status == "interrupted"  # its writer closed
    port = db.rsplit(":", 1)[1].split("/", maxsplit=1)[0]
    wrong = db.replace(f":{port}/", ":1/")
    with pytest.raises(StoreError) as info:
        RunStore(wrong)
    message = str(info.value)
    assert "nsight-test-secret" not in message
    assert "\n" not in message
    assert "NSIGHT_LAB_STORE" in message


@POSTGRES_ONLY
def test_postgres_liveness_follows_the_writers_connection(db: str) -> None:
    from nsight_lab.store.run_store import SessionRunningError

    with RunStore(db) as checker:
        writer = RunStore(db)
        live = writer.create_session(backend="cpu", host="another-host", pid=1).id
        done = writer.create_session(backend="cpu").id
        writer.finish_session(done, "completed")
        assert checker.mark_interrupted() == []
        assert checker.get_session(live).status == "running"
        with pytest.raises(SessionRunningError, match="still running"):
            checker.delete_stopped_session(live)
        writer.close()  # the kernel goes away: its connection and lock with it
        wait_for(lambda: checker.get_session(live).status == "interrupted"
                 or bool(checker.mark_interrupted()), 10.0)  # fmt: skip
        assert checker.get_session(live).error == INTERRUPTED_ERROR
        assert checker.get_session(done).status == "completed"
        checker.delete_stopped_session(live)


@POSTGRES_ONLY
def test_postgres_schema_is_the_sqlite_schema(db: str, tmp_path: Path) -> None:
    """Same tables and columns on both engines, from the same migration steps."""
    RunStore(db).close()
    RunStore(tmp_path / "lite.sqlite").close()
    pg = raw(db)
    pg_columns = {
        (t, c)
        for t, c in pg.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = 'public' AND table_name <> 'nsight_lab_schema'"
        ).fetchall()
    }
    lite = raw(tmp_path / "lite.sqlite")
    lite_columns = {
        (t, c[1])
        for (t,) in lite.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
            " AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
        for c in lite.execute(f"PRAGMA table_info({t})").fetchall()
    }
    assert pg_columns == lite_columns
    assert user_version(db) == user_version(tmp_path / "lite.sqlite") == SCHEMA_VERSION


def test_processes_opening_a_new_store_at_once_create_it_once(db: Path | str) -> None:
    """The first opens race to create the schema: one does, the others wait for it."""
    code = (
        "import sys; from nsight_lab.store.run_store import RunStore as S;"
        " S(sys.argv[1]).close()"
    )
    procs = [
        subprocess.Popen(  # noqa: S603  (our own code)
            [sys.executable, "-c", code, str(db)],
            env=writer_env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, errors
    assert user_version(db) == SCHEMA_VERSION


def test_a_url_made_into_a_path_is_refused_without_its_password() -> None:
    with pytest.raises(StoreError) as info:
        RunStore(Path("postgresql://ada:s3cret@db/x"))
    assert "s3cret" not in str(info.value)
    assert "pass the URL as a string" in str(info.value)
    assert not Path("postgresql:").exists()
