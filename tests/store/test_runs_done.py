"""Each session's count of complete runs is kept with it, and is what the store holds.

``GET sessions?limit=20`` asked for the runs done of a page of sessions by counting
their distinct (config, run) pairs: ~100 ms beside a 130,000-run session, the websocket
benchmark's small-request p50 over its 50 ms target (issue 22). The writer now keeps
``sessions.runs_done`` in the transaction of the runs it counts (schema 6), and a
migration fills it for older stores. The truth every test holds it to is the count
itself, ``COUNT(*)`` of the distinct pairs in ``runs``. Both engines.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from nsight_lab.contract.records import SCHEMA_VERSION
from nsight_lab.errors import NotFoundError, StoreError
from nsight_lab.store import run_writes
from nsight_lab.store.run_store import RunStore
from tests.conftest import SQLITE_ONLY
from tests.store.test_run_store import raw, record, set_user_version, user_version

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "h200_block.sqlite"
"""A store nsight-lab wrote at schema 4 on an H200 (tests/fixtures/h200_block.md)."""


@pytest.fixture
def db(store_location: Path | str) -> Any:
    return store_location


def truth(db: Path | str) -> dict[int, int]:
    """Each session's distinct (config, run) pairs, counted from ``runs`` itself."""
    conn = raw(db)
    try:
        rows = conn.execute(
            "SELECT session_id, count(*) FROM (SELECT DISTINCT session_id,"
            " config_index, run_index FROM runs) AS d GROUP BY session_id"
        ).fetchall()
    finally:
        conn.close()
    return {int(s): int(n) for s, n in rows}


def kept(store: RunStore) -> dict[int, int]:
    """What the store says, for every session it holds."""
    ids = [s.id for s in store.list_sessions(limit=None)]
    return store.runs_done_counts(ids)


def as_schema_5(db: Path | str) -> None:
    """Make the store what schema 5 left: no run keys, no ``runs_done`` column."""
    conn = raw(db)
    try:
        conn.execute("DROP TABLE session_runs")
        conn.execute("ALTER TABLE sessions DROP COLUMN runs_done")
    finally:
        conn.close()
    set_user_version(db, 5)


def test_regions_and_a_run_split_over_two_batches_count_once(db: Any) -> None:
    with RunStore(db) as store:
        sid = store.create_session(backend="cpu").id
        other = store.create_session(backend="cpu").id
        regions = ("a", "b", "c")
        runs = [
            record(sid, run_index=i, config_index=c, annotation=name)
            for c in range(2)
            for i in range(5)
            for name in regions
        ]
        # Batches cut through a run: its regions arrive in two transactions.
        store.add_runs(runs[:7])
        store.add_runs([*runs[7:20], record(other, run_index=0)])
        store.add_runs(runs[20:])
        # The same run reported again (another writer, a retried region) is no new run.
        store.add_runs([record(sid, run_index=4, config_index=1, annotation="d")])

        assert truth(db) == {sid: 10, other: 1}
        assert kept(store) == truth(db)
        assert store.runs_done(sid) == (10, (1, 4))
        assert store.run_counts([sid]) == {sid: 31}  # records: one per region


def test_a_failed_batch_counts_nothing(
    db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with RunStore(db) as store:
        sid = store.create_session(backend="cpu").id
        store.add_runs([record(sid, run_index=0)])

        # A batch naming a session that is not there stores nothing, counts nothing.
        with pytest.raises(NotFoundError):
            store.add_runs([record(sid, run_index=1), record(999, run_index=0)])

        # A batch that fails after its rows and run keys went in is rolled back whole.
        real = run_writes.insert_new

        def insert_then_fail(conn: Any, table: str, *args: Any) -> int:
            added = real(conn, table, *args)
            if table == "session_runs":
                raise conn_error(db)
            return added

        monkeypatch.setattr(run_writes, "insert_new", insert_then_fail)
        with pytest.raises(StoreError):
            store.add_runs([record(sid, run_index=i) for i in range(1, 4)])
        monkeypatch.setattr(run_writes, "insert_new", real)

        assert truth(db) == {sid: 1}
        assert kept(store) == {sid: 1}
        # The same runs, written again once the store works, count once each.
        store.add_runs([record(sid, run_index=i) for i in range(1, 4)])
        assert kept(store) == truth(db) == {sid: 4}


def conn_error(db: Path | str) -> Exception:
    """An error of the engine's driver, as a failing statement raises it."""
    if isinstance(db, str):
        import psycopg

        return psycopg.OperationalError("disk full (injected)")
    import sqlite3

    return sqlite3.OperationalError("disk full (injected)")


def test_an_older_store_is_counted_by_its_upgrade(db: Any) -> None:
    # Given: a schema 5 store whose sessions hold runs (two regions a run)
    with RunStore(db) as store:
        a = store.create_session(backend="cpu").id
        b = store.create_session(backend="cpu").id
        empty = store.create_session(backend="cpu").id
        store.add_runs([
            record(s, run_index=i, config_index=c, annotation=name)
            for s, configs in ((a, 3), (b, 1))
            for c in range(configs)
            for i in range(4)
            for name in ("x", "y")
        ])  # fmt: skip
    as_schema_5(db)
    assert user_version(db) == 5

    # When: this nsight-lab opens it, and writes on
    with RunStore(db) as store:
        upgraded = kept(store)
        store.add_runs([record(a, run_index=4, config_index=0, annotation="x")])
        after = kept(store)

    # Then: the upgrade counted what was there, and the writer counts on from it
    assert user_version(db) == SCHEMA_VERSION
    assert upgraded == {a: 12, b: 4}
    assert empty not in upgraded
    assert after == truth(db) == {a: 13, b: 4}


def test_the_real_h200_store_of_schema_4_is_counted(tmp_path: Path) -> None:
    copy = tmp_path / "store.sqlite"
    shutil.copyfile(FIXTURE, copy)  # never write the fixture itself
    assert user_version(copy) == 4
    with RunStore(copy) as store:
        counted = kept(store)
    assert user_version(copy) == SCHEMA_VERSION
    assert len(counted) == 6
    assert counted == truth(copy)


def test_deleting_a_session_deletes_its_run_keys(db: Any) -> None:
    with RunStore(db) as store:
        sid = store.create_session(backend="cpu").id
        store.add_runs([record(sid, run_index=i) for i in range(3)])
        store.delete_session(sid)
    conn = raw(db)
    try:
        assert conn.execute("SELECT count(*) FROM session_runs").fetchone()[0] == 0
    finally:
        conn.close()


@SQLITE_ONLY
def test_counting_a_page_of_sessions_never_reads_runs(db: Path) -> None:
    with RunStore(db) as store:
        ids = [store.create_session(backend="cpu").id for _ in range(3)]
        store.add_runs([record(s, run_index=i) for s in ids for i in range(50)])
        statements: list[str] = []
        reader = store._reader()  # noqa: SLF001  (the thread's read connection)
        assert reader is not None
        reader.set_trace_callback(statements.append)  # type: ignore[attr-defined]
        assert store.runs_done_counts(ids) == dict.fromkeys(ids, 50)
        reader.set_trace_callback(None)  # type: ignore[attr-defined]
    conn = raw(db)
    try:
        for q in statements:
            plan = " | ".join(r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {q}"))
            assert " runs" not in plan, plan
    finally:
        conn.close()
    assert statements
