"""How long the first ``%%nsight`` cell of a fresh kernel takes, and where it goes.

Each measurement runs in a fresh Python process (so every import is cold): it starts an
IPython shell, makes a tensor (and initialises CUDA on a GPU), runs ``%load_ext
nsight_lab``, the first ``%%nsight --runs 10 --quiet`` cell on a small torch op, a bare
loop of the same work (the same number of warm-up and timed runs of the same body,
``time.perf_counter`` around them, a CUDA synchronise at the end on a GPU) and a second
cell. nsight-lab's own time is the cell's wall time minus the bare loop's. The first
cell runs right after ``%load_ext`` ("run all": it waits for the warm-up that
``%load_ext`` starts) and, in as many more processes, after ``--pause`` seconds (a user
typing the cell).

Two more fresh processes find where the first cell's time goes: one under cProfile (the
top of the profile by cumulative time) and one under ``python -X importtime`` (the
modules the first cell imports, by package).

Run: ``python3 benchmarks/first_cell.py OUT_DIR [--backend events] [--repeats 3]``
from a checkout (no install: the children get the repository root on ``PYTHONPATH``;
it uses IPython, torch and what nsight-lab itself imports). Writes
``first_cell_<backend>.json`` (medians, every sample, the profile's top, the imports)
and ``first_cell_<backend>_profile.txt`` to OUT_DIR. ``--before FILE`` embeds an
earlier result under ``"before"`` (a before/after comparison in one file).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RUNS = 10
WARMUP = 2  # nsight-lab's default --warmup
BARE_REPEATS = 5  # the bare loop's time: the median of this many loops
MARK = "first-cell-benchmark: first cell starts"
SETUP = {
    "cpu": "import torch\nx = torch.randn(1 << 20)\ny = x * 2.0\n",
    "events": (
        "import torch\nx = torch.randn(1 << 24, device='cuda')\ny = x * 2.0\n"
        "torch.cuda.synchronize()\n"
    ),
}
"""The user's cells before profiling: torch imported, the tensor made, the op run once
(CUDA initialised on a GPU), as in a notebook."""
BODY = "y = x * 2.0"


def _cell(backend: str) -> str:
    options = f"--backend {backend} --runs {RUNS} --warmup {WARMUP} --quiet"
    return f"%%nsight {options}\n{BODY}\n"


def _shell(backend: str) -> Any:  # noqa: ANN401
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    _run(shell, SETUP[backend])
    return shell


def _run(shell: Any, source: str) -> None:  # noqa: ANN401
    result = shell.run_cell(source)
    if not result.success:
        error = result.error_in_exec or result.error_before_exec
        msg = f"cell failed: {source!r}: {error!r}"
        raise RuntimeError(msg)


def _bare_loop(shell: Any, backend: str) -> float:  # noqa: ANN401
    """Seconds for the warm-up and timed runs of the body with nothing around them."""
    code = compile(BODY, "<bare>", "exec")
    ns = shell.user_ns
    sync = None
    if backend != "cpu":
        import torch

        sync = torch.cuda.synchronize
        sync()
    t0 = time.perf_counter()
    for _ in range(WARMUP + RUNS):
        exec(code, ns)  # noqa: S102
    if sync is not None:
        sync()
    return time.perf_counter() - t0


def _timed(shell: Any, source: str) -> float:  # noqa: ANN401
    t0 = time.perf_counter()
    _run(shell, source)
    return time.perf_counter() - t0


def child_time(backend: str, pause: float) -> dict[str, Any]:
    """One fresh process: time ``%load_ext``, cell one, a bare loop, cell two.

    ``pause`` seconds pass between ``%load_ext`` and the first cell (a user typing it;
    0 is "run all").
    """
    t_start = time.perf_counter()
    shell = _shell(backend)
    t_setup = time.perf_counter() - t_start
    t_load = _timed(shell, "%load_ext nsight_lab")
    time.sleep(pause)
    before = set(sys.modules)
    t_first = _timed(shell, _cell(backend))
    imported = sorted({m.split(".")[0] for m in set(sys.modules) - before})
    bare = statistics.median(_bare_loop(shell, backend) for _ in range(BARE_REPEATS))
    t_second = _timed(shell, _cell(backend))
    bare_after = statistics.median(
        _bare_loop(shell, backend) for _ in range(BARE_REPEATS)
    )
    return {
        "pause_s": pause,
        "setup_s": t_setup,
        "load_ext_s": t_load,
        "first_cell_s": t_first,
        "bare_loop_s": bare,
        "first_cell_own_s": t_first - bare,
        "second_cell_s": t_second,
        "second_cell_own_s": t_second - bare_after,
        "first_cell_imported_packages": imported,
        "scipy_imported": "scipy" in sys.modules,
        "dynamo_imported": "torch._dynamo" in sys.modules,
        "warm_up_errors": list(
            shell.magics_manager.registry["NsightMagics"].warm_up.errors
        ),
    }


def child_profile(backend: str, top: int) -> dict[str, Any]:
    """One fresh process: cProfile of the first cell; its top by cumulative time."""
    shell = _shell(backend)
    _run(shell, "%load_ext nsight_lab")
    profiler = cProfile.Profile()
    t0 = time.perf_counter()
    profiler.enable()
    _run(shell, _cell(backend))
    profiler.disable()
    wall = time.perf_counter() - t0
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(top)
    return {"profiled_first_cell_s": wall, "profile": text.getvalue()}


def child_imports(backend: str) -> None:
    """One fresh process under ``-X importtime``: marks where the first cell starts."""
    shell = _shell(backend)
    _run(shell, "%load_ext nsight_lab")
    print(MARK, file=sys.stderr, flush=True)
    _run(shell, _cell(backend))
    print(MARK.replace("starts", "ends"), file=sys.stderr, flush=True)


def _import_costs(stderr: str) -> dict[str, Any]:
    """Sum ``-X importtime``'s cumulative microseconds of the first cell's top imports.

    Only the outermost imports (the least indented lines) count, so nothing is counted
    twice; they are grouped by top-level package.
    """
    lines = stderr.splitlines()
    try:
        start = lines.index(MARK) + 1
        end = lines.index(MARK.replace("starts", "ends"))
    except ValueError:
        return {"error": "markers not found", "stderr_tail": stderr[-2000:]}
    entries: list[tuple[int, str, int]] = []
    for line in lines[start:end]:
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, total_us, raw = line.split("|", 2)
        depth = (len(raw) - len(raw.lstrip(" "))) // 2
        try:
            entries.append((depth, raw.strip(), int(total_us)))
        except ValueError:
            continue
    if not entries:
        return {"total_s": 0.0, "by_package_s": {}, "top_modules_s": {}}
    outer = min(d for d, _, _ in entries)
    by_package: dict[str, float] = defaultdict(float)
    top_modules = []
    for depth, name, cumulative in entries:
        if depth == outer:
            by_package[name.split(".")[0]] += cumulative / 1e6
            top_modules.append((name, cumulative / 1e6))
    top_modules.sort(key=lambda item: -item[1])
    return {
        "total_s": round(sum(by_package.values()), 4),
        "by_package_s": {
            k: round(v, 4) for k, v in sorted(by_package.items(), key=lambda kv: -kv[1])
        },
        "top_modules_s": {k: round(v, 4) for k, v in top_modules[:25]},
    }


def _spawn(args: list[str], env: dict[str, str], *, importtime: bool = False) -> Any:  # noqa: ANN401
    cmd = [
        sys.executable,
        *(["-X", "importtime"] if importtime else []),
        __file__,
        *args,
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)  # noqa: S603
    if proc.returncode != 0:
        msg = f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
        raise RuntimeError(msg)
    if importtime:
        return proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:  # noqa: PLR0915  (one straight script)
    """Measure in fresh processes and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "out_dir", type=Path, nargs="?", default=ROOT / "benchmarks" / "results"
    )
    parser.add_argument("--backend", default="cpu", choices=sorted(SETUP))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--pause",
        type=float,
        default=2.0,
        help="also measure with this pause (s) after %%load_ext (0: skip)",
    )
    parser.add_argument("--pause-s", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--top", type=int, default=40, help="profile lines kept")
    parser.add_argument("--before", type=Path, help="an earlier result to embed")
    parser.add_argument("--label", default="", help="a note stored with the result")
    parser.add_argument(
        "--child", choices=["time", "profile", "imports"], help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)

    if args.child == "time":
        print(json.dumps(child_time(args.backend, args.pause_s)))
        return
    if args.child == "profile":
        print(json.dumps(child_profile(args.backend, args.top)))
        return
    if args.child == "imports":
        child_imports(args.backend)
        return

    out_dir: Path = args.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nsight-lab-first-cell-") as tmp:
        home = Path(tmp)
        env = dict(os.environ)
        # A fresh store each process: the first cell also creates the database.
        pythonpath = [
            str(ROOT),
            *filter(None, env.get("PYTHONPATH", "").split(os.pathsep)),
        ]
        env["PYTHONPATH"] = os.pathsep.join(pythonpath)
        base = ["--backend", args.backend]
        samples: list[dict[str, Any]] = []
        paused: list[dict[str, Any]] = []
        pauses = [0.0] + ([args.pause] if args.pause > 0 else [])
        for pause in pauses:
            for i in range(args.repeats):
                env["NSIGHT_LAB_HOME"] = str(home / f"time{pause}-{i}")
                child = [*base, "--child", "time", "--pause-s", str(pause)]
                (paused if pause else samples).append(_spawn(child, env))
                shown = {
                    k: round(v, 4)
                    for k, v in (paused if pause else samples)[-1].items()
                    if isinstance(v, float)
                }
                print(f"pause {pause} s, run {i + 1}: {json.dumps(shown)}", flush=True)
        env["NSIGHT_LAB_HOME"] = str(home / "profile")
        profile = _spawn([*base, "--child", "profile", "--top", str(args.top)], env)
        env["NSIGHT_LAB_HOME"] = str(home / "imports")
        imports = _import_costs(
            _spawn([*base, "--child", "imports"], env, importtime=True)
        )

    keys = [k for k, v in samples[0].items() if isinstance(v, float)]
    result: dict[str, Any] = {
        "what": (
            "first %%nsight cell of a fresh process (IPython shell, tensor made, op "
            "run once), --runs 10 --warmup 2 --quiet on `y = x * 2.0`; own = cell "
            "wall - a bare loop of the same 12 runs (median of 5 loops); medians of "
            "fresh processes; "
            "median_s: the cell right after %load_ext (run all), "
            "median_s_after_pause: after a pause (a user typing the cell)"
        ),
        "label": args.label,
        "backend": args.backend,
        "cell": _cell(args.backend),
        "repeats": args.repeats,
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        },
        "median_s": {k: statistics.median(s[k] for s in samples) for k in keys},
        "median_s_after_pause": (
            {k: statistics.median(s[k] for s in paused) for k in keys}
            if paused
            else None
        ),
        "samples": samples,
        "samples_after_pause": paused,
        "profiled_first_cell_s": profile["profiled_first_cell_s"],
        "profile_top": [
            line.rstrip() for line in profile["profile"].splitlines() if line.strip()
        ],
        "first_cell_imports": imports,
    }
    try:
        import torch

        result["machine"]["torch"] = torch.__version__
        if args.backend != "cpu":
            result["machine"]["gpu"] = torch.cuda.get_device_name(0)
    except Exception as exc:  # noqa: BLE001  (a note, not a failure)
        result["machine"]["torch"] = f"unavailable: {exc}"
    if args.before is not None:
        before = json.loads(args.before.read_text())
        before.pop("before", None)
        result["before"] = before
    stem = f"first_cell_{args.backend}"
    (out_dir / f"{stem}_profile.txt").write_text(profile["profile"])
    (out_dir / f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n")
    summary = {k: round(v, 4) for k, v in result["median_s"].items()}
    if paused:
        after = result["median_s_after_pause"]
        summary |= {f"{k} (pause {args.pause} s)": round(after[k], 4) for k in keys}
    print(
        json.dumps(
            {
                "median_s": summary,
                "first_cell_imports_by_package_s": imports.get("by_package_s"),
            },
            indent=2,
        )
    )
    print(profile["profile"][:5000])


if __name__ == "__main__":
    main()
