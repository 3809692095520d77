"""Every read path of a huge session: its time and peak memory, one child process each.

Issue 29 item 3: at ``--max-configs 1000000`` the cell took 219 s / 3.6 GB, ``show``
492 s / 17.5 GB, ``GET sessions/<id>?figures=1`` never answered. This measures, for a
session stored in a fresh store (SQLite; PostgreSQL with ``--postgres URL``):

- ``cell_end`` (the largest grid only): a real ``%%nsight --backend cpu --runs 1``
  cell over the grid in an IPython shell, from start to its results frame;
- ``show``, ``compare`` (the session against itself), ``export`` (CSV to a file):
  the ``nsight-lab`` command, as a user runs it;
- ``GET sessions`` (a page of 50, the sidebar's list), ``GET sessions/<id>`` (the
  first page of runs, 5,000), ``GET sessions/<id>?tail=500`` (the live view's poll)
  and ``GET sessions/<id>?figures=1`` (the session view): the functions the server's
  handlers call, with the reply encoded as the server encodes it.

Each path runs in its own child process; its peak RSS is the child's ``VmHWM``
(``ru_maxrss`` from ``os.wait4`` for one killed at the timeout), so nothing one path
allocated counts against another,
and the figure includes the interpreter and its imports (``baseline`` is a child
that only imports what the server imports). Times are wall times of the child's
work, without its start.

Sessions (``--sizes``): ``10000x100`` (10,000 configs x 100 runs, 1 region: one
million stored runs) and the largest grid the README documents (``--max-configs``'s
maximum, 1 run; :data:`nsight_lab.options.profile.MAX_CONFIGS`). Their runs go in
through :meth:`RunStore.add_runs` (batches of 20,000), the one write path.

Run: ``.venv/bin/python benchmarks/huge_sessions.py``; writes
``benchmarks/results/huge_sessions_cpu.json`` (``--postgres URL``: adds a
``postgresql`` section; ``python tests/_postgres.py`` starts a throwaway cluster).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "huge_sessions_cpu.json"
BUDGET_MB = 1024
"""The memory budget every server read path is held to (peak RSS of its process)."""
BATCH = 20_000

_CHILD = r"""
import json, os, sys, time
path, arg = sys.argv[1], json.loads(sys.argv[2])
out = {}
t0 = time.perf_counter()
if path == "baseline":
    import nsight_lab.server.handlers, nsight_lab.viewmodel.session  # noqa: F401
elif path == "get_sessions":
    from nsight_lab.store.run_store import RunStore
    from nsight_lab.viewmodel.encode import dumps
    from nsight_lab.viewmodel.pages import sessions_page
    t0 = time.perf_counter()
    with RunStore() as store:
        body = dumps(sessions_page(store, {}, limit=50, offset=0))
    out["bytes"] = len(body)
elif path in ("get_session_page", "get_session_tail"):
    from nsight_lab.store.run_store import RunStore
    from nsight_lab.viewmodel.jobs import page_json
    t0 = time.perf_counter()
    with RunStore() as store:
        tail = 500 if path == "get_session_tail" else -1
        body = page_json(store.location, False, arg["sid"], 0, 5000, tail)
    out["bytes"] = len(body)
elif path == "get_session_figures":
    from nsight_lab.store.run_store import RunStore
    from nsight_lab.viewmodel.cache import ViewModels
    from nsight_lab.viewmodel.encode import dumps
    from nsight_lab.viewmodel.pages import session_page
    t0 = time.perf_counter()
    with RunStore() as store:
        page = session_page(store, arg["sid"], 0, 500, 500)
        body = dumps({**page, **ViewModels().view(store, arg["sid"])})
    out["bytes"] = len(body)
    view = json.loads(body)
    out["figure_points"] = {
        name: sum(len(t.get("x") or t.get("y") or ()) for t in fig.get("data", ()))
        for name, fig in view["figures"].items()
    }
    out["figure_traces"] = {n: len(f["data"]) for n, f in view["figures"].items()}
    out["summary_rows"] = len(view["summary"])
elif path in ("show", "compare", "export"):
    from nsight_lab.cli.main import run
    import contextlib, io
    argv = {
        "show": ["show", str(arg["sid"])],
        "compare": ["compare", str(arg["sid"]), str(arg["sid"])],
        "export": ["export", str(arg["sid"]), "-o", arg["csv"]],
    }[path]
    t0 = time.perf_counter()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out["rc"] = run(argv)
    text = buf.getvalue()
    out["bytes"] = len(text) if path != "export" else os.path.getsize(arg["csv"])
    out["first_line"] = text.splitlines()[0] if text else ""
elif path == "cell_end":
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext nsight_lab")
    shell.run_cell("x = 0")
    t0 = time.perf_counter()
    r = shell.run_cell(arg["cell"])
    out["ok"] = r.success
    out["error"] = repr(r.error_in_exec or r.error_before_exec)[:300]
    frame = shell.user_ns.get("_")
    out["frame_rows"] = None if frame is None else int(len(frame))
out["seconds"] = round(time.perf_counter() - t0, 3)
with open("/proc/self/status") as status:
    for line in status:
        if line.startswith("VmHWM:"):
            out["peak_rss_mb"] = round(int(line.split()[1]) / 1024, 1)
print("RESULT " + json.dumps(out))
"""


def run_child(
    path: str, env: dict[str, str], timeout: float, **arg: object
) -> dict[str, Any]:
    """:func:`child` with the child's own peak RSS, read with ``os.wait4``."""
    proc = subprocess.Popen(  # noqa: S603  (our own interpreter and script)
        [sys.executable, "-c", _CHILD, path, json.dumps(arg)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    start = time.perf_counter()
    killer = _Killer(proc.pid, timeout)
    out = proc.stdout.read() if proc.stdout else ""
    err = proc.stderr.read() if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    killer.cancel()
    result: dict[str, Any] = {"path": path}
    for line in out.splitlines():
        if line.startswith("RESULT "):
            result.update(json.loads(line[7:]))
    if "seconds" not in result:
        last = (err.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        result["failed"] = (
            f"timed out after {timeout:.0f} s" if killer.fired else last[:300]
        )
    # The child's own high-water mark (VmHWM, after its exec); ru_maxrss would
    # count the parent's pages at the fork. A killed child: ru_maxrss, an upper bound.
    result.setdefault("peak_rss_mb", round(usage.ru_maxrss / 1024, 1))
    result["wall_s"] = round(time.perf_counter() - start, 3)
    result["within_budget"] = (
        result["peak_rss_mb"] <= BUDGET_MB and "failed" not in result
    )
    return result


class _Killer:
    """Kill the child ``pid`` after ``timeout`` seconds (a path that never answers)."""

    def __init__(self, pid: int, timeout: float) -> None:
        import threading  # noqa: PLC0415

        self.fired = False
        self._pid = pid
        self._timer = threading.Timer(timeout, self._kill)
        self._timer.daemon = True
        self._timer.start()

    def _kill(self) -> None:
        self.fired = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._pid, 9)

    def cancel(self) -> None:
        self._timer.cancel()


def build(configs: int, runs: int) -> int:
    """Store a finished session of ``configs`` x ``runs`` runs of one region; its id.

    The grid is two parameters (``a`` x ``b``), as ``--param a=... --param b=...``
    lays it out; durations vary per config and run.
    """
    sys.path.insert(0, str(ROOT))
    from nsight_lab.contract.records import RunRecord, Telemetry  # noqa: PLC0415
    from nsight_lab.store.run_store import RunStore  # noqa: PLC0415

    side = round(configs**0.5)
    if side * side != configs:
        side = configs
    other = configs // side
    grid = [{"a": i, "b": j} for i in range(side) for j in range(other)]
    telemetry = Telemetry(sm_clock_mhz=None, temperature_c=None)
    with RunStore() as store:
        session = store.create_session(
            backend="cpu",
            name=f"huge {configs}x{runs}",
            options={
                "params": {"a": list(range(side)), "b": list(range(other))},
                "runs": runs,
                "max_configs": configs,
            },
            configs=grid,
            runs_planned=configs * runs,
            cell_source="x = a * b",
        )
        batch: list[RunRecord] = []
        for ci, config in enumerate(grid):
            for r in range(runs):
                batch.append(
                    RunRecord(
                        session_id=session.id, config_index=ci, config=config,
                        run_index=r, annotation="cell",
                        duration_ns=1000.0 + (ci * 7919 + r * 104729) % 997,
                        backend="cpu", telemetry=telemetry,
                    )
                )  # fmt: skip
                if len(batch) >= BATCH:
                    store.add_runs(batch)
                    batch = []
        if batch:
            store.add_runs(batch)
        store.finish_session(session.id, "completed")
    return session.id


READ_PATHS = (
    "baseline",
    "get_sessions",
    "get_session_page",
    "get_session_tail",
    "show",
    "compare",
    "export",
    "get_session_figures",
)


def measure(
    size: str, env: dict[str, str], work: Path, timeout: float, *, cell: bool
) -> dict[str, Any]:
    """Build one session (in the store ``env`` names) and time every read path."""
    configs, runs = (int(x) for x in size.split("x"))
    os.environ["NSIGHT_LAB_HOME"] = env["NSIGHT_LAB_HOME"]
    os.environ.pop("NSIGHT_LAB_STORE", None)
    if "NSIGHT_LAB_STORE" in env:
        os.environ["NSIGHT_LAB_STORE"] = env["NSIGHT_LAB_STORE"]
    t0 = time.perf_counter()
    sid = build(configs, runs)
    entry: dict[str, Any] = {
        "configs": configs,
        "runs_per_config": runs,
        "stored_runs": configs * runs,
        "build_s": round(time.perf_counter() - t0, 1),
        "paths": {},
    }
    print(f"[{size}] built session {sid} in {entry['build_s']} s", flush=True)
    for path in READ_PATHS:
        res = run_child(path, env, timeout, sid=sid, csv=str(work / f"{size}.csv"))
        entry["paths"][path] = res
        print(f"[{size}] {path}: {res}", flush=True)
    (work / f"{size}.csv").unlink(missing_ok=True)
    if cell:
        side = round(configs**0.5)
        other = configs // side
        text = (
            "%%nsight --backend cpu --runs 1 --warmup 0 --quiet"
            f" --max-configs {configs}"
            f" --param a=range({side}) --param b=range({other})\n"
            "x = a * b\n"
        )
        res = run_child("cell_end", env, timeout, cell=text)
        entry["paths"]["cell_end"] = res
        print(f"[{size}] cell_end: {res}", flush=True)
    return entry


def main() -> None:
    """Measure, print and write :data:`RESULTS`."""
    sys.path.insert(0, str(ROOT))
    from nsight_lab.options.profile import MAX_CONFIGS  # noqa: PLC0415

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", default=["10000x100", f"{MAX_CONFIGS}x1"])
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--postgres", help="a PostgreSQL URL (an empty database)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    largest = f"{MAX_CONFIGS}x1"
    report: dict[str, Any] = {
        "what": "issue 29 item 3: each read path of a huge session, one child each",
        "budget_mb": BUDGET_MB,
        "max_configs": MAX_CONFIGS,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "engines": {},
    }
    engines = {"sqlite": None}
    if args.postgres:
        engines["postgresql"] = args.postgres
    for engine, url in engines.items():
        results = {}
        for size in args.sizes:
            with tempfile.TemporaryDirectory(prefix="nsight-lab-huge-") as tmp:
                env = {**os.environ, "NSIGHT_LAB_HOME": tmp}
                env.pop("NSIGHT_LAB_STORE", None)
                if url:
                    env["NSIGHT_LAB_STORE"] = url
                    _empty_postgres(url)
                results[size] = measure(
                    size, env, Path(tmp), args.timeout, cell=size == largest
                )
        report["engines"][engine] = results
    args.output.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.output}")


def _empty_postgres(url: str) -> None:
    """Drop every table of the throwaway database (a fresh store per size)."""
    import psycopg  # noqa: PLC0415

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")


if __name__ == "__main__":
    main()
