"""Small requests beside 1,000 events websockets, a 5,000 runs/s writer and an export.

Issue 22: with one store poll per websocket on the server's event loop, 200 open
sockets slowed small requests from 4.6 ms to 296 ms p50 (max 1.37 s), and a 21 MB CSV
export stalled other requests 1.1 s. The target: with 1,000 sockets open while a
kernel-like writer stores 5,000 runs/s, small requests stay <= 50 ms p50 and <= 250 ms
p99, on SQLite and on PostgreSQL.

For each engine this starts a real Jupyter server with the nsight-lab extension on a
fresh store (PostgreSQL: a throwaway cluster; both from ``_server.py``), then:

1. ``idle``: small requests (``GET status`` and ``GET sessions?limit=20``, one after
   the other) with nothing else going on;
2. ``sockets+writer``: the same while ``--sockets`` websockets are open and another
   process writes ``--rate`` runs/s through
   :class:`~nsight_lab.store.writer.StoreWriter` into a running session (what a
   profiling kernel does); every socket's messages are
   read and counted, and the delay of each ``runs-changed`` after the run it names was
   handed to the writer is kept;
3. ``export``: the same while a CSV export of a finished session of ``--export-runs``
   runs streams to a client: the stall is the longest small request that overlapped it.

The small requests are made from a process of their own, so reading 1,000 sockets
does not slow the measuring client. Run it on a quiet machine: every process shares
its cores.

Run: ``python benchmarks/websocket_fanout.py [OUT.json] [--engine sqlite|postgresql]``
(default ``benchmarks/results/websocket_fanout.json``, both engines). ``--repo DIR``
serves another checkout's nsight_lab (the "before" figures: a worktree of dbddba1).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

from _server import (
    SMALL_PATHS,
    Server,
    engine_parser,
    fresh_store,
    measure_engines,
    run_info,
    running_server,
    summary,
)
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

TARGET_P50_MS = 50.0
TARGET_P99_MS = 250.0
FILL_BATCH = 10_000
SETTLE_S = 10.0

_WRITER = r"""
import sys, time
from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.store.run_store import RunStore
from nsight_lab.store.writer import StoreWriter

location, rate, duration = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
store = RunStore(location)
session = store.create_session(backend="cpu", name="live", configs=[{"n": 1024}])
print(session.id, flush=True)
sys.stdin.readline()  # go
writer = StoreWriter(store)
start = time.perf_counter()
done = 0
while (now := time.perf_counter()) - start < duration:
    due = int((now - start) * rate)
    while done < due:
        writer.put([RunRecord(
            session_id=session.id, config_index=0, config={"n": 1024},
            run_index=done, annotation="op", duration_ns=1000.0 + done % 97,
            backend="cpu", kernels=("k0",),
            telemetry=Telemetry(sm_clock_mhz=1980.0, temperature_c=41.0),
        )])
        done += 1
    time.sleep(0.0005)
writer.close()
elapsed = time.perf_counter() - start
store.finish_session(session.id, "completed")
print(done, elapsed, flush=True)
"""

_PROBE = r"""
import json, sys, time, urllib.request
base, token, until = sys.argv[1], sys.argv[2], float(sys.argv[3])
paths = sys.argv[4:]
out = []
i = 0
while time.time() < until:
    path = paths[i % len(paths)]
    i += 1
    auth = {"Authorization": "token " + token}
    req = urllib.request.Request(base + path, headers=auth)
    t0 = time.time()
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            resp.read()
        ok = 1
    except OSError:  # a timeout counts, with the time it took to give up
        ok = 0
    t1 = time.time()
    out.append((t0, t1, ok, (i - 1) % len(paths)))
    time.sleep(0.01)
print(json.dumps(out))
"""


def _raise_open_files(wanted: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(hard, max(soft, wanted))
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return target


_FILL = r"""
import sys
from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.store.run_store import RunStore

location, runs, batch_rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with RunStore(location) as store:
    session = store.create_session(
        backend="cpu", name="export", configs=[{"n": 1024}, {"n": 2048}]
    )
    batch = []
    for i in range(runs):
        batch.append(RunRecord(
            session_id=session.id, config_index=i % 2,
            config={"n": 1024 * (1 + i % 2)}, run_index=i // 2,
            annotation=f"region_{i % 8}", duration_ns=1000.0 + i,
            backend="cpu", kernels=("gemm_kernel", "epilogue"),
            metrics={"dram__bytes_read.sum": 1.0e6 + i, "sm__throughput": 0.5},
            telemetry=Telemetry(
                sm_clock_mhz=1980.0, mem_clock_mhz=2619.0,
                temperature_c=41.0, power_w=300.0,
            ),
        ))
        if len(batch) == batch_rows:
            store.add_runs(batch)
            batch = []
    if batch:
        store.add_runs(batch)
    store.finish_session(session.id, "completed")
    print(session.id)
"""


def _fill_export_session(repo: Path, location: str, runs: int) -> int:
    """A finished session of ``runs`` runs with a few metrics (the export's subject).

    Written by ``repo``'s code, as every write here: the served nsight_lab must
    understand the store's schema.
    """
    out = subprocess.run(  # noqa: S603
        [sys.executable, "-c", _FILL, location, str(runs), str(FILL_BATCH)],
        env=dict(os.environ, PYTHONPATH=str(repo)),
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.split()[-1])


def _probe(server: Server, seconds: float) -> subprocess.Popen[str]:
    return subprocess.Popen(  # noqa: S603
        [
            sys.executable,
            "-c",
            _PROBE,
            server.base,
            server.token,
            str(time.time() + seconds),
            *SMALL_PATHS,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )


Probe = tuple[float, float, int, int]
"""A probe request: sent, answered (time.time()), ok (0: failed), which path."""


def _probe_result(proc: subprocess.Popen[str]) -> list[Probe]:
    out, _ = proc.communicate(timeout=600)
    return [(a, b, ok, path) for a, b, ok, path in json.loads(out)]


async def _open_sockets(server: Server, count: int) -> list[Any]:
    url = f"ws://127.0.0.1:{server.port}/nsight-lab/api/events"
    sockets = []
    for _ in range(count):
        request = HTTPRequest(url, headers={"Authorization": f"token {server.token}"})
        sockets.append(await websocket_connect(request))
    return sockets


async def _read_all(sockets: list[Any], stats: dict[str, Any]) -> None:
    async def read(ws: Any) -> None:  # noqa: ANN401
        while (message := await ws.read_message()) is not None:
            stats["messages"] += 1
            event = json.loads(message)
            if event.get("type") == "runs-changed":
                stats["last_run_ids"].append((time.time(), event["last_run_id"]))

    await asyncio.gather(*(read(ws) for ws in sockets), return_exceptions=True)


async def _scenario(  # noqa: PLR0913
    server: Server,
    location: str,
    *,
    sockets: int,
    rate: float,
    seconds: float,
    export_session: int,
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for path in SMALL_PATHS:  # the first request of each kind imports what it needs
        server.get(path)
    # The server starts its worker processes as it loads; their imports (pandas,
    # plotly) take both cores of a small machine for seconds: not what is measured.
    await asyncio.sleep(SETTLE_S)
    # 1. idle
    results["idle"] = _timed(_probe_result(_probe(server, seconds / 2)))

    # 2. sockets + writer
    opened_at = time.time()
    wss = await _open_sockets(server, sockets)
    open_s = time.time() - opened_at
    stats: dict[str, Any] = {"messages": 0, "last_run_ids": []}
    reader = asyncio.ensure_future(_read_all(wss, stats))
    writer = subprocess.Popen(  # noqa: S603, ASYNC220
        [sys.executable, "-c", _WRITER, location, str(rate), str(seconds + 2)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(server.repo)),
        cwd=server.repo,
    )
    assert writer.stdin is not None  # noqa: S101
    assert writer.stdout is not None  # noqa: S101
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, writer.stdout.readline)
    writer.stdin.write("\n")
    writer.stdin.flush()
    await asyncio.sleep(1.0)  # the writer up to speed
    probe = _probe(server, seconds)
    pairs = await loop.run_in_executor(None, _probe_result, probe)
    line = await loop.run_in_executor(None, writer.stdout.readline)
    writer.wait(60)
    written, elapsed = line.split()
    results["sockets_and_writer"] = {
        "sockets": sockets,
        "sockets_open_s": round(open_s, 2),
        "writer_runs": int(written),
        "writer_runs_per_s": round(int(written) / float(elapsed)),
        "messages_received": stats["messages"],
        "messages_per_socket": round(stats["messages"] / max(sockets, 1), 1),
        **_timed(pairs),
    }

    # 3. an export streaming while the sockets stay open (writer stopped)
    probe = _probe(server, seconds / 2)
    await asyncio.sleep(0.5)
    t0 = time.time()
    path = f"nsight-lab/api/sessions/{export_session}/export?format=csv"
    size = len(await loop.run_in_executor(None, server.get, path))
    t1 = time.time()
    pairs = await loop.run_in_executor(None, _probe_result, probe)
    overlapping = [p for p in pairs if p[1] >= t0 and p[0] <= t1]
    results["export"] = {
        "csv_bytes": size,
        "csv_mib": round(size / 2**20, 1),
        "export_s": round(t1 - t0, 2),
        "requests_during_export": _timed(overlapping),
        "stall_ms": round(max((p[1] - p[0] for p in overlapping), default=0) * 1000, 1),
    }
    for ws in wss:
        ws.close()
    reader.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reader
    return results


def _timed(pairs: list[Probe]) -> dict[str, Any]:
    """The summary of some probe requests (a failed one: 30 s timeout or error).

    ``by_path``: the same for each small request alone (``GET sessions`` reads the
    listed sessions' runs, a cost of its own beside a large session).
    """

    def of(chosen: list[Probe]) -> dict[str, Any]:
        return summary(
            [(b - a) * 1000 for a, b, _, _ in chosen],
            sum(1 for _, _, ok, _ in chosen if not ok),
        )

    return {
        **of(pairs),
        "by_path": {
            path: of([p for p in pairs if p[3] == index])
            for index, path in enumerate(SMALL_PATHS)
        },
    }


def run_engine(engine: str, args: argparse.Namespace) -> dict[str, Any]:
    """Everything for one engine, on a store of its own."""
    with fresh_store(engine, "nsight-lab-fanout") as store:
        if store is None:
            return {"skipped": "no PostgreSQL binaries (initdb, pg_ctl)"}
        export_session = _fill_export_session(
            args.repo, store.location, args.export_runs
        )
        with running_server(args.repo, store) as server:
            result = asyncio.run(
                _scenario(
                    server,
                    store.location,
                    sockets=args.sockets,
                    rate=args.rate,
                    seconds=args.seconds,
                    export_session=export_session,
                )
            )
    busy = result["sockets_and_writer"]
    result["met"] = (
        busy.get("p50_ms", 1e9) <= TARGET_P50_MS
        and busy.get("p99_ms", 1e9) <= TARGET_P99_MS
        and busy.get("failed", 1) == 0
    )
    return result


def main() -> int:
    """Measure each engine and write the JSON."""
    parser = engine_parser(__doc__, "websocket_fanout.json")
    parser.add_argument("--sockets", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=5000.0, help="runs/s written")
    parser.add_argument("--seconds", type=float, default=20.0, help="per measurement")
    parser.add_argument("--export-runs", type=int, default=130_000, help="~21 MB CSV")
    args = parser.parse_args()
    args.repo = args.repo.resolve()
    files = _raise_open_files(args.sockets * 2 + 256)
    info = run_info(args.repo)
    info["machine"]["open_files_limit"] = files
    out: dict[str, Any] = {
        "targets": {"p50_ms": TARGET_P50_MS, "p99_ms": TARGET_P99_MS},
        "small_requests": list(SMALL_PATHS),
        "served_from": str(args.repo),
        **info,
        "args": {k: str(v) for k, v in vars(args).items()},
    }
    measure_engines("websocket_fanout", args, out, run_engine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
