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

Run: ``python3 benchmarks/first_cell.py --out OUT_DIR [--backend cpu|events|cupti]
[--repeats 3]`` (``OUT_DIR`` may also come first, as before) from a checkout (no
install: the children get the repository root on ``PYTHONPATH``; it uses IPython,
torch and what nsight-lab itself imports). Writes ``<name>.json`` (medians, every
sample, the profile's top, the imports), ``<name>.md`` (the table) and
``<name>_profile.txt`` to OUT_DIR; ``<name>`` is ``--name`` or
``first_cell_<backend>``. Before and after in one run: ``--before-root DIR`` (a
folder holding an earlier ``nsight_lab/``) or ``--before-rev REV`` (that revision's,
from git) is measured too, its processes interleaved with this checkout's, and
stored under ``"before"``; ``--before FILE`` embeds an earlier result instead.
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
GPU_SETUP = (
    "import torch\nx = torch.randn(1 << 24, device='cuda')\ny = x * 2.0\n"
    "torch.cuda.synchronize()\n"
)
SETUP = {
    "cpu": "import torch\nx = torch.randn(1 << 20)\ny = x * 2.0\n",
    "events": GPU_SETUP,
    "cupti": GPU_SETUP,
}
"""The user's cells before profiling: torch imported, the tensor made, the op run once
(CUDA initialised on a GPU), as in a notebook."""
BODY = "y = x * 2.0"


def _cell(backend: str) -> str:
    options = f"--backend {backend} --runs {RUNS} --warmup {WARMUP} --quiet"
    return f"%%nsight {options}\n{BODY}\n"


def _shell(backend: str) -> Any:  # noqa: ANN401
    from IPython.core.interactiveshell import InteractiveShell  # noqa: PLC0415

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
        import torch  # noqa: PLC0415  (on a GPU only)

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
    import nsight_lab  # noqa: PLC0415  (which checkout: after the timings)

    return {
        "nsight_lab": str(Path(nsight_lab.__file__).resolve().parent.parent),
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


def _side_env(root: Path) -> dict[str, str]:
    """The children's environment: ``root``'s nsight_lab first on the path."""
    env = dict(os.environ)
    pythonpath = [
        str(root),
        *filter(None, env.get("PYTHONPATH", "").split(os.pathsep)),
    ]
    env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    return env


def _measure(  # noqa: PLR0913  (the run's settings)
    sides: dict[str, Path],
    *,
    backend: str,
    repeats: int,
    pause: float,
    top: int,
    home: Path,
) -> dict[str, dict[str, Any]]:
    """Every side's samples, profile and imports; the sides' samples interleaved.

    Each repeat runs one fresh process per side, the sides' order alternating from
    one repeat to the next, so that a drift of the machine weighs on both alike.
    """
    out: dict[str, dict[str, Any]] = {
        name: {"samples": [], "paused": []} for name in sides
    }
    pauses = [0.0] + ([pause] if pause > 0 else [])
    order = list(sides)
    for wait in pauses:
        for i in range(repeats):
            for name in order if i % 2 == 0 else order[::-1]:
                env = _side_env(sides[name])
                env["NSIGHT_LAB_HOME"] = str(home / f"{name}-time{wait}-{i}")
                child = [
                    "--backend",
                    backend,
                    "--child",
                    "time",
                    "--pause-s",
                    str(wait),
                ]
                sample = _spawn(child, env)
                out[name]["paused" if wait else "samples"].append(sample)
                shown = {
                    k: round(v, 4) for k, v in sample.items() if isinstance(v, float)
                }
                print(
                    f"{name}, pause {wait} s, run {i + 1}: {json.dumps(shown)}",
                    flush=True,
                )
    for name, root in sides.items():
        env = _side_env(root)
        env["NSIGHT_LAB_HOME"] = str(home / f"{name}-profile")
        child = ["--backend", backend, "--child", "profile", "--top", str(top)]
        out[name]["profile"] = _spawn(child, env)
        env["NSIGHT_LAB_HOME"] = str(home / f"{name}-imports")
        out[name]["imports"] = _import_costs(
            _spawn(["--backend", backend, "--child", "imports"], env, importtime=True)
        )
    return out


def _result(
    measured: dict[str, Any],
    backend: str,
    repeats: int,
    label: str,
    root: Path,
) -> dict[str, Any]:
    """One side's result: medians, every sample, the profile's top, the imports."""
    samples, paused = measured["samples"], measured["paused"]
    keys = [k for k, v in samples[0].items() if isinstance(v, float)]
    profile = measured["profile"]
    return {
        "what": (
            "first %%nsight cell of a fresh process (IPython shell, tensor made, op "
            "run once), --runs 10 --warmup 2 --quiet on `y = x * 2.0`; own = cell "
            "wall - a bare loop of the same 12 runs (median of 5 loops); medians of "
            "fresh processes; "
            "median_s: the cell right after %load_ext (run all), "
            "median_s_after_pause: after a pause (a user typing the cell)"
        ),
        "label": label,
        "root": str(root),
        "nsight_lab": samples[0].get("nsight_lab"),
        "backend": backend,
        "cell": _cell(backend),
        "repeats": repeats,
        "machine": _machine(backend),
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
        "first_cell_imports": measured["imports"],
    }


def _machine(backend: str) -> dict[str, Any]:
    machine: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }
    try:
        import torch  # noqa: PLC0415  (a note on the machine)

        machine["torch"] = torch.__version__
        if backend != "cpu":
            machine["gpu"] = torch.cuda.get_device_name(0)
    except Exception as exc:  # noqa: BLE001  (a note, not a failure)
        machine["torch"] = f"unavailable: {exc}"
    return machine


TABLE_ROWS = (
    ("first_cell_own_s", "median_s", "first cell, own time, run all"),
    (
        "first_cell_own_s",
        "median_s_after_pause",
        "first cell, own time, after the pause",
    ),
    ("second_cell_own_s", "median_s", "second cell, own time"),
    ("load_ext_s", "median_s", "`%load_ext nsight_lab`"),
    ("first_cell_s", "median_s", "first cell, wall, run all"),
    ("bare_loop_s", "median_s", "bare loop of the same 12 runs"),
)


def _markdown(result: dict[str, Any], pause: float) -> str:
    """The result as a table: before and after side by side (after alone without)."""
    before = result.get("before")
    sides = [("before", before), ("after", result)] if before else [("", result)]
    head = " | ".join(
        f"{name} ({side.get('label') or 'this checkout'})"
        if name
        else side.get("label") or "this checkout"
        for name, side in sides
    )
    lines = [
        f"# First `%%nsight` cell, backend {result['backend']}",
        "",
        (
            f"Machine: {result['machine'].get('gpu') or 'CPU only'}, "
            f"{result['machine']['cpus']} cores, Python {result['machine']['python']}, "
            f"torch {result['machine'].get('torch')}; {result['repeats']} fresh "
            "processes per figure (medians), the sides interleaved in one run. Cell: "
            f"`{result['cell'].splitlines()[0]}` on `{BODY}`. Own time = the cell's "
            "wall minus a bare loop of the same runs."
        ),
        "",
        f"| seconds (median) | {head} |",
        "|---|" + "---:|" * len(sides),
    ]
    for key, group, title in TABLE_ROWS:
        if any(side.get(group) is None for _, side in sides):
            continue
        title_shown = title.replace("the pause", f"a {pause:g} s pause")
        cells = " | ".join(f"{side[group][key]:.3f}" for _, side in sides)
        lines.append(f"| {title_shown} | {cells} |")
    lines += ["", "Imports during the first cell (`-X importtime`, s, by package):", ""]
    packages = dict.fromkeys(
        p
        for _, side in sides
        for p in side["first_cell_imports"].get("by_package_s", {})
    )
    lines += [f"| package | {head} |", "|---|" + "---:|" * len(sides)]
    for package in packages:
        cells = " | ".join(f"{_package_s(side, package):.3f}" for _, side in sides)
        lines.append(f"| {package} | {cells} |")
    total = " | ".join(
        f"{side['first_cell_imports'].get('total_s', 0.0):.3f}" for _, side in sides
    )
    lines.append(f"| total | {total} |")
    return "\n".join(lines) + "\n"


def _package_s(side: dict[str, Any], package: str) -> float:
    """Seconds ``side``'s first cell spent importing ``package``."""
    by_package = side["first_cell_imports"].get("by_package_s", {})
    return float(by_package.get(package, 0.0))


def _before_tree(rev: str, into: Path) -> Path:
    """``rev``'s ``nsight_lab`` package, extracted from git into ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(  # noqa: S603
        ["git", "-C", str(ROOT), "archive", rev, "nsight_lab"],  # noqa: S607
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(  # noqa: S603
        ["tar", "-x", "-C", str(into)],  # noqa: S607
        input=archive,
        check=True,
    )
    return into


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "out_dir",
        type=Path,
        nargs="?",
        default=None,
        help="as --out (kept for old calls)",
    )
    parser.add_argument(
        "--out", type=Path, help="folder for the results (default benchmarks/results)"
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
    parser.add_argument(
        "--before-root",
        type=Path,
        help="a checkout (a folder holding nsight_lab/) measured in the same run, "
        "interleaved, as the before side",
    )
    parser.add_argument(
        "--before-rev",
        help="as --before-root, from this git revision's nsight_lab/ (needs git)",
    )
    parser.add_argument("--label", default="", help="a note stored with the result")
    parser.add_argument("--before-label", default="", help="the before side's note")
    parser.add_argument(
        "--name",
        help="file names' stem (default first_cell_<backend>): writes <name>.json, "
        "<name>.md and <name>_profile.txt",
    )
    parser.add_argument(
        "--child", choices=["time", "profile", "imports"], help=argparse.SUPPRESS
    )
    return parser


def main(argv: list[str] | None = None) -> None:
    """Measure in fresh processes and write the results."""
    args = _parser().parse_args(argv)
    if args.child == "time":
        print(json.dumps(child_time(args.backend, args.pause_s)))
        return
    if args.child == "profile":
        print(json.dumps(child_profile(args.backend, args.top)))
        return
    if args.child == "imports":
        child_imports(args.backend)
        return

    out_dir: Path = args.out or args.out_dir or ROOT / "benchmarks" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nsight-lab-first-cell-") as tmp:
        home = Path(tmp)
        sides = {"after": ROOT}
        if args.before_rev:
            sides["before"] = _before_tree(args.before_rev, home / "before-tree")
        elif args.before_root:
            sides["before"] = args.before_root.resolve()
        if "before" in sides:
            if not (sides["before"] / "nsight_lab" / "__init__.py").is_file():
                msg = f"{sides['before']} holds no nsight_lab package"
                raise SystemExit(msg)
            sides = {"before": sides["before"], "after": ROOT}
        measured = _measure(
            sides,
            backend=args.backend,
            repeats=args.repeats,
            pause=args.pause,
            top=args.top,
            home=home,
        )
    result = _result(measured["after"], args.backend, args.repeats, args.label, ROOT)
    if "before" in measured:
        before_label = args.before_label or args.before_rev or str(args.before_root)
        result["before"] = _result(
            measured["before"],
            args.backend,
            args.repeats,
            before_label,
            sides["before"],
        )
        result["before"]["root"] = args.before_rev or str(args.before_root)
    elif args.before is not None:
        before = json.loads(args.before.read_text())
        before.pop("before", None)
        result["before"] = before
    stem = args.name or f"first_cell_{args.backend}"
    (out_dir / f"{stem}_profile.txt").write_text(
        measured["after"]["profile"]["profile"]
    )
    (out_dir / f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n")
    markdown = _markdown(result, args.pause)
    (out_dir / f"{stem}.md").write_text(markdown)
    print(markdown)
    print(measured["after"]["profile"]["profile"][:5000])


if __name__ == "__main__":
    main()
