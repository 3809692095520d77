r"""Issue 32, per-run cost: a warm nsight-lab cell beside nsight-python's CUPTI tool.

In ONE process (a child per side, interleaved ``before, after, before, after``), the
same matmul sweep (``--configs`` x ``--runs``, warm) goes through NVIDIA nsight-python
1.1.0's CUPTI tool (``nsight.activate(nsight.Tool.CUPTI)``,
``@nsight.analyze.kernel(configs=..., runs=...)``, ``nsight.deactivate()`` at the end)
and through nsight-lab's ``cupti`` and ``events`` backends via the real ``%%nsight``
magic in an in-process IPython shell, the variants interleaved (rotated each round),
the minimum of ``--reps`` walls each. nsight-lab runs as a user runs it (``--quiet``,
default warm-up and L2 flush), with the same work as nsight-python's tool
(``--warmup 0 --cache-control none``: no warm-up run, no flush), and with its live view
(no ``--quiet``). Also: the marginal wall per run (a 256 x 256 matmul, 10 against 60
runs), the first cupti cell of each process, each config's mean and min duration of
nsight-python and nsight-lab (they must agree), and a cProfile of one warm cell per
backend. ``before`` is the package in ``--before`` (default ``.before``: ``git archive
0ab1fce nsight_lab | tar -x -C .before``, or ``.before.tar.gz``), ``after`` the
working tree. Writes ``beside_nsight_python.json`` and ``.md`` to ``--out``.

On the device, from the repository root, ``.before`` (or ``.before.tar.gz``) and
``.whl`` (or ``.site.tar.xz``) carried, in one call (about 2 minutes on an H100)::

    python3 benchmarks/beside_nsight_python.py --out $OUT

``--smoke`` runs on a CPU: the ``cpu`` backend, and the events and cupti backends'
Python paths against ``tests/backends/fake_gpu.py`` (no nsight-python).
"""

# ruff: noqa: S603  (runs this interpreter on this script and pip on carried wheels)
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _beside_cells import child_main  # noqa: E402

SITE = Path("/tmp/site")  # noqa: S108  (the device's scratch, as device_realwork.sh)


def prepare_site(site: Path) -> dict[str, str]:
    """Install the carried wheels (``.site.tar.xz`` or ``.whl``); the child's env."""
    env: dict[str, str] = {}
    if not site.exists():
        packed, wheels = ROOT / ".site.tar.xz", sorted((ROOT / ".whl").glob("*.whl"))
        if packed.exists():
            site.mkdir(parents=True)
            with tarfile.open(packed) as tar:
                tar.extractall(site, filter="data")
        elif wheels:
            subprocess.run(
                [sys.executable, "-m", "pip", "install", "-q", "--no-index",
                 "--no-deps", "--no-compile", "--target", str(site), *map(str, wheels)],
                check=True,
            )  # fmt: skip
    if site.exists():
        env["SITE"] = str(site)
        cupti = sorted(site.glob("nvidia/**/libcupti.so*"))
        if cupti:
            old = os.environ.get("LD_LIBRARY_PATH", "")
            env["LD_LIBRARY_PATH"] = str(cupti[0].parent) + (f":{old}" if old else "")
    return env


def before_root(given: str) -> Path | None:
    """The folder of the ``before`` package (unpacked from a tarball if carried)."""
    root = Path(given)
    if not (root / "nsight_lab").is_dir():
        packed = ROOT / ".before.tar.gz"
        if not packed.exists():
            return None
        root.mkdir(parents=True, exist_ok=True)
        with tarfile.open(packed) as tar:
            tar.extractall(root, filter="data")
    return root if (root / "nsight_lab").is_dir() else None


def run_child(
    side: str, root: Path, args: argparse.Namespace, env: dict[str, str]
) -> dict[str, Any]:
    """One child process: ``side``'s package first on the path; its JSON, or why not."""
    paths = [str(root), str(ROOT)]
    if "SITE" in env:
        paths.append(env["SITE"])
    paths += [p for p in os.environ.get("PYTHONPATH", "").split(":") if p]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "child.json"
        child_env = {
            **os.environ,
            **env,
            "PYTHONPATH": ":".join(paths),
            "NSIGHT_LAB_HOME": str(Path(tmp) / "home"),
            "NSPY_NCU_INIT_AT_IMPORT": "0",
            "MPLBACKEND": "Agg",
        }
        command = [
            sys.executable, __file__, "--child", side, "--child-out", str(out),
            "--configs", args.configs, "--runs", str(args.runs),
            "--reps", str(args.reps), *(["--smoke"] if args.smoke else []),
        ]  # fmt: skip
        started = time.monotonic()
        try:
            done = subprocess.run(
                command, env=child_env, capture_output=True, text=True,
                timeout=args.child_timeout, check=False, cwd=ROOT,
            )  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            return {"side": side, "error": f"timed out after {exc.timeout} s"}
        if not out.exists():
            tail = (done.stdout + done.stderr)[-3000:]
            return {"side": side, "error": f"rc={done.returncode}", "tail": tail}
        result = json.loads(out.read_text())
        result["child_s"] = round(time.monotonic() - started, 1)
        result["stderr_tail"] = done.stderr[-1500:]
        return result


def best(
    children: list[dict[str, Any]], variant: str, key: str = "walls"
) -> float | None:
    """The minimum over the children's rounds of ``variant``."""
    values = [
        v
        for c in children
        for v in c.get("variants", {}).get(variant, {}).get(key, [])
        if v is not None
    ]
    return min(values) if values else None


def summary(sides: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per variant and side: best wall, and the ratio to nsight-python's (same side)."""
    variants = sorted(
        {v for cs in sides.values() for c in cs for v in c.get("variants", {})}
    )
    out: dict[str, Any] = {}
    for variant in variants:
        row: dict[str, Any] = {}
        for side, children in sides.items():
            wall = best(children, variant)
            nspy = best(children, "nsight_python")
            row[side] = wall
            if wall is not None and nspy is not None and variant != "nsight_python":
                row[f"{side}_over_nsight_python"] = round(wall / nspy, 3)
        out[variant] = row
    for side, children in sides.items():
        for child in children:
            for backend, got in child.get("marginal", {}).items():
                row = out.setdefault("per_run", {}).setdefault(backend, {})
                for key in ("per_run_us", "cpu_per_run_us", "fixed_s"):
                    seen = row.get(f"{side}_{key}")
                    row[f"{side}_{key}"] = (
                        got[key] if seen is None else min(seen, got[key])
                    )
        firsts = [
            c.get("first_cupti_cell_s") for c in children if c.get("first_cupti_cell_s")
        ]
        if firsts:
            out.setdefault("first_cupti_cell_s", {})[side] = min(firsts)
    return out


def fmt(value: Any, unit: str = "") -> str:  # noqa: ANN401
    """A table cell."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}{unit}"
    return f"{value}{unit}"


def wall_rows(s: dict[str, Any]) -> list[str]:
    """The walls table, one row per variant."""
    rows = [
        "| variant | before (s) | after (s) | before / nspy | after / nspy |",
        "| --- | --- | --- | --- | --- |",
    ]
    for variant, row in s.items():
        if variant in {"per_run", "first_cupti_cell_s"}:
            continue
        cells = [row.get("before"), row.get("after")]
        cells += [
            row.get("before_over_nsight_python"),
            row.get("after_over_nsight_python"),
        ]
        rows.append(f"| {variant} | " + " | ".join(fmt(c) for c in cells) + " |")
    return rows


def per_run_rows(s: dict[str, Any]) -> list[str]:
    """The per-run table: wall and CPU time per run, before and after."""
    rows = [
        (
            "| backend | before wall | after wall | before cpu | after cpu "
            "| before fixed (s) | after fixed (s) |"
        ),
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for backend, row in s.get("per_run", {}).items():
        keys = ("per_run_us", "cpu_per_run_us", "fixed_s")
        cells = [row.get(f"{side}_{k}") for k in keys for side in ("before", "after")]
        rows.append(f"| {backend} | " + " | ".join(fmt(c) for c in cells) + " |")
    return rows


def config_rows(result: dict[str, Any]) -> list[str]:
    """Each variant's per-config durations (after, first process) against nspy's."""
    after = next((c for c in result["sides"].get("after", []) if "variants" in c), None)
    if after is None:
        return []
    found = after["variants"]
    nspy = found.get("nsight_python", {}).get("per_config") or {}
    rows = [
        "| variant | config | mean (us) | min (us) | runs | mean / nspy's |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for variant, entry in found.items():
        for config, got in (entry.get("per_config") or {}).items():
            theirs = nspy.get(config, {}).get("mean_us")
            ratio = got["mean_us"] / theirs if theirs else None
            cells = [got.get("mean_us"), got.get("min_us"), got.get("runs"), ratio]
            rows.append(
                f"| {variant} | {config} | " + " | ".join(map(fmt, cells)) + " |"
            )
    return rows


def markdown(result: dict[str, Any]) -> str:
    """The tables: walls before/after and against nsight-python; per run; per config."""
    s = result["summary"]
    first = s.get("first_cupti_cell_s", {})
    lines = [
        f"# A warm cell beside nsight-python's CUPTI tool ({result['device']})",
        "",
        (
            f"Sweep: configs {result['configs']}, {result['runs']} runs; walls are the "
            f"minimum of {result['reps']} interleaved rounds x {result['children']} "
            "processes per side; ratios against nsight-python's tool in the same "
            "processes."
        ),
        "",
        *wall_rows(s),
        "",
        (
            "Per run (us; one 256 config, 10 against 110 runs (1010 with --smoke), "
            "min of each): the wall and the process's CPU time; fixed: a 10-run "
            "cell's wall less its 10 runs."
        ),
        "",
        *per_run_rows(s),
        "",
        (
            f"First cupti cell of a process: before {fmt(first.get('before'))} s, "
            f"after {fmt(first.get('after'))} s."
        ),
        "",
        "Per config (after, first process):",
        "",
        *config_rows(result),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the children, merge, write JSON and markdown."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "device-out"))
    parser.add_argument("--smoke", action="store_true", help="CPU: cpu backend, fakes")
    parser.add_argument("--before", default=str(ROOT / ".before"))
    parser.add_argument("--children", type=int, default=2, help="processes per side")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--configs", default="1024,2048,4096")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--child-timeout", type=float, default=75.0)
    parser.add_argument(
        "--deadline", type=float, default=170.0, help="start no child past this (s)"
    )
    parser.add_argument("--site", default=str(SITE))
    parser.add_argument("--child", choices=["before", "after"], help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args)
    started = time.monotonic()
    env = {} if args.smoke else prepare_site(Path(args.site))
    roots = {"after": ROOT}
    before = before_root(args.before)
    if before is not None:
        roots["before"] = before
    sides: dict[str, list[dict[str, Any]]] = {side: [] for side in roots}
    for _ in range(args.children):
        for side in ("before", "after"):
            late = time.monotonic() - started + args.child_timeout > args.deadline
            if side in roots and not (late and all(sides.values())):
                child = run_child(side, roots[side], args, env)
                sides[side].append(child)
                print(
                    side,
                    child.get("error") or child.get("summary_line", ""),
                    flush=True,
                )
    device = next(
        (c.get("device") for cs in sides.values() for c in cs if c.get("device")), "?"
    )
    result = {
        "device": device, "host": platform.node(), "smoke": args.smoke,
        "configs": args.configs, "runs": args.runs, "reps": args.reps,
        "children": args.children, "before": str(before), "sides": sides,
        "wall_s": round(time.monotonic() - started, 1),
    }  # fmt: skip
    result["summary"] = summary(sides)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "beside_nsight_python" + ("_smoke" if args.smoke else "")
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    (out / f"{stem}.md").write_text(markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
