"""History at 100,000 sessions / 10,000,000 runs (issue 32): server time, side by side.

For each engine (SQLite; PostgreSQL on a throwaway cluster of ``tests/_postgres.py``)
and each size of ``--sizes`` (sessions of 100 runs each), a fresh store is filled by
``history_fill.py`` with the "before" code (``--before-rev``, the package extracted
from git), so it has that version's schema, and the "after" code (this checkout)
opens it once (its migration, if one is due, timed). Two real Jupyter servers with
the extension serve it at once, one per version (``_server.Server``, each request's
own server time logged by tornado), taking each request in turn, so the host's
load falls on both alike (where the after code migrated the schema, the before code
is timed first, alone). Each serves, as the sidebar asks:

- ``first_page``: ``GET sessions?limit=50&offset=0``;
- ``filter_annotation``: ``GET sessions?annotation=NAME&limit=50&offset=0``, NAME in
  5 % of the sessions; ``filter_rare``: in one session of 10,000;
- ``compare``: ``GET compare?a=A&b=B``, two sessions of the same regions, one
  recent, one from the middle of the history;
- ``export``: ``GET sessions/<id>/export?format=csv`` (the runs, as a file);
- informational, no target: ``last_page`` (``offset`` = sessions - 50) and
  ``filter_text`` (``text=NAME``, a substring search).

Each request is sent once unmeasured (``first``: a worker process's start and a cold
cache count there), then ``--repeat`` times over other sessions; the target
(300 ms of server time) is judged on their median (``met``; ``met_every_time``: on
their largest). The store's size is the SQLite file (with its WAL) or the tables'
and indexes' total on PostgreSQL (``pg_total_relation_size``).

Run: ``.venv/bin/python benchmarks/history_scale.py --sizes 10000,100000``; writes
``benchmarks/results/history_scale_issue32.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _server import Server, Store, fresh_store, run_info
from history_fill import RARE, RARE_EVERY, VOCABULARY

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
TARGET_MS = 300.0
TARGETS = ("first_page", "filter_annotation", "filter_rare", "compare", "export")
API = "nsight-lab/api/"
HTTP_OK = 200


def before_tree(rev: str, into: Path) -> Path:
    """``rev``'s ``nsight_lab`` package, extracted from git into ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(  # noqa: S603
        ["git", "-C", str(ROOT), "archive", rev, "nsight_lab"],  # noqa: S607
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)  # noqa: S603, S607
    version = ROOT / "nsight_lab" / "_version.py"  # generated at install, not in git
    (into / "nsight_lab" / "_version.py").write_bytes(version.read_bytes())
    return into


def child(code_root: Path, *args: str, timeout: float = 3600) -> str:
    """Run ``python ARGS`` with ``code_root``'s nsight_lab; its stdout."""
    env = dict(os.environ, PYTHONPATH=str(code_root))
    env.pop("NSIGHT_LAB_STORE", None)
    done = subprocess.run(  # noqa: S603  (our own interpreter and scripts)
        [sys.executable, *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    if done.returncode != 0:
        msg = f"{args[:2]} failed: {done.stderr[-3000:]}"
        raise RuntimeError(msg)
    return done.stdout


def store_size(location: str) -> dict[str, Any]:
    """Bytes of the store: its files (SQLite), or its tables and indexes."""
    if location.startswith("postgresql:"):
        with psycopg.connect(location) as conn:
            rows = conn.execute(
                "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = 'public' AND c.relkind = 'r'"
            ).fetchall()
            database = conn.execute(
                "SELECT pg_database_size(current_database())"
            ).fetchone()
        tables = {str(name): int(size) for name, size in rows}
        return {
            "bytes": sum(tables.values()),
            "database_bytes": int(database[0]) if database else None,
            "tables": tables,
        }
    path = Path(location)
    files = [f for f in path.parent.iterdir() if f.name.startswith(path.name)]
    return {"bytes": sum(f.stat().st_size for f in files)}


def requests(sessions: int, repeat: int) -> dict[str, list[str]]:
    """Each operation's requests: the unmeasured first, then ``repeat`` more."""

    def sid(i: int) -> int:  # 0-based copy -> id, skipping the rare sessions
        while i % RARE_EVERY == RARE_EVERY - 1:
            i -= 20
        return i + 1

    n = repeat + 1
    newest = sessions - 1
    middle = (sessions // 2 // 20) * 20
    pairs = [
        (sid(middle - 20 * k + (newest - k) % 20), sid(newest - k)) for k in range(n)
    ]
    exports = [sid(newest - k * max(1, sessions // n)) for k in range(n)]
    names = [VOCABULARY[k % len(VOCABULARY)] for k in range(n)]
    page = "limit=50&offset=0"
    return {
        "first_page": [f"sessions?{page}"] * n,
        "filter_annotation": [f"sessions?annotation={a}&{page}" for a in names],
        "filter_rare": [f"sessions?annotation={RARE}&{page}"] * n,
        "compare": [f"compare?a={a}&b={b}" for a, b in pairs],
        "export": [f"sessions/{s}/export?format=csv" for s in exports],
        "last_page": [f"sessions?limit=50&offset={max(0, sessions - 50)}"] * n,
        "filter_text": [f"sessions?text={a}&{page}" for a in names],
    }


def settle(pid: int, quiet_s: float = 3.0, most_s: float = 90.0) -> float:
    """Wait until the server and its children stop working (imports, warm-ups).

    Quiet: under 5 % of a CPU over ``quiet_s``. Returns the seconds waited.
    """

    def cpu() -> float:
        proc = psutil.Process(pid)
        total = 0.0
        for p in (proc, *proc.children(recursive=True)):
            try:
                t = p.cpu_times()
            except psutil.Error:
                continue
            total += t.user + t.system
        return total

    t0 = time.perf_counter()
    last = cpu()
    while time.perf_counter() - t0 < most_s:
        time.sleep(quiet_s)
        now = cpu()
        if now - last < 0.05 * quiet_s:
            break
        last = now
    return round(time.perf_counter() - t0, 1)


def _stats(op: str, times: list[float], walls: list[float]) -> dict[str, Any]:
    """One operation's server times (the first unmeasured) and wall times."""
    measured = times[1:]
    out: dict[str, Any] = {
        "first_ms": round(times[0], 1),
        "median_ms": round(statistics.median(measured), 1),
        "max_ms": round(max(measured), 1),
        "wall_median_ms": round(statistics.median(walls[1:]), 1),
        "server_ms": [round(t, 1) for t in times],
    }
    if op in TARGETS:
        out["met"] = statistics.median(measured) <= TARGET_MS
        out["met_every_time"] = max(measured) <= TARGET_MS
    return out


def _logged(server: Server, start: int, paths: list[str]) -> list[float]:
    """The server times of ``paths``, the requests after the ``start``-th it logged.

    Waited for: tornado logs a request after its reply is sent, so the client may
    read the log before the last line is there.
    """
    deadline = time.perf_counter() + 30
    while True:
        rows = server.request_times()[start:]
        if len(rows) >= len(paths) or time.perf_counter() > deadline:
            break
        time.sleep(0.05)
    uris = [urllib.parse.unquote(uri) for _, _, _, uri in rows]
    assert uris == ["/" + API + urllib.parse.unquote(p) for p in paths], uris  # noqa: S101
    assert all(status == HTTP_OK for _, status, _, _ in rows), rows  # noqa: S101
    return [ms for _, _, ms, _ in rows]


def time_servers(
    roots: dict[str, Path], store: Store, sessions: int, repeat: int
) -> dict[str, dict[str, Any]]:
    """Serve the store with each of ``roots``' code at once; their server times.

    The servers take each request in turn (``before``, ``after``, ``before``, ...),
    so a change of the host's load falls on both sides alike.
    """
    servers: dict[str, Server] = {}
    try:
        for side, root in roots.items():
            # A home (request log, config) of its own; the one store for both.
            home = store.home / side
            home.mkdir(exist_ok=True)
            served = store.served or store.location
            servers[side] = Server(
                root, Store(home, store.location, served), log_times=True
            )
        settled = {}
        for side, server in servers.items():
            server.get(API + "sessions?limit=1")  # the sidebar opened: loads the rest
            settled[side] = settle(server.proc.pid)
        out: dict[str, dict[str, Any]] = {
            side: {"settle_s": settled[side], "ops": {}} for side in servers
        }
        for op, paths in requests(sessions, repeat).items():
            load = os.getloadavg()[0]
            start = {
                side: len(server.request_times()) for side, server in servers.items()
            }
            walls: dict[str, list[float]] = {side: [] for side in servers}
            sizes: dict[str, int] = {}
            for path in paths:
                for side, server in servers.items():
                    t0 = time.perf_counter()
                    sizes[side] = len(server.get(API + path))
                    walls[side].append(1000 * (time.perf_counter() - t0))
            for side, server in servers.items():
                stats = _stats(op, _logged(server, start[side], paths), walls[side])
                stats.update(bytes=sizes[side], load_1min=round(load, 2))
                stats["request"] = paths[-1]
                out[side]["ops"][op] = stats
                print(f"    {side} {op}: {stats}", file=sys.stderr, flush=True)
    finally:
        for server in servers.values():
            server.stop()
    return out


def measure(engine: str, sessions: int, before: Path, repeat: int) -> dict[str, Any]:
    """One engine, one size: fill with the before code; time before and after.

    Side by side when both versions read the same schema; else the before code
    first, then the after code's first open (its migration, timed), then the after
    code.
    """
    with fresh_store(engine, "nsight-lab-history") as store:
        if store is None:
            return {"error": "no PostgreSQL binaries"}
        print(f"[{engine} {sessions:,}] fill", file=sys.stderr, flush=True)
        fill_py = str(ROOT / "benchmarks" / "history_fill.py")
        fill = json.loads(child(before, fill_py, store.location, str(sessions)))
        result: dict[str, Any] = {
            "fill": fill,
            "size_before": store_size(store.location),
        }
        print(f"[{engine} {sessions:,}] {fill}", file=sys.stderr, flush=True)
        same = child(before, "-c", _VERSION) == child(ROOT, "-c", _VERSION)
        result["interleaved"] = same
        if not same:
            result["before"] = time_servers(
                {"before": before}, store, sessions, repeat
            )["before"]
        t0 = time.perf_counter()
        child(ROOT, "-c", _OPEN, store.location)
        result["migration_s"] = round(time.perf_counter() - t0, 2)
        result["size_after"] = store_size(store.location)
        roots = {"before": before, "after": ROOT} if same else {"after": ROOT}
        result.update(time_servers(roots, store, sessions, repeat))
        runs = fill["runs"]
        result["mb_per_million_runs"] = {
            side: round(result[f"size_{side}"]["bytes"] / runs * 1e6 / 2**20, 1)
            for side in ("before", "after")
        }
        return result


_OPEN = (
    "import sys\n"
    "from nsight_lab.store.run_store import RunStore\n"
    "RunStore(sys.argv[1]).close()\n"
)
_VERSION = "from nsight_lab.store.migrations import latest_version as v; print(v())"


def _cell(side: dict[str, Any]) -> str:
    return f"{side['median_ms']} ({side['max_ms']})"


def markdown(out: dict[str, Any]) -> str:
    """The side-by-side tables of ``out``."""
    lines = [
        "# History at scale (issue 32): server time before and after",
        "",
        (
            f"Before `{out['before_rev']}`, after `{out['after_commit']}`; "
            f"{out['machine']['cpus']} CPUs, shared with other jobs. Server time is "
            "tornado's own per request: the median of the measured repeats (their "
            "max in brackets); met: the median within the target. "
            f"Target {TARGET_MS:.0f} ms."
        ),
        "",
        "| engine | sessions | runs | operation | before ms | after ms | met |",
        "| --- | ---: | ---: | --- | ---: | ---: | --- |",
    ]
    sizes = []
    for engine, by_size in out["engines"].items():
        for sessions, r in by_size.items():
            head = f"| {engine} | {int(sessions):,} | "
            if "error" in r:
                lines.append(f"{head} | {r['error']} | | | |")
                continue
            runs = r["fill"]["runs"]
            for op, a in r["after"]["ops"].items():
                met = {True: "yes", False: "**no**", None: "—"}[a.get("met")]
                before = _cell(r["before"]["ops"][op])
                lines.append(f"{head}{runs:,} | {op} | {before} | {_cell(a)} | {met} |")
            per = r["mb_per_million_runs"]
            sizes.append(
                f"{head}{runs:,} | {r['fill']['fill_s']} | {per['before']} | "
                f"{per['after']} | {r['migration_s']} |"
            )
    lines += [
        "",
        (
            "Store size (MB per million runs) and the fill; `open s`: the after "
            "code's first open of the before code's store (a migration, where due)."
        ),
        "",
        "| engine | sessions | runs | fill s | before | after | open s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        *sizes,
    ]
    for note in out.get("notes", []):
        lines += ["", note]
    return "\n".join(lines) + "\n"


def main() -> int:
    """Measure every engine and size; write the JSON and the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes", default="10000,100000", help="sessions, comma-separated"
    )
    parser.add_argument(
        "--engine", choices=("sqlite", "postgresql", "both"), default="both"
    )
    parser.add_argument("--before-rev", default="9e4a4c2")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--name", default="history_scale_issue32")
    args = parser.parse_args()
    engines = ("sqlite", "postgresql") if args.engine == "both" else (args.engine,)
    path = RESULTS / f"{args.name}.json"
    out: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    info = run_info(ROOT)
    out.update(
        before_rev=args.before_rev, after_commit=info["commit"], machine=info["machine"]
    )
    out.setdefault("engines", {})
    with tempfile.TemporaryDirectory(prefix="nsight-lab-before-") as tmp:
        before = before_tree(args.before_rev, Path(tmp))
        for sessions in (int(s) for s in args.sizes.split(",")):
            for engine in engines:
                result = measure(engine, sessions, before, args.repeat)
                out["engines"].setdefault(engine, {})[str(sessions)] = result
                path.write_text(json.dumps(out, indent=1) + "\n")
                path.with_suffix(".md").write_text(markdown(out))
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
