"""Issue 32's live view deltas, before and after, side by side, on both engines.

For each engine (SQLite, and a throwaway PostgreSQL cluster) this runs, one after
the other so they share the machine's state:

- ``live_refresh.py`` on the "before" checkout and on the "after" one: ``--runs``
  records streamed at ``--rate`` records/s (``--regions`` regions per run) with
  ``--panels`` live views open (``--late-panels`` of them opened half-way): bytes
  per refresh, the refresh's server time p50/p99 (target <= 100 ms), the first
  view of a late panel, the small requests beside;
- ``ui_scale.py --stream`` on each checkout (its server and its built front end):
  the sidebar's live view in Chromium while the same stream runs beside
  ``--panels - 1`` panels over REST: every frame's time (target: none over 50 ms).

Each checkout is a tree whose nsight_lab is served (``PYTHONPATH``) and whose
``nsight_lab/labextension`` is built (``jlpm build:lib`` and ``jupyter-builder
build``): e.g. ``git archive <commit> | tar -x -C DIR`` then the build there.

Run: ``python benchmarks/live_deltas.py --before DIR --after DIR [--runs N]
[--ui-runs N] [--engine sqlite|postgresql|both]``; writes
``benchmarks/results/live_deltas_issue32.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "live_deltas_issue32"


def _git(repo: Path) -> str:
    """The commit a checkout is at (its ``.commit`` file, else git)."""
    marker = repo / ".commit"
    if marker.exists():
        return marker.read_text().strip()
    return subprocess.run(  # noqa: S603
        ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],  # noqa: S607
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip


def _run(cmd: list[str], log: Path) -> int:
    print("$", " ".join(cmd), file=sys.stderr, flush=True)
    with log.open("a") as out:
        done = subprocess.run(  # noqa: S603  (our own scripts)
            cmd, stdout=out, stderr=subprocess.STDOUT, check=False
        )
    return done.returncode


def _refresh(
    engine: str, repo: Path, args: argparse.Namespace, tmp: Path
) -> dict[str, Any]:
    out = tmp / f"refresh_{engine}_{repo.name}.json"
    rc = _run(
        [sys.executable, str(ROOT / "benchmarks" / "live_refresh.py"), str(out),
         "--engine", engine, "--repo", str(repo), "--runs", str(args.runs),
         "--rate", str(args.rate), "--regions", str(args.regions),
         "--panels", str(args.panels), "--late-panels", str(args.late_panels)],
        tmp / "log.txt",
    )  # fmt: skip
    if not out.exists():
        return {"error": f"live_refresh.py exited {rc}"}
    return dict(json.loads(out.read_text()).get(engine, {}))


def _frames(
    engine: str, repo: Path, args: argparse.Namespace, tmp: Path
) -> dict[str, Any]:
    out = tmp / f"ui_{engine}_{repo.name}.json"
    rc = _run(
        [sys.executable, str(ROOT / "benchmarks" / "ui_scale.py"), "--stream",
         "--engine", engine, "--repo", str(repo), "--runs", str(args.ui_runs),
         "--rate", str(args.rate), "--regions", str(args.regions),
         "--http-panels", str(args.panels - 1), "--port", str(args.port),
         "--out", str(out)],
        tmp / "log.txt",
    )  # fmt: skip
    if not out.exists():
        return {"error": f"ui_scale.py --stream exited {rc}"}
    found = json.loads(out.read_text())
    found.pop("raw", None)
    return dict(found)


def _get(d: Any, *path: str) -> Any:  # noqa: ANN401
    for key in path:
        d = d.get(key, {}) if isinstance(d, dict) else {}
    return "-" if d == {} else d


def _pair(d: Any, first: tuple[str, ...], second: tuple[str, ...]) -> str:  # noqa: ANN401
    return f"{_get(d, *first)} / {_get(d, *second)}"


BYTES = ("bytes_per_refresh",)
SERVER = ("refresh_server",)
STATUS = ("small_busy", "nsight-lab/api/status")
FRAMES = ("frame_interval_ms",)
LOAF = ("long_animation_frames",)
ROWS: list[tuple[str, str, Any]] = [
    ("refresh", "records written / rate achieved",
     lambda r: _pair(r, ("runs_written",), ("rate_achieved",))),
    ("refresh", "refreshes (full / delta)", lambda r: _get(r, "refreshes_by_kind")),
    ("refresh", "bytes per refresh, mean", lambda r: _get(r, *BYTES, "mean")),
    ("refresh", "bytes per refresh, p99 / max",
     lambda r: _pair(r, (*BYTES, "p99"), (*BYTES, "max"))),
    ("refresh", "bytes per refresh p99, by tenth of the session",
     lambda r: _get(r, "bytes_per_refresh_by_tenth_p99")),
    ("refresh", "bytes/s to all panels", lambda r: _get(r, "bytes_per_s_all_panels")),
    ("refresh", "refresh server time p50 / p99 ms (target p99 <= 100)",
     lambda r: _pair(r, (*SERVER, "p50_ms"), (*SERVER, "p99_ms"))),
    ("refresh", "refresh server p99 by tenth, ms",
     lambda r: _get(r, "refresh_server_p99_by_tenth_ms")),
    ("refresh", "late panel's first view, server ms (max)",
     lambda r: _get(r, "first_view_late_server", "max_ms")),
    ("refresh", "new records per refresh, p50",
     lambda r: _get(r, "new_runs_per_refresh", "p50_ms")),
    ("refresh", "GET status p50 / p99 ms, while streaming",
     lambda r: _pair(r, (*STATUS, "p50_ms"), (*STATUS, "p99_ms"))),
    ("refresh", "CPU s/s: server, writer, panels; load",
     lambda r: _get(r, "cpu_s_per_s")),
    ("refresh", "every panel's last summary counts every record",
     lambda r: _get(r, "met_summary")),
    ("frames", "browser frames recorded", lambda f: _get(f, "frames")),
    ("frames", "frame interval p50 / p99 ms",
     lambda f: _pair(f, (*FRAMES, "p50"), (*FRAMES, "p99"))),
    ("frames", "longest frame ms (target <= 50)", lambda f: _get(f, *FRAMES, "max")),
    ("frames", "frames over 50 ms", lambda f: _get(f, *FRAMES, "over_50_ms")),
    ("frames", "long animation frames: n / max ms",
     lambda f: _pair(f, (*LOAF, "n"), (*LOAF, "max_ms"))),
    ("frames", "after the first 5 s: longest frame ms / frames over 50 ms",
     lambda f: _pair(f, ("after_first_5_s", "max"), ("after_first_5_s", "over_50_ms"))),
    ("frames", "script ms in long frames, by invoker",
     lambda f: _get(f, "long_frame_scripts_ms")),
]  # fmt: skip


def _md(result: dict[str, Any]) -> str:
    """The side-by-side table of each engine."""
    args = result["args"]
    lines = [
        "# Issue 32, live view deltas: before and after",
        "",
        (
            f"before {result['before']['commit']}, after {result['after']['commit']}; "
            f"{args['runs']} records at {args['rate']} records/s ({args['regions']} "
            f"regions per run), {args['panels']} open panels ({args['late_panels']} "
            f"opened half-way); the browser streams {args['ui_runs']} records. "
            f"{result['machine']}."
        ),
        "",
    ]
    for engine in result["engines"]:
        lines += [f"## {engine}", "", "| | before | after |", "| --- | --- | --- |"]
        for part, name, value in ROWS:
            sides = [result[engine][side].get(part, {}) for side in ("before", "after")]
            lines.append(f"| {name} | {value(sides[0])} | {value(sides[1])} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def main() -> int:
    """Run every measurement, before and after; write the JSON and the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument(
        "--engine", choices=("sqlite", "postgresql", "both"), default="both"
    )
    parser.add_argument("--runs", type=int, default=1_000_000, help="records")
    parser.add_argument("--ui-runs", type=int, default=1_000_000, help="records")
    parser.add_argument("--rate", type=float, default=5000.0)
    parser.add_argument("--regions", type=int, default=4)
    parser.add_argument("--panels", type=int, default=20)
    parser.add_argument("--late-panels", type=int, default=2)
    parser.add_argument("--port", type=int, default=8931)
    parser.add_argument("--skip-ui", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    engines = ["sqlite", "postgresql"] if args.engine == "both" else [args.engine]
    tmp = Path(tempfile.mkdtemp(prefix="nsight-lab-live-deltas-"))
    result: dict[str, Any] = {
        "before": {"repo": str(args.before), "commit": _git(args.before)},
        "after": {"repo": str(args.after), "commit": _git(args.after)},
        "args": {k: str(v) for k, v in vars(args).items()},
        "machine": f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start",
        "engines": engines,
        "targets": {"refresh_server_p99_ms": 100, "frame_ms_max": 50},
    }
    started = time.time()
    for engine in engines:
        result[engine] = {}
        for label, repo in (("before", args.before), ("after", args.after)):
            refresh = _refresh(engine, repo.resolve(), args, tmp)
            written = refresh.get("runs_written")
            refresh["met_summary"] = set(refresh.get("runs_in_last_summary", [])) == {
                written
            }
            refresh.pop("runs_in_last_summary", None)
            result[engine][label] = {"refresh": refresh}
        if not args.skip_ui:
            for label, repo in (("before", args.before), ("after", args.after)):
                result[engine][label]["frames"] = _frames(
                    engine, repo.resolve(), args, tmp
                )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    result["wall_s"] = round(time.time() - started)
    result["machine"] += f", load {os.getloadavg()[0]:.1f} at the end"
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(_md(result))
    print(f"wrote {args.out}.json and .md (logs: {tmp}/log.txt)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
