"""The events websocket, fed by writes from a separate process."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from pathlib import Path

import pytest

from nsight_lab.contract.records import SCHEMA_VERSION
from nsight_lab.server import events
from tests.conftest import POSTGRES_ONLY, SQLITE_ONLY

WRITER = Path(__file__).with_name("_events_writer.py")
TARGET_DELAY_S = 0.5


async def write(db_path, *args):
    """Run one write in another process; return what it printed."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(WRITER), *args[:1], str(db_path), *map(str, args[1:]),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return json.loads(out)


class Inbox:
    """Reads a socket in the background, stamping each message on arrival."""

    def __init__(self, ws):
        self.ws = ws
        self.messages: list[tuple[float, dict]] = []
        self.task = asyncio.ensure_future(self._read())

    async def _read(self):
        while (message := await self.ws.read_message()) is not None:
            self.messages.append((time.time(), json.loads(message)))

    async def wait_for(self, timeout_s=5.0, **fields):
        """Return ``(arrival time, event)`` of the first event with these fields."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for arrived, event in self.messages:
                if all(event.get(k) == v for k, v in fields.items()):
                    return arrived, event
            await asyncio.sleep(0.005)
        pytest.fail(f"no event {fields} within {timeout_s} s; got {self.messages}")

    def close(self):
        self.ws.close()
        self.task.cancel()


@pytest.fixture
def open_inbox(jp_ws_fetch):
    """``await open_inbox()``: connect to the events socket (closed after the test)."""
    opened = []

    async def connect():
        box = Inbox(await jp_ws_fetch("nsight-lab", "api", "events"))
        opened.append(box)
        return box

    yield connect
    for box in opened:
        box.close()


async def test_runs_from_another_process_are_pushed_within_half_a_second(
    open_inbox, filled, db_path
):
    inbox = await open_inbox()
    delays = []
    for _ in range(5):
        # When: another process adds a run to the running session
        written = await write(db_path, "run", filled.running)

        # Then
        arrived, event = await inbox.wait_for(
            type="runs-changed", session_id=filled.running,
            last_run_id=written["run_id"],
        )  # fmt: skip
        delays.append(arrived - written["written_at"])
        assert event["schema_version"] == SCHEMA_VERSION
    print(  # noqa: T201  (the measured figure is the point)
        "\nruns-changed delay after a write by another process: "
        + ", ".join(f"{d * 1000:.0f} ms" for d in delays)
        + f" (max {max(delays) * 1000:.0f} ms)"
    )
    assert max(delays) <= TARGET_DELAY_S


async def test_sessions_changed_on_new_finished_and_deleted_sessions(
    open_inbox, filled, db_path, jp_fetch
):
    inbox = await open_inbox()
    # When: another process creates a session
    written = await write(db_path, "session")
    sid = written["session_id"]

    # Then
    arrived, _ = await inbox.wait_for(type="sessions-changed", latest_session_id=sid)
    assert arrived - written["written_at"] <= TARGET_DELAY_S

    # When: it finishes (the writer process is gone, so it may already be marked
    # interrupted by the server; finishing still changes its status)
    inbox.messages.clear()
    await write(db_path, "finish", sid)

    # Then
    await inbox.wait_for(type="sessions-changed", latest_session_id=sid)

    # When: a session is deleted
    inbox.messages.clear()
    await jp_fetch("nsight-lab", "api", "sessions", str(filled.base), method="DELETE")

    # Then
    await inbox.wait_for(type="sessions-changed")
    assert not any(e["type"] == "runs-changed" for _, e in inbox.messages)


async def test_runs_added_to_a_finished_session_are_pushed(open_inbox, filled, db_path):
    inbox = await open_inbox()
    # When: runs go to a session that is not running (the watcher's slow path)
    written = await write(db_path, "run", filled.base)

    # Then
    await inbox.wait_for(
        type="runs-changed", session_id=filled.base, last_run_id=written["run_id"]
    )


@SQLITE_ONLY
async def test_socket_waits_for_the_store_to_exist(open_inbox, db_path):
    inbox = await open_inbox()
    # Given: no store yet; the socket is open and quiet, and creates nothing
    await asyncio.sleep(0.3)
    assert inbox.messages == []
    assert not db_path.exists()

    # When: another process creates the store with a session and a run
    written = await write(db_path, "session-with-run")

    # Then
    await inbox.wait_for(
        type="sessions-changed", latest_session_id=written["session_id"]
    )
    await inbox.wait_for(
        type="runs-changed",
        session_id=written["session_id"],
        last_run_id=written["run_id"],
    )


@pytest.mark.usefixtures("filled")
async def test_nothing_is_pushed_while_nothing_changes(open_inbox):
    inbox = await open_inbox()
    await asyncio.sleep(0.5)
    assert inbox.messages == []


@pytest.mark.usefixtures("filled")
async def test_closing_the_last_socket_stops_the_watcher(jp_ws_fetch, jp_serverapp):
    # Given: two sockets share the server's one watcher thread
    first = await jp_ws_fetch("nsight-lab", "api", "events")
    second = await jp_ws_fetch("nsight-lab", "api", "events")
    hub = jp_serverapp.web_app.settings[events.HUB_KEY]
    watchers = [t for t in threading.enumerate() if t.name == "nsight-lab-events"]
    assert hub.subscribers == 2
    assert hub.watching
    assert len(watchers) == 1

    # When: one closes, the watcher stays; when the last closes, it stops
    first.close()
    await _until(lambda: hub.subscribers == 1)
    assert watchers[0].is_alive()
    second.close()
    await _until(lambda: hub.subscribers == 0)
    await _until(lambda: not watchers[0].is_alive())
    assert not hub.watching

    # Then: a socket opened later gets a watcher again
    third = await jp_ws_fetch("nsight-lab", "api", "events")
    assert hub.watching
    third.close()


async def _until(condition, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


@pytest.mark.usefixtures("filled")
def test_baseline_matches_a_first_poll_without_per_session_lookups(
    db_path, monkeypatch
):
    """The socket's baseline learns what a first poll would, with no events built."""
    from nsight_lab.server.store_handle import StoreHandle
    from nsight_lab.store.run_store import RunStore

    polled = events.StoreWatcher(StoreHandle(db_path))
    polled.poll()
    calls = []
    monkeypatch.setattr(
        RunStore, "last_run_id", lambda _self, sid=None: calls.append(sid) or 0
    )
    based = events.StoreWatcher(StoreHandle(db_path))
    based.baseline()
    assert calls == []
    state = ("_seq", "_max_session", "_max_run", "_count", "_running")
    assert [getattr(based, k) for k in state] == [getattr(polled, k) for k in state]
    monkeypatch.undo()
    assert based.poll() == []


def test_baseline_without_a_store_is_empty(db_path):
    from nsight_lab.server.store_handle import StoreHandle

    watcher = events.StoreWatcher(StoreHandle(db_path))
    watcher.baseline()
    assert watcher.poll() == []


@POSTGRES_ONLY
async def test_postgres_socket_listens_and_never_polls(
    jp_ws_fetch, filled, db_path, monkeypatch
):
    """On PostgreSQL the hub is fed by LISTEN/NOTIFY: it never reads the counter."""
    from nsight_lab.store.run_store import RunStore

    polled = []
    real = RunStore.change_seq
    monkeypatch.setattr(
        RunStore, "change_seq", lambda self: polled.append(1) or real(self)
    )
    inbox = Inbox(await jp_ws_fetch("nsight-lab", "api", "events"))
    try:
        # When: another process adds a run, then finishes the session
        await asyncio.sleep(0.2)  # the listener's LISTEN is in place
        written = await write(db_path, "run", filled.running)
        arrived, _ = await inbox.wait_for(
            type="runs-changed", session_id=filled.running,
            last_run_id=written["run_id"],
        )  # fmt: skip
        assert arrived - written["written_at"] <= TARGET_DELAY_S
        await write(db_path, "finish", filled.running)
        await inbox.wait_for(type="sessions-changed", latest_session_id=filled.running)
        # Then: nothing polled
        assert polled == []
    finally:
        inbox.close()


@POSTGRES_ONLY
async def test_postgres_killed_writer_is_pushed_as_interrupted(
    open_inbox, db_path, jp_fetch
):
    """A writer that dies sends no NOTIFY; the listener's liveness check says so."""
    inbox = await open_inbox()
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-c",
        "import sys, time\n"
        "from nsight_lab.store.run_store import RunStore\n"
        "s = RunStore(sys.argv[1])\n"
        "print(s.create_session(backend='cpu').id, flush=True)\n"
        "time.sleep(120)\n",
        str(db_path), stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert holder.stdout is not None
    sid = int(await holder.stdout.readline())
    await inbox.wait_for(type="sessions-changed", latest_session_id=sid)
    seen = len(inbox.messages)

    holder.kill()
    await holder.wait()

    deadline = time.monotonic() + 10
    status = "running"
    while status == "running" and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        response = await jp_fetch("nsight-lab", "api", "sessions", str(sid))
        status = json.loads(response.body)["session"]["status"]
    assert status == "interrupted"
    assert any(
        event["type"] == "sessions-changed" for _, event in inbox.messages[seen:]
    )
