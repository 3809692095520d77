"""Live view deltas over REST (issue 32), on SQLite and PostgreSQL.

The live view asks ``GET sessions/<id>?figures=1&since=<view_version>`` and gets
what changed since the view it holds; applied to its first view, every delta gives
the view a fresh full request gives. A panel the server cannot answer with a delta
(another model, too far behind) gets the full view. The first view of a running
session followed through the events socket is built by the server's follower, not
in the request.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import TYPE_CHECKING, Any

import pytest

from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.server.base import MODELS_KEY
from nsight_lab.store.run_store import RunStore
from nsight_lab.store.writer import StoreWriter
from nsight_lab.viewmodel import cache
from nsight_lab.viewmodel.delta import apply_delta

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

REGIONS = ("gemm", "softmax", "layernorm")


def _records(sid: int, start: int, stop: int) -> list[RunRecord]:
    """Records ``start`` .. ``stop`` of a two-config session of three regions."""
    out = []
    for i in range(start, stop):
        run, region = divmod(i, len(REGIONS))
        config = (run // 500) % 2
        out.append(
            RunRecord(
                session_id=sid, config_index=config, config={"n": 256 << config},
                run_index=run, annotation=REGIONS[region],
                duration_ns=1000.0 * (region + 1) + i % 89 + 900 * (i % 401 == 0),
                backend="events", kernels=("k0",),
                metrics={"dram__bytes_read.sum": 1.0e6 + i % 1000},
                telemetry=Telemetry(
                    sm_clock_mhz=1980.0 - i % 40, temperature_c=40.0 + i % 9,
                    throttled=i % 333 == 0,
                ),
            )
        )  # fmt: skip
    return out


@pytest.fixture
def kernel_store(db_path: Path | str) -> Iterator[RunStore]:
    """The kernel's store: it holds its running sessions (PostgreSQL: their locks)."""
    with RunStore(db_path) as store:
        yield store


def _running_session(store: RunStore) -> int:
    return store.create_session(
        backend="events", name="live", configs=[{"n": 256}, {"n": 512}],
        runs_planned=100_000,
    ).id  # fmt: skip


async def _view(jp_fetch: Any, sid: int, **params: Any) -> tuple[dict[str, Any], int]:
    response = await jp_fetch(
        "nsight-lab", "api", "sessions", str(sid),
        params={"figures": 1, "tail": 1, **params}, raise_error=False,
    )  # fmt: skip
    assert response.code == 200, response.body[:300]
    return json.loads(response.body), len(response.body)


async def _taken(models: Any, runs: int, timeout_s: float = 30.0) -> None:
    """Wait until the server's view models read ``runs`` runs (the follower's)."""
    deadline = time.monotonic() + timeout_s
    while models.runs_read < runs and time.monotonic() < deadline:  # noqa: ASYNC110  (polls another thread's counter)
        await asyncio.sleep(0.01)


def _runs_in(summary: list[dict[str, Any]]) -> int:
    return sum(int(str(r["Runs"]).replace(",", "")) for r in summary)


class Panel:
    """A live view: its view, the version it holds, the bytes it was sent."""

    def __init__(self) -> None:
        self.view: dict[str, Any] = {}
        self.token: str | None = None
        self.kinds: list[str] = []
        self.sizes: list[int] = []

    async def refresh(self, jp_fetch: Any, sid: int) -> None:
        since = {"since": self.token} if self.token else {}
        payload, size = await _view(jp_fetch, sid, **since)
        self.kinds.append("delta" if "delta" in payload else "full")
        self.sizes.append(size)
        delta = payload.get("delta")
        self.view = apply_delta(self.view, delta) if delta else _view_of(payload)
        self.token = payload["view_version"]

    async def until(self, jp_fetch: Any, sid: int, runs: int) -> None:
        """Refresh until the view counts ``runs`` runs (the server publishes its
        followed sessions' views every 0.2 s)."""
        deadline = time.monotonic() + 30
        await self.refresh(jp_fetch, sid)
        while _runs_in(self.view["summary"]) < runs and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            await self.refresh(jp_fetch, sid)


PAGE = {"schema_version", "session", "runs", "last_run_id", "next_after_id", "has_more"}


def _view_of(payload: dict[str, Any]) -> dict[str, Any]:
    """The view's keys of a full answer (every key but the page's and the version)."""
    return {k: v for k, v in payload.items() if k not in {*PAGE, "view_version"}}


async def test_deltas_of_a_streaming_session_rebuild_the_full_view(
    jp_fetch, kernel_store
):
    # Given: a session streamed by a writer thread (the kernel's StoreWriter) at
    # about 3,000 records/s, 4,500 records in all
    sid = _running_session(kernel_store)
    total, done = 4_500, threading.Event()

    def write() -> None:
        writer = StoreWriter(kernel_store)
        for start in range(0, total, 150):
            writer.put(_records(sid, start, start + 150))
            time.sleep(0.05)
        writer.close()
        kernel_store.finish_session(sid, "completed")
        done.set()

    first, _ = await _view(jp_fetch, sid)
    view, token = _view_of(first), first["view_version"]
    thread = threading.Thread(target=write)
    thread.start()

    # When: the live view refreshes with since every 40 ms until it ended, and once more
    kinds = []
    while True:
        ended = done.is_set()
        await asyncio.sleep(0.04)
        payload, _ = await _view(jp_fetch, sid, since=token)
        kinds.append("delta" if "delta" in payload else "full")
        view = (
            apply_delta(view, payload["delta"])
            if "delta" in payload
            else _view_of(payload)
        )
        token = payload["view_version"]
        if ended:
            break
    thread.join()

    # Then: every refresh was a delta, and the view it built is the full view's
    fresh, _ = await _view(jp_fetch, sid)
    assert kinds.count("full") == 0, kinds
    assert len(kinds) >= 5
    assert sum(int(str(r["Runs"]).replace(",", "")) for r in fresh["summary"]) == total
    assert view == _view_of(fresh)


async def test_bytes_per_refresh_stay_bounded_as_the_session_grows(
    jp_fetch, kernel_store
):
    # Given: a running session that gets 150 records between two refreshes
    store = kernel_store
    sid = _running_session(store)
    panel, sizes = Panel(), []
    for start in range(0, 9_000, 150):
        store.add_runs(_records(sid, start, start + 150))
        # When: the live view refreshes until it shows them (the bytes it took)
        before = len(panel.sizes)
        await panel.until(jp_fetch, sid, start + 150)
        sizes.append(sum(panel.sizes[before:]))
    full, full_size = await _view(jp_fetch, sid)

    # Then: 150 records cost at 9,000 records what they did at 1,500 (the full
    # view grows to ~1 MB with the traces, and stays there)
    early, late = max(sizes[5:15]), max(sizes[-10:])
    said = f"bytes per 150 records: early {early:,}, late {late:,}, full {full_size:,}"
    print("\n" + said)  # noqa: T201  (the measured figure is the point)
    assert late <= early * 1.25 + 2_000
    assert late * 8 < full_size
    assert _runs_in(full["summary"]) == 9_000
    assert panel.view == _view_of(full)


async def test_a_panel_that_missed_deltas_gets_the_full_view(
    jp_fetch, jp_web_app, kernel_store, monkeypatch: pytest.MonkeyPatch
):
    # Given: a running session viewed once, and a log of 600 points
    monkeypatch.setattr("nsight_lab.viewmodel.appends.LOG_POINTS", 600)
    store = kernel_store
    sid = _running_session(store)
    models = jp_web_app.settings[MODELS_KEY]
    store.add_runs(_records(sid, 0, 300))
    first, _ = await _view(jp_fetch, sid)
    token = first["view_version"]
    # When: 1,500 records arrive (more points than the log keeps) before the
    # panel asks again (its socket was down, the page hidden)
    store.add_runs(_records(sid, 300, 1_800))
    await _taken(models, 1_800)
    behind, _ = await _view(jp_fetch, sid, since=token)
    deadline = time.monotonic() + 10  # the follower publishes every 0.2 s
    while _runs_in(behind["summary"]) < 1_800 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        behind, _ = await _view(jp_fetch, sid, since=token)
    # ... and a panel of another model (an evicted one, another server)
    epoch, version = token.split(":")
    other, _ = await _view(jp_fetch, sid, since=f"{epoch[::-1]}x:{version}")
    # ... and a malformed since, and one that is up to date
    bad = await jp_fetch(
        "nsight-lab", "api", "sessions", str(sid),
        params={"figures": 1, "since": "1;drop"}, raise_error=False,
    )  # fmt: skip
    same, same_size = await _view(jp_fetch, sid, since=behind["view_version"])
    store.finish_session(sid, "completed")

    # Then: the full view twice, a 400 naming since, an empty delta
    assert "delta" not in behind
    assert sum(int(str(r["Runs"]).replace(",", "")) for r in behind["summary"]) == 1_800
    assert "delta" not in other
    assert _view_of(other) == _view_of(behind)
    assert bad.code == 400
    assert "since" in json.loads(bad.body)["message"]
    assert same["delta"] == {"charts": {}}
    assert same_size < 2_000


async def test_the_first_view_of_a_followed_running_session_is_not_built_in_the_request(
    jp_fetch, jp_ws_fetch, jp_web_app, kernel_store, monkeypatch: pytest.MonkeyPatch
):
    # Given: the sidebar open (the events socket), and a running session that got
    # 6,000 records before anyone viewed it
    builders: list[str] = []
    real = cache.ViewModels._catch_up  # noqa: SLF001

    def recorded(self, store, session_id, entry, most=None):
        taken = real(self, store, session_id, entry, most)
        if taken:
            builders.append(threading.current_thread().name)
        return taken

    monkeypatch.setattr(cache.ViewModels, "_catch_up", recorded)
    socket = await jp_ws_fetch("nsight-lab", "api", "events")
    try:
        sid = _running_session(kernel_store)
        for start in range(0, 6_000, 1_000):
            kernel_store.add_runs(_records(sid, start, start + 1_000))
        models = jp_web_app.settings[MODELS_KEY]
        await _taken(models, 6_000)

        # When: the live view opens it
        panel = Panel()
        await panel.until(jp_fetch, sid, 6_000)
    finally:
        socket.close()

    # Then: its model was built by the follower; the request read no run
    assert models.runs_read == 6_000
    assert set(builders) == {"nsight-lab-view-models"}, builders
    assert _runs_in(panel.view["summary"]) == 6_000
