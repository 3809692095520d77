"""The server's view models: a refresh reads the runs stored since the last, once."""

from __future__ import annotations

import time

import pytest

from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.errors import NotFoundError
from nsight_lab.store.run_store import RunStore
from nsight_lab.viewmodel import ViewModels, build
from nsight_lab.viewmodel.cache import latest


def _runs(sid: int, start: int, stop: int) -> list[RunRecord]:
    return [
        RunRecord(
            session_id=sid,
            config_index=0,
            config={"n": 1},
            run_index=i // 2,
            annotation="ab"[i % 2],
            duration_ns=1000.0 + i % 13,
            backend="events",
            metrics={"dram__bytes_read.sum": 5.0e5 + i},
            telemetry=Telemetry(sm_clock_mhz=1900.0),
        )
        for i in range(start, stop)
    ]


@pytest.fixture
def store(tmp_path):
    with RunStore(tmp_path / "store.sqlite") as opened:
        yield opened


def test_a_refresh_reads_only_the_runs_stored_since_the_last(store) -> None:
    # Given: a session viewed once (not running: no follower feeds it)
    sid = store.create_session(backend="events", configs=[{"n": 1}]).id
    store.add_runs(_runs(sid, 0, 300))
    store.finish_session(sid, "interrupted")
    models = ViewModels(max_points=50)
    first = models.view(store, sid)
    assert models.runs_read == 300

    # When: 40 more runs are stored, and it is viewed twice
    store.add_runs(_runs(sid, 300, 340))
    second = models.view(store, sid)
    third = models.view(store, sid)

    # Then: 40 runs read, once; the view is that of all 340 runs
    assert models.runs_read == 340
    assert second is not first
    assert third["figures"] is second["figures"]  # nothing new: the same view
    whole = build(store.runs(sid), store.get_session(sid), max_points=50).to_json()
    assert second["summary"] == whole["summary"]
    assert [r["Runs"] for r in second["summary"]] == ["170", "170"]


def test_the_cache_keeps_the_most_recently_viewed_sessions(store) -> None:
    ids = [store.create_session(backend="events").id for _ in range(3)]
    for sid in ids:
        store.add_runs(_runs(sid, 0, 4))
        store.finish_session(sid, "completed")
    models = ViewModels(capacity=2)
    for sid in ids:
        models.view(store, sid)
    assert len(models) == 2
    models.view(store, ids[0])  # evicted: read again
    assert models.runs_read == 4 * 4


def test_a_deleted_session_is_dropped_and_reported(store) -> None:
    sid = store.create_session(backend="events").id
    store.add_runs(_runs(sid, 0, 4))
    store.finish_session(sid, "completed")
    models = ViewModels()
    models.view(store, sid)
    store.delete_stopped_session(sid)
    with pytest.raises(NotFoundError):
        models.view(store, sid)
    assert len(models) == 0


def test_a_running_session_is_fed_in_the_background(store) -> None:
    # Given: a running session viewed once
    sid = store.create_session(backend="events").id
    store.add_runs(_runs(sid, 0, 10))
    models = ViewModels()
    models.view(store, sid)

    # When: runs arrive and no request comes
    store.add_runs(_runs(sid, 10, 60))
    deadline = time.monotonic() + 10
    while models.runs_read < 60 and time.monotonic() < deadline:
        time.sleep(0.02)

    # Then: the follower took them and publishes their view; the next view reads none
    assert models.runs_read == 60
    deadline = time.monotonic() + 10
    while [r["Runs"] for r in models.view(store, sid)["summary"]] != ["30", "30"]:
        assert time.monotonic() < deadline, "the follower did not publish the view"
        time.sleep(0.05)
    assert models.runs_read == 60
    models.close()


def test_latest_keeps_each_regions_last_runs_in_order() -> None:
    runs = _runs(1, 0, 10)
    kept = latest(runs, 2)
    assert [r.run_index for r in kept] == [3, 3, 4, 4]


def test_the_follower_keeps_what_it_holds_out_of_full_collections(
    store, monkeypatch
) -> None:
    """Issue 32: full collections walked the followed models (307-408 ms pauses).

    While a running session is followed, what the server holds is frozen every
    FREEZE_EVERY_RUNS runs read (out of the collector's reach); once the session
    ends and nothing is followed, it is put back (no object stays frozen for good).
    """
    import gc

    from nsight_lab.viewmodel import cache

    monkeypatch.setattr(cache, "FREEZE_EVERY_RUNS", 100)
    assert gc.get_freeze_count() == 0
    sid = store.create_session(backend="events").id
    store.add_runs(_runs(sid, 0, 10))
    models = ViewModels()
    models.view(store, sid)
    try:
        frozen = []
        for start in range(10, 1010, 100):
            store.add_runs(_runs(sid, start, start + 100))
            deadline = time.monotonic() + 10
            while models.runs_read < start + 100 and time.monotonic() < deadline:
                time.sleep(0.02)
            frozen.append(gc.get_freeze_count())
        # Frozen while following, and more as the model grew
        assert frozen[0] > 0
        assert frozen[-1] > frozen[0]
        # The session ends: the follower stops and releases everything it froze
        store.finish_session(sid, "completed")
        deadline = time.monotonic() + 10
        while gc.get_freeze_count() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gc.get_freeze_count() == 0
    finally:
        models.close()


def test_a_freeze_guard_leaves_another_users_freeze_alone() -> None:
    import gc

    from nsight_lab.gc_freeze import FreezeGuard

    gc.freeze()
    try:
        before = gc.get_freeze_count()
        guard = FreezeGuard(every=1)
        assert not guard.start()
        guard.grew(10)
        guard.release()
        assert gc.get_freeze_count() == before  # neither grown nor released
    finally:
        gc.unfreeze()
