"""The events sockets share one store watcher, off the event loop (issue 22).

With one watcher per socket, each change cost one store read per open socket, on
the server's event loop: 200 sockets slowed small requests from 4.6 ms to 296 ms.
These tests judge the structure (reads per change, which thread reads, who gets
what); the pace under 1,000 sockets is benchmarks/websocket_fanout.py's.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from nsight_lab.server import events
from nsight_lab.store.run_store import RunStore
from tests.server.test_events import TARGET_DELAY_S, Inbox, write

SOCKETS = 12


@pytest.fixture
def store_reads(monkeypatch):
    """Every ``latest_change``/``change_seq`` the server makes: (method, thread)."""
    reads: list[tuple[str, threading.Thread]] = []
    for name in ("latest_change", "change_seq"):
        real = getattr(RunStore, name)

        def counted(self, _real=real, _name=name):
            reads.append((_name, threading.current_thread()))
            return _real(self)

        monkeypatch.setattr(RunStore, name, counted)
    return reads


@pytest.fixture
def inboxes(jp_ws_fetch):
    opened: list[Inbox] = []

    async def connect(count):
        opened.extend(
            [
                Inbox(await jp_ws_fetch("nsight-lab", "api", "events"))
                for _ in range(count)
            ]
        )
        return list(opened)

    yield connect
    for box in opened:
        box.close()


async def _settle(reads, quiet_s=0.4):
    """Wait until the watcher has taken its baseline and only polls."""
    await asyncio.sleep(quiet_s)
    reads.clear()


async def test_one_store_read_per_change_whatever_the_socket_count(
    inboxes, filled, db_path, store_reads
):
    # Given: many sockets open on a quiet store
    boxes = await inboxes(SOCKETS)
    await _settle(store_reads)

    # When: another process creates a session
    written = await write(db_path, "session")
    sid = written["session_id"]
    for box in boxes:
        await box.wait_for(type="sessions-changed", latest_session_id=sid)

    # Then: the change was read once, not once per socket
    looked_up = [name for name, _ in store_reads if name == "latest_change"]
    assert 1 <= len(looked_up) <= 2, store_reads  # 2: a write seen across two polls
    del filled


@pytest.mark.usefixtures("filled")
async def test_no_store_read_on_the_event_loop(inboxes, db_path, store_reads):
    loop_thread = threading.current_thread()  # the test's loop is the server's
    boxes = await inboxes(3)
    written = await write(db_path, "session")  # read on both engines
    for box in boxes:
        await box.wait_for(
            type="sessions-changed", latest_session_id=written["session_id"]
        )
    assert store_reads, "the watcher read nothing"
    on_loop = [name for name, thread in store_reads if thread is loop_thread]
    assert on_loop == []


async def test_every_socket_gets_each_run_within_half_a_second(
    inboxes, filled, db_path
):
    boxes = await inboxes(SOCKETS)
    await asyncio.sleep(0.3)
    written = await write(db_path, "run", filled.running)
    arrivals = []
    for box in boxes:
        arrived, _ = await box.wait_for(
            type="runs-changed", session_id=filled.running,
            last_run_id=written["run_id"],
        )  # fmt: skip
        arrivals.append(arrived)
        # each socket got it once, not once per socket
        same = [
            e for _, e in box.messages
            if e["type"] == "runs-changed" and e["last_run_id"] == written["run_id"]
        ]  # fmt: skip
        assert len(same) == 1
    assert max(arrivals) - written["written_at"] <= TARGET_DELAY_S


async def test_a_socket_opened_later_gets_only_later_changes(inboxes, filled, db_path):
    (first,) = await inboxes(1)
    early = await write(db_path, "run", filled.running)
    await first.wait_for(type="runs-changed", last_run_id=early["run_id"])
    (second,) = (await inboxes(1))[1:]
    late = await write(db_path, "run", filled.running)
    await second.wait_for(type="runs-changed", last_run_id=late["run_id"])
    assert [e["last_run_id"] for _, e in second.messages] == [late["run_id"]]


def test_postgres_notices_are_merged_into_one_read(db_path, filled):
    """Many notices between two pushes: one sessions-changed, one read, max run ids."""
    from nsight_lab.server.pg_listen import Notice
    from nsight_lab.server.store_handle import StoreHandle

    handle = StoreHandle(db_path)
    try:
        hub = events.EventHub(handle, 0.1)
        got = hub.notice_events(
            [
                Notice(runs={filled.running: 5}),
                Notice(sessions=True),
                Notice(runs={filled.running: 9, filled.base: 3}),
                Notice(resync=True),
            ]
        )
    finally:
        handle.close()
    assert [e["type"] for e in got] == [
        "sessions-changed", "runs-changed", "runs-changed",
    ]  # fmt: skip
    assert got[0]["latest_session_id"] == filled.running
    assert {e["session_id"]: e["last_run_id"] for e in got[1:]} == {
        filled.running: 9, filled.base: 3,
    }  # fmt: skip
    assert all(json.dumps(e) for e in got)


def test_unsubscribed_hub_delivers_nothing(db_path):
    from nsight_lab.server.store_handle import StoreHandle

    hub = events.EventHub(StoreHandle(db_path), 0.05)
    assert hub.subscribers == 0
    hub.close()  # no thread to stop
    hub.close()
    assert not hub.watching


@pytest.mark.usefixtures("filled")
async def test_a_refused_socket_gets_nothing(jp_ws_fetch, jp_serverapp, db_path):
    """Auth is checked before the hub: a socket without the token never subscribes."""
    import tornado.httpclient

    with pytest.raises(tornado.httpclient.HTTPClientError) as excinfo:
        await jp_ws_fetch(
            "nsight-lab", "api", "events", headers={"Authorization": "token wrong"}
        )
    assert excinfo.value.code in {401, 403}
    hub = jp_serverapp.web_app.settings.get(events.HUB_KEY)
    assert hub is None or hub.subscribers == 0
    await write(db_path, "session")  # a change: still nobody to send it to
    assert hub is None or hub.subscribers == 0


def test_merged_events_say_what_each_client_refetches():
    got = events.merge_events(
        [
            {"type": "runs-changed", "session_id": 2, "last_run_id": 10},
            {"type": "sessions-changed", "latest_session_id": 2},
            {"type": "runs-changed", "session_id": 1, "last_run_id": 4},
            {"type": "runs-changed", "session_id": 2, "last_run_id": 12},
            {"type": "sessions-changed", "latest_session_id": 3},
        ]
    )
    assert [e["type"] for e in got] == ["sessions-changed", *["runs-changed"] * 2]
    assert got[0]["latest_session_id"] == 3
    assert [(e["session_id"], e["last_run_id"]) for e in got[1:]] == [(1, 4), (2, 12)]


def test_costly_fan_outs_are_spaced_and_merged_within_the_bound(db_path, monkeypatch):
    """A fan-out that cost the loop c seconds is followed by none for c / 20 %."""
    from nsight_lab.server.store_handle import StoreHandle

    hub = events.EventHub(StoreHandle(db_path), 0.1)
    posted: list[list[str]] = []
    monkeypatch.setattr(hub, "_post", posted.append)
    monkeypatch.setattr(hub, "_cost_s", 1.0)  # as if 1,000 sockets took 1 s

    def run(last):
        return [{"type": "runs-changed", "session_id": 1, "last_run_id": last}]

    hub._hold(run(1))  # noqa: SLF001  (the watcher thread's step, driven by hand)
    hub._hold(run(2))  # noqa: SLF001
    hub._hold(run(3))  # noqa: SLF001
    assert [json.loads(m)["last_run_id"] for batch in posted for m in batch] == [1]
    # never held past MAX_HOLD_S, whatever the cost: then one push, the latest run
    wait = hub.MAX_HOLD_S + 0.05
    now = time.monotonic
    monkeypatch.setattr(events.time, "monotonic", lambda: now() + wait)
    hub._hold([])  # noqa: SLF001
    assert [json.loads(m)["last_run_id"] for batch in posted for m in batch] == [1, 3]
