"""The sidebar's live view of a session of 1,000,000 runs streaming at 5,000 runs/s.

Issue 23: a live session's sidebar refresh re-read every run of the session and
rebuilt every figure and the pandas table, so a long session cost more on every
refresh than the last. The target: with a session of 1,000,000 runs streaming at
5,000 runs/s, every refresh of the live view takes <= 100 ms of server time (p99)
and the server's other requests are unaffected, on SQLite and on PostgreSQL.

For each engine this starts a real Jupyter server with the nsight-lab extension on a
fresh store (PostgreSQL: a throwaway cluster; both from ``_server.py``), then, at once:

- a writer process stores ``--runs`` records at ``--rate`` records/s through
  :class:`~nsight_lab.store.writer.StoreWriter` into a running session (what a
  profiling kernel does), ``--regions`` regions per run, with telemetry and a counter;
- ``--panels`` live views (default 20) refresh as the sidebar's live model does
  (``GET sessions/<id>?after_id=<last>&tail=1&figures=1&since=<view_version>``, at
  most one in flight each and one every ``--interval-ms``, the sidebar's default
  200 ms) until the session ends, from a process of their own that also holds the
  sidebar's events socket; the last ``--late-panels`` (default 2) open half-way
  through, when the session is long (issue 32: a first view built in the request);
- a probe process sends small requests (``GET status``, ``GET sessions?limit=20``)
  one after the other all along.

Issue 32 adds the bytes of each answer: a server that answers ``since`` sends what
changed (a delta), one that does not (the "before" checkout: ``--repo``) the whole
view every time, so the same run measures both. Each panel keeps the summary rows
as it is sent them, and its last summary must count every run written.

Server time is the Jupyter server's own time per request (tornado's
``request_time()``, written to a file by a ``log_function`` set in the server's
config), so the client's own load does not count. Before the stream, the same small
requests on the idle server give the "unaffected" baseline.

Run: ``python benchmarks/live_refresh.py [OUT.json] [--runs N] [--engine E]``
(default ``benchmarks/results/live_refresh.json``, 1,000,000 runs, both engines; a
quick pass: ``--runs 50000``). ``--repo DIR`` serves another checkout's nsight_lab.
``live_deltas.py`` runs it before and after, side by side (issue 32's figures).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
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

if TYPE_CHECKING:
    import argparse

TARGET_REFRESH_P99_MS = 100.0
IDLE_S = 5.0
HTTP_ERROR = 400

_WRITER = r"""
import sys, time
from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.store.run_store import RunStore
from nsight_lab.store.writer import StoreWriter

location, rate = sys.argv[1], float(sys.argv[2])
total, regions = int(sys.argv[3]), int(sys.argv[4])
store = RunStore(location)
session = store.create_session(
    backend="events", name="live", configs=[{"n": 1024}],
    runs_planned=total // regions,
)
print(session.id, flush=True)
sys.stdin.readline()  # go
writer = StoreWriter(store)
start = time.perf_counter()
done = 0
while done < total:
    due = min(total, int((time.perf_counter() - start) * rate))
    batch = []
    while done < due:
        run, region = divmod(done, regions)
        batch.append(RunRecord(
            session_id=session.id, config_index=0, config={"n": 1024},
            run_index=run, annotation=f"region_{region}",
            duration_ns=1000.0 * (1 + region) + done % 97,
            backend="events", kernels=("k0",),
            metrics={"dram__bytes_read.sum": 1.0e6 + done % 1000},
            telemetry=Telemetry(sm_clock_mhz=1980.0, temperature_c=41.0),
        ))
        done += 1
    if batch:
        writer.put(batch)
    time.sleep(0.002)
writer.close()
elapsed = time.perf_counter() - start
store.finish_session(session.id, "completed")
print(done, elapsed, flush=True)
"""

_PROBE = r"""
import json, sys, time, urllib.request
base, token, stop_file = sys.argv[1], sys.argv[2], sys.argv[3]
paths = sys.argv[4:]
import os
out = []
i = 0
while not os.path.exists(stop_file):
    path = paths[i % len(paths)]
    i += 1
    auth = {"Authorization": "token " + token}
    req = urllib.request.Request(base + path, headers=auth)
    t0 = time.time()
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            resp.read()
        ok = 1
    except OSError:
        ok = 0
    out.append((t0, time.time(), ok, path))
    time.sleep(0.02)
print(json.dumps(out))
"""


def _probe(server: Server, stop_file: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(  # noqa: S603
        [
            sys.executable,
            "-c",
            _PROBE,
            server.base,
            server.token,
            str(stop_file),
            *SMALL_PATHS,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )


_PANELS = r"""
import asyncio, json, os, sys, threading, time, urllib.request
import orjson
base, token, sid, panels, late, interval, stop_file, late_file = sys.argv[1:9]
sid, panels, late, interval = int(sid), int(panels), int(late), float(interval)
AUTH = {"Authorization": "token " + token}
counts = {"events": 0}


def events():
    # The sidebar's events socket: what makes the server follow a running session.
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    async def run():
        url = base.replace("http://", "ws://") + "nsight-lab/api/events"
        ws = await websocket_connect(HTTPRequest(url, headers=AUTH))
        while await ws.read_message() is not None:
            counts["events"] += 1

    try:
        asyncio.run(run())
    except Exception as exc:  # an old server, a closed socket: counted, not fatal
        counts["error"] = repr(exc)


def panel(index, late_start, out):
    try:
        run_panel(index, late_start, out)
    except Exception as exc:  # the server went away: what was read is kept
        out.setdefault(index, {"late": late_start, "opened_at": time.time(),
                               "refreshes": [], "runs_in_summary": -1})
        out[index]["error"] = repr(exc)


def run_panel(index, late_start, out):
    if late_start:
        while not os.path.exists(late_file):
            time.sleep(0.02)
    opened_at = time.time()
    last, version, rows, refreshes, finishing = 0, None, [], [], False
    while True:
        started = time.perf_counter()
        path = f"nsight-lab/api/sessions/{sid}?after_id={last}&tail=1&figures=1"
        if version:
            path += "&since=" + version
        req = urllib.request.Request(base + path, headers=AUTH)
        with urllib.request.urlopen(req, timeout=300) as resp:
            body = resp.read()
        took = time.perf_counter() - started
        payload = orjson.loads(body)
        delta = payload.get("delta")
        if delta is None:
            rows = payload["summary"]
        elif "summary" in delta:
            part = delta["summary"]
            rows = (rows + [{}] * part["length"])[: part["length"]]
            for i, row in part["rows"].items():
                rows[int(i)] = row
        version = payload.get("view_version")
        newest = int(payload["last_run_id"])
        refreshes.append([time.time(), round(took * 1000, 2), len(body),
                          "full" if delta is None else "delta", newest - last])
        out[index] = {"late": late_start, "opened_at": opened_at,
                      "refreshes": refreshes, "runs_in_summary": -1}
        last = newest
        if finishing:
            break
        finishing = os.path.exists(stop_file)
        time.sleep(max(0.0, interval - (time.perf_counter() - started)))
    runs = sum(int(str(r.get("Runs", "0")).replace(",", "")) for r in rows)
    out[index] = {"late": late_start, "opened_at": opened_at,
                  "refreshes": refreshes, "runs_in_summary": runs}


# As the sidebar: the list of sessions first (the server then loads the view
# model's code ahead), the events socket, then the live views.
urllib.request.urlopen(urllib.request.Request(
    base + "nsight-lab/api/sessions?limit=20", headers=AUTH), timeout=60).read()
threading.Thread(target=events, daemon=True).start()
time.sleep(2.0)  # the view model's code loaded (plotly), as a sidebar open a while
out = {}
threads = [threading.Thread(target=panel, args=(i, i >= panels - late, out))
           for i in range(panels)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({"panels": [out[i] for i in range(panels)], **counts}))
"""


def _panels(
    server: Server, session_id: int, home: Path, args: argparse.Namespace
) -> subprocess.Popen[str]:
    """The open panels, in a process of their own (see the module docstring).

    Each refreshes its live view as the sidebar's live model does (``since`` the
    version it holds); the last ``--late-panels`` open half-way through.
    """
    return subprocess.Popen(  # noqa: S603
        [sys.executable, "-c", _PANELS, server.base, server.token, str(session_id),
         str(args.panels), str(args.late_panels), str(args.interval_ms / 1000),
         str(home / "panels.stop"), str(home / "panels.late")],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def _measure(
    server: Server, location: str, repo: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """Idle small requests, then the stream with the panels and the probe."""
    home = server.times.parent
    idle_stop = home / "idle.stop"
    idle = _probe(server, idle_stop)
    time.sleep(IDLE_S)
    idle_stop.touch()
    idle.communicate(timeout=60)
    idle_end = time.time()

    writer = subprocess.Popen(  # noqa: S603
        [sys.executable, "-c", _WRITER, location, str(args.rate), str(args.runs),
         str(args.regions)],
        env=dict(os.environ, PYTHONPATH=str(repo)),
        cwd=repo,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    if writer.stdin is None or writer.stdout is None:
        msg = "the writer process has no pipes"
        raise RuntimeError(msg)
    session_id = int(writer.stdout.readline())
    stop_file = home / "busy.stop"
    probe = _probe(server, stop_file)
    panels = _panels(server, session_id, home, args)
    procs = _procs(server, writer, panels)
    cpu_start = {name: _cpu_s(proc.pid) for name, proc in procs}
    stream_start = time.time()
    writer.stdin.write("go\n")
    writer.stdin.flush()
    # The late panels open half-way through the stream: their first view is of a
    # long running session.
    late = threading.Timer(args.runs / args.rate / 2, (home / "panels.late").touch)
    late.start()
    written, elapsed = writer.stdout.readline().split()
    cpu = {
        name: round((_cpu_s(proc.pid) - cpu_start[name]) / float(elapsed), 2)
        for name, proc in procs
    }
    writer.wait(60)
    late.cancel()
    (home / "panels.late").touch()
    (home / "panels.stop").touch()
    read, _ = panels.communicate(timeout=900)
    stop_file.touch()
    probe.communicate(timeout=120)
    stream_end = time.time()
    result = _results(
        server, args, read, (idle_end, stream_start, stream_end),
        written=int(written), elapsed=float(elapsed),
    )  # fmt: skip
    result["cpu_s_per_s"] = {**cpu, "machine_load_1min": os.getloadavg()[0]}
    return result


def _procs(
    server: Server, writer: subprocess.Popen[str], panels: subprocess.Popen[str]
) -> list[tuple[str, subprocess.Popen[Any]]]:
    return [("server", server.proc), ("writer", writer), ("panels", panels)]


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` used so far (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _results(  # noqa: PLR0913
    server: Server,
    args: argparse.Namespace,
    panels_out: str,
    times: tuple[float, float, float],
    *,
    written: int,
    elapsed: float,
) -> dict[str, Any]:
    """The figures of one engine's stream (server log, the panels' own records)."""
    idle_end, stream_start, stream_end = times
    read = json.loads(panels_out)
    panels = read["panels"]
    late_at = min((p["opened_at"] for p in panels if p["late"]), default=stream_end)
    rows = server.request_times()
    views = [(at, ms, uri) for at, _, ms, uri in rows if "figures=1" in uri]
    refresh_ms = [ms for at, ms, uri in views if at >= stream_start]
    # A late panel's first view (no since, after_id=0) once the session is long.
    first_late = [
        ms for at, ms, uri in views
        if at >= late_at and "after_id=0&" in uri and "since=" not in uri
    ]  # fmt: skip
    every = [r for p in panels for r in p["refreshes"]]
    steady = [r for p in panels for r in p["refreshes"][1:]]  # each panel's first out
    small_idle = {
        p: [ms for at, _, ms, uri in rows if uri == "/" + p and at <= idle_end]
        for p in SMALL_PATHS
    }
    small_busy = {
        p: [ms for at, _, ms, uri in rows
            if uri == "/" + p and stream_start <= at <= stream_end]
        for p in SMALL_PATHS
    }  # fmt: skip
    seconds = max(stream_end - stream_start, 1e-9)
    return {
        "runs_written": written,
        "write_s": round(elapsed, 1),
        "rate_achieved": round(written / elapsed, 1),
        "panels": args.panels,
        "late_panels": args.late_panels,
        "refreshes": len(every),
        "refreshes_by_kind": {
            kind: sum(1 for r in every if r[3] == kind) for kind in ("full", "delta")
        },
        "bytes_per_refresh": _bytes([r[2] for r in steady]),
        "bytes_per_refresh_by_tenth_p99": _by_tenth([float(r[2]) for r in steady]),
        "bytes_per_s_all_panels": round(sum(r[2] for r in every) / seconds),
        "refresh_server": summary(refresh_ms),
        "refresh_server_p99_by_tenth_ms": _by_tenth(refresh_ms),
        "first_view_late_server": summary(first_late),
        "refresh_client": summary([r[1] for r in every]),
        "new_runs_per_refresh": summary([float(r[4]) for r in steady]),
        "runs_in_last_summary": [p["runs_in_summary"] for p in panels],
        "events_received": read.get("events", 0),
        "small_idle": {p: summary(v) for p, v in small_idle.items()},
        "small_busy": {p: summary(v) for p, v in small_busy.items()},
        "failed_requests": sum(1 for r in rows if r[1] >= HTTP_ERROR),
    }


def _bytes(values: list[int]) -> dict[str, Any]:
    """n, mean, p50, p99 and max of response sizes, in bytes."""
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "mean": round(sum(ordered) / len(ordered)),
        "p50": ordered[len(ordered) // 2],
        "p99": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
        "max": ordered[-1],
    }


def _by_tenth(values_ms: list[float]) -> list[float]:
    """p99 of each tenth of the refreshes, in order: does a refresh cost more later?"""
    if len(values_ms) < 10:  # noqa: PLR2004
        return []
    size = len(values_ms) // 10
    return [summary(values_ms[i * size : (i + 1) * size])["p99_ms"] for i in range(10)]


def run_engine(engine: str, args: argparse.Namespace) -> dict[str, Any]:
    """Everything for one engine, on a store of its own."""
    with fresh_store(engine, "nsight-lab-live") as store:
        if store is None:
            return {"skipped": "no PostgreSQL binaries (initdb, pg_ctl)"}
        with running_server(args.repo, store, log_times=True) as server:
            time.sleep(args.settle)  # the worker processes' start-up imports
            result = _measure(server, store.location, args.repo, args)
    result["met"] = (
        result["refresh_server"].get("p99_ms", 1e9) <= TARGET_REFRESH_P99_MS
        and result["failed_requests"] == 0
        and set(result["runs_in_last_summary"]) == {result["runs_written"]}
    )
    return result


def main() -> int:
    """Measure each engine and write the JSON."""
    parser = engine_parser(__doc__, "live_refresh.json")
    parser.add_argument("--runs", type=int, default=1_000_000, help="records written")
    parser.add_argument("--rate", type=float, default=5000.0, help="records/s")
    parser.add_argument("--regions", type=int, default=4, help="regions per run")
    parser.add_argument("--interval-ms", type=float, default=200.0)
    parser.add_argument("--panels", type=int, default=20, help="open live views")
    parser.add_argument(
        "--late-panels", type=int, default=2, help="of them, opened half-way"
    )
    parser.add_argument("--settle", type=float, default=10.0, help="s after start")
    args = parser.parse_args()
    args.repo = args.repo.resolve()
    out: dict[str, Any] = {
        "target": {"refresh_server_p99_ms": TARGET_REFRESH_P99_MS},
        "refresh": "GET sessions/<id>?after_id=<last>&tail=1&figures=1&since=<v>",
        "small_requests": list(SMALL_PATHS),
        **run_info(args.repo),
        "args": {k: str(v) for k, v in vars(args).items()},
    }
    measure_engines("live_refresh", args, out, run_engine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
