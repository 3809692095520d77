r"""Run NVIDIA nsight-python's own tests (and examples) against nsight-lab's API.

Usage::

    python benchmarks/nsight_python_compat.py --nsight-python-src SRC
        [--device auto|cpu|gpu] [--out DIR] [--results PREFIX]
        [--tests|--examples|--all] [-k EXPR] [--budget S] [--examples-timeout S]
        [--commit SHA]

``SRC`` is a checkout of https://github.com/NVIDIA/nsight-python (this script fetches
nothing; it is pinned at :data:`PINNED_COMMIT`, and the commit found in ``SRC`` is
recorded). Its ``tests/`` are copied to ``DIR/tests`` (``SRC`` is only read) and run
by pytest in a child Python in which ``import nsight`` is nsight-lab's stand-in
(``nsight_shim.install_nsight_shim(replace=True)``, so also where nsight-python is
installed): nsight-python's module tree served by :mod:`nsight_lab.api`. pytest reads
an ini of this script's (nsight-python's own ignores two SWIG warnings; nothing else),
never nsight-lab's.

``--device cpu`` (the default ``auto``: cpu where PyTorch sees no CUDA device) is CI's
condition: the tests' ``device="cuda"`` tensors become CPU tensors
(``nsight_python_examples.cuda_to_cpu_mode``), ``torch.cuda.synchronize`` does nothing,
and where ``cuda.core`` is not importable a stand-in lets the test modules that import
it load (a test that launches a ``cuda.core`` kernel then fails, and is listed as not
applicable on cpu). No backend is forced: the profiles run on what nsight-python's
default tool (NCU) picks in nsight-lab (``auto``: cpu here, events/cupti/ncu on a GPU).

Each test's outcome is written as it finishes (``DIR/outcomes.jsonl``), so a run cut
by ``--budget`` keeps what ran. Verdicts: ``passed``, ``failed``, ``skipped`` (the
test's own skip, with its reason), or ``not applicable`` with the reason: a test of
nsight-python's internals (:data:`INTERNAL`) or, on cpu, of what needs a GPU
(:data:`NEEDS_GPU`). ``--examples`` also runs NVIDIA's examples through
``benchmarks/nsight_python_examples.py`` (its verdicts join the table). Writes
``PREFIX.json`` and ``PREFIX.md`` (default
``benchmarks/results/nsight_python_compat_<device>``). Exit status 0 when nothing
failed.

On the H200 (SRC carried in the repository as ``.nsight-python/``)::

    python benchmarks/nsight_python_compat.py --nsight-python-src .nsight-python \\
        --device gpu --tests --budget 540
    python benchmarks/nsight_python_compat.py --nsight-python-src .nsight-python \\
        --device gpu --examples --budget 540 --results \\
        benchmarks/results/nsight_python_examples_compat_h200
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PINNED_COMMIT = "87367233bd9a975da98e3bd00f2b936c9f7d445f"
"""nsight-python's commit the tables were made at (NVIDIA/nsight-python main)."""

INTERNAL: dict[str, str] = {
    "test_collection.py::test_launch_ncu_runs_with_ncu_available": (
        "nsight-python's ncu attach command line (collection.ncu.launch_ncu, "
        "subprocess patched): nsight-lab runs ncu on a child process with a command "
        "line of its own (tests/backends/ncu/test_isolate.py)"
    ),
    "test_cuda_init_before_nsight.py::*": (
        "nsight-python's injection fails (code 3) when CUDA is initialised before "
        "`import nsight`; nsight-lab injects nothing, so the profile runs then: "
        "different on purpose"
    ),
    "test_info_collector.py::test_profile_session_*": (
        "collection.core.run_profile_session: nsight-python's session loop "
        "(nsight-lab's is nsight_lab.session.profile)"
    ),
    "test_info_collector.py::test_non_picklable_collector_value_is_sanitized": (
        "collection.core._save_collected_info: nsight-python's private file I/O"
    ),
    "test_info_collector.py::test_collected_info_io_failure_is_reported_separately": (
        "collection.core._save_collected_info: nsight-python's private file I/O"
    ),
    "test_info_collector.py::TestAnnotationStateMachine::*": (
        "info_collector's per-annotation state machine (set_annotation_collectors, "
        "collect_for_annotation): nsight-lab's Collectors, run by the profile "
        "(tests/api/test_kernel.py, test_isolated.py)"
    ),
    "test_info_collector.py::TestCollectorFailureWarning::*": (
        "info_collector.warn_collector_failure / reset_collector_failure_warnings: "
        "nsight-python's private warning bookkeeping (nsight-lab warns once per "
        "collector and scope: tests/api/test_kernel.py)"
    ),
    "test_transformation.py::*": (
        "transformation.aggregate_data on nsight-python's raw extraction frame; "
        "nsight-lab aggregates its per-run records (nsight_lab.results)"
    ),
    "test_thermovision.py::*": (
        "thermovision.ThermalController with its NVML reads patched: nsight-python's "
        "thermal loop (nsight-lab's guard: nsight_lab.gpu.telemetry, "
        "tests/test_runner.py)"
    ),
}
"""Tests of nsight-python's internals (fnmatch patterns on the node id), and why."""

NEEDS_GPU: dict[str, str] = {
    "test_info_collector_integration.py::*": (
        "launches cuda.core kernels (a GPU and cuda-core)"
    ),
    "test_profiler.py::test_parameter_ignore_kernel_list*": (
        "launches cuda.core kernels (a GPU and cuda-core)"
    ),
    "test_profiler.py::test_parameter_replay_mode*": (
        "launches cuda.core kernels (a GPU and cuda-core)"
    ),
    "test_thermal_control.py::test": (
        "twenty 12288x12288 matmuls per run to heat a GPU (hours on a CPU)"
    ),
    "test_api_params.py::test_runtime_extraction_errors*": (
        "counts the kernels of each run (a per-kernel GPU backend); the cpu "
        "backend times the region's span"
    ),
    "test_profiler.py::test_parameter_output_prefix": (
        "expects the .ncu-rep of an ncu run; with no ncu nsight-lab says so in one "
        "line and returns the durations (tests/api/test_isolated.py)"
    ),
    "test_profiler.py::test_parameter_output_csv*": (
        "expects the .ncu-rep of an ncu run; with no ncu nsight-lab says so in one "
        "line and returns the durations (tests/api/test_isolated.py)"
    ),
}
"""Tests that need a GPU (skipped as not applicable under ``--device cpu``), and why."""

CPU_FAILURES: dict[str, str] = {
    "need the ncu or pm backend": (
        "asks for hardware counters (the ncu or pm backend), which a CPU has not"
    ),
}
"""On cpu, a failure whose message says this is not applicable, for this reason."""

INI = """[pytest]
filterwarnings =
    ignore:builtin type SwigPy.* has no __module__ attribute:DeprecationWarning
    ignore:builtin type swigvarlink has no __module__ attribute:DeprecationWarning
"""
"""nsight-python's pytest settings (its pyproject's two ignores), nothing of ours."""


def _commit(src: Path, given: str | None) -> str:
    if given:
        return given
    try:
        return subprocess.run(  # noqa: S603  (git on the given checkout)
            ["git", "-C", str(src), "rev-parse", "HEAD"],  # noqa: S607
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no git checkout; give --commit)"


def _device(given: str) -> str:
    if given != "auto":
        return given
    try:
        import torch
    except ImportError:
        return "cpu"
    return "gpu" if torch.cuda.is_available() else "cpu"


# --- the pytest child ---------------------------------------------------------------


class _Recorder:
    """pytest plugin: one JSON line per finished test (and per collection error)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._phases: dict[str, dict[str, Any]] = {}

    def _write(self, row: dict[str, Any]) -> None:
        with self._path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")

    def pytest_collectreport(self, report: Any) -> None:  # noqa: ANN401
        if report.failed:
            self._write(
                {
                    "nodeid": f"{report.nodeid}::<collection>",
                    "outcome": "error",
                    "message": _last_line(str(report.longrepr)),
                    "seconds": 0.0,
                }
            )

    def pytest_runtest_logreport(self, report: Any) -> None:  # noqa: ANN401
        seen = self._phases.setdefault(
            report.nodeid, {"outcome": "passed", "message": "", "seconds": 0.0}
        )
        seen["seconds"] += report.duration
        if report.skipped and seen["outcome"] == "passed":
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
            seen.update(outcome="skipped", message=str(reason))
        elif report.failed:
            seen.update(
                outcome="failed" if report.when == "call" else "error",
                message=_last_line(str(report.longreprtext)),
            )
        if report.when == "teardown":
            self._write({"nodeid": report.nodeid, **self._phases.pop(report.nodeid)})


def _last_line(text: str) -> str:
    """The error's line (pytest's ``E   ...`` lines, else the text's last line)."""
    lines = [line for line in text.splitlines() if line.strip()]
    errors = [line[1:].strip() for line in lines if line.startswith("E ")]
    found = " | ".join(errors[-3:]) if errors else (lines[-1] if lines else "")
    return found[:500]


def _cuda_core_stand_in() -> None:
    """``cuda.core`` where it is not importable: its names raise when used."""
    import importlib.util

    try:
        if importlib.util.find_spec("cuda.core") is not None:
            return
    except (ImportError, ValueError):
        pass

    def no_gpu(*_args: Any, **_kwargs: Any) -> Any:  # noqa: ANN401
        msg = "cuda.core stand-in (nsight_python_compat.py --device cpu): no GPU here"
        raise RuntimeError(msg)

    core = types.ModuleType("cuda.core")
    for name in ("Device", "LaunchConfig", "Program", "ProgramOptions", "launch"):
        setattr(core, name, no_gpu)
    core.__spec__ = None  # find_spec says "not importable": CUDA_CORE_AVAILABLE False
    cuda = sys.modules.get("cuda")
    if cuda is None:
        cuda = types.ModuleType("cuda")
        cuda.__path__ = []
        sys.modules["cuda"] = cuda
    cuda.core = core  # type: ignore[attr-defined]
    sys.modules["cuda.core"] = core


class _CpuConditions:
    """pytest plugin (``--device cpu``): skip :data:`NEEDS_GPU`'s tests, with why."""

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        import pytest

        for item in items:
            reason = _match(item.nodeid, NEEDS_GPU)
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=f"on cpu: {reason}"))


def run_tests_child(args: argparse.Namespace) -> int:
    """In the child: the stand-in, the cpu conditions, then pytest on the copy."""
    import pytest

    from nsight_lab.nsight_shim import install_nsight_shim

    install_nsight_shim(replace=True)
    import nsight

    assert getattr(nsight, "__nsight_lab_shim__", False)  # noqa: S101  (the one switch)
    mode: Any = contextlib.nullcontext()
    if args.device == "cpu":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from nsight_python_examples import cuda_to_cpu_mode

        with contextlib.suppress(ImportError):
            import torch

            torch.cuda.synchronize = lambda *_a, **_k: None  # type: ignore[assignment]
            mode = cuda_to_cpu_mode()
        _cuda_core_stand_in()
    out: Path = args.out
    argv = [
        str(out / "tests"),
        "-c",
        str(out / "pytest.ini"),
        "--rootdir",
        str(out),
        "-p",
        "no:cacheprovider",
        "--import-mode=importlib",
        "--continue-on-collection-errors",
        "-q",
        "-rfEs",
    ]
    if args.k:
        argv += ["-k", args.k]
    plugins: list[object] = [_Recorder(out / "outcomes.jsonl")]
    if args.device == "cpu":
        plugins.append(_CpuConditions())
    with mode:
        return int(pytest.main(argv, plugins=plugins))


# --- the parent: run, classify, write -----------------------------------------------


def _match(nodeid: str, table: dict[str, str]) -> str | None:
    short = nodeid.split("tests/", 1)[-1]
    for pattern, reason in table.items():
        if fnmatch.fnmatchcase(short, pattern) or fnmatch.fnmatchcase(
            short.split("[", 1)[0], pattern
        ):
            return reason
    return None


def classify(row: dict[str, Any], device: str) -> tuple[str, str]:
    """A test's verdict and its reason (see the module docstring)."""
    internal = _match(row["nodeid"], INTERNAL)
    if internal is not None:
        return "not applicable", f"nsight-python internal: {internal}"
    gpu = _match(row["nodeid"], NEEDS_GPU)
    if device == "cpu" and gpu is not None:
        return "not applicable", f"on cpu: {gpu}"
    outcome = str(row["outcome"])
    message = str(row.get("message") or "")
    for text, reason in CPU_FAILURES.items():
        if device == "cpu" and outcome == "failed" and text in message:
            return "not applicable", f"on cpu: {reason}"
    if outcome == "passed":
        return "passed", ""
    if outcome == "skipped":
        return "skipped", str(row.get("message") or "")
    return "failed", str(row.get("message") or "")


def run_tests(args: argparse.Namespace, src: Path) -> list[dict[str, Any]]:
    """Copy the tests, run them in a child under ``--budget``; rows with verdicts."""
    out: Path = args.out
    copy = out / "tests"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(src / "tests", copy)
    (out / "pytest.ini").write_text(INI)
    outcomes = out / "outcomes.jsonl"
    outcomes.unlink(missing_ok=True)
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--nsight-python-src",
        str(src),
        "--device",
        args.device,
        "--out",
        str(out),
        "--run-tests-child",
    ]
    if args.k:
        command += ["-k", args.k]
    log = out / "pytest.log"
    started = time.perf_counter()
    with log.open("w") as stream:
        try:
            subprocess.run(  # noqa: S603  (this script, with its own arguments)
                command,
                cwd=out,
                env=_env(args),
                stdout=stream,
                stderr=subprocess.STDOUT,
                timeout=args.budget,
                check=False,
            )
            cut = False
        except subprocess.TimeoutExpired:
            cut = True
    rows = [json.loads(line) for line in outcomes.read_text().splitlines() if line]
    for row in rows:
        row["nodeid"] = row["nodeid"].split("tests/", 1)[-1]
        row["seconds"] = round(float(row["seconds"]), 2)
        row["verdict"], row["reason"] = classify(row, args.device)
    if cut:
        rows.append(
            {
                "nodeid": "<the rest>",
                "outcome": "not run",
                "verdict": "not run",
                "reason": f"--budget {args.budget:g} s reached after "
                f"{time.perf_counter() - started:.0f} s (pytest.log has the last test)",
                "seconds": 0.0,
            }
        )
    return rows


def _env(args: argparse.Namespace) -> dict[str, str]:
    env = dict(os.environ)
    env["NSIGHT_LAB_HOME"] = str((args.out / "store").resolve())
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT), env.get("PYTHONPATH")])
    )
    env["MPLBACKEND"] = "Agg"
    env.pop("NSPY_NCU_INIT_AT_IMPORT", None)  # nsight-python's default: NCU active
    return env


def run_examples(args: argparse.Namespace, src: Path) -> list[dict[str, Any]]:
    """NVIDIA's examples through ``nsight_python_examples.py``; rows with verdicts."""
    out = args.out / "examples"
    command = [
        sys.executable,
        str(ROOT / "benchmarks" / "nsight_python_examples.py"),
        str(src),
        str(out),
        "--backend",
        args.examples_backend,
        "--timeout",
        str(args.examples_timeout),
    ]
    if args.examples_only:
        command += ["--only", args.examples_only]
    with contextlib.suppress(subprocess.TimeoutExpired):
        subprocess.run(  # noqa: S603  (the examples harness)
            command, env=_env(args), timeout=args.budget, check=False
        )
    results = out / "results.json"
    if not results.exists():
        return [
            {
                "nodeid": "examples",
                "outcome": "not run",
                "verdict": "not run",
                "reason": f"no {results} (cut by --budget {args.budget:g} s?)",
                "seconds": 0.0,
            }
        ]
    found = json.loads(results.read_text())["examples"]
    rows = []
    for name, outcome in found.items():
        verdict = str(outcome["verdict"])
        reason = str(outcome.get("error") or "")
        if verdict.startswith("skipped"):
            verdict, reason = "not applicable", verdict.split(": ", 1)[-1]
        rows.append(
            {
                "nodeid": f"examples/{name}",
                "outcome": str(outcome["status"]),
                "verdict": "failed" if verdict == "timeout" else verdict,
                "reason": reason,
                "seconds": float(outcome.get("wall_s") or 0.0),
            }
        )
    return rows


def _markdown(report: dict[str, Any]) -> str:
    counts = report["counts"]
    lines = [
        f"# nsight-python's tests on nsight-lab ({report['device']})",
        "",
        (
            f"nsight-python commit `{report['nsight_python_commit']}` (pinned "
            f"`{PINNED_COMMIT[:7]}`), nsight-lab {report['nsight_lab_version']} at "
            f"`{report['nsight_lab_commit']}`, serving nsight-python "
            f"{report['nsight_python_api']}'s API; Python {report['python']}, "
            f"{report['torch']}, host {report['host']}."
        ),
        "",
        f"Command: `{report['command']}`",
        "",
        "Counts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
        "",
        "| test | verdict | seconds | reason or error |",
        "| --- | --- | ---: | --- |",
    ]
    for row in report["tests"]:
        reason = str(row.get("reason") or "").replace("|", "\\|")
        lines.append(
            f"| `{row['nodeid']}` | {row['verdict']} | {row['seconds']:.1f} "
            f"| {reason} |"
        )
    return "\n".join(lines) + "\n"


def _versions() -> dict[str, str]:
    from nsight_lab import __version__
    from nsight_lab.nsight_modules import NSIGHT_PYTHON_VERSION

    try:
        import torch

        torch_text = f"torch {torch.__version__}, CUDA {torch.cuda.is_available()}"
    except ImportError:
        torch_text = "no torch"
    try:
        commit = subprocess.run(  # noqa: S603  (git on this repository)
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],  # noqa: S607
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {
        "nsight_lab_version": __version__,
        "nsight_lab_commit": commit,
        "nsight_python_api": NSIGHT_PYTHON_VERSION,
        "torch": torch_text,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the tests and/or the examples; write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nsight-python-src", type=Path, required=True)
    parser.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("/tmp/nsight-python-compat"),  # noqa: S108
    )
    parser.add_argument("--results", type=Path, default=None)
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--tests", action="store_const", const="tests", dest="what")
    what.add_argument("--examples", action="store_const", const="examples", dest="what")
    what.add_argument("--all", action="store_const", const="all", dest="what")
    parser.add_argument("-k", default="", help="pytest -k expression")
    parser.add_argument("--budget", type=float, default=3000.0)
    parser.add_argument("--examples-backend", default="auto")
    parser.add_argument("--examples-timeout", type=float, default=300.0)
    parser.add_argument("--examples-only", default="", help="e.g. 00,01")
    parser.add_argument("--commit", default=None)
    parser.add_argument(
        "--run-tests-child", action="store_true", help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    src: Path = args.nsight_python_src.resolve()
    args.out = args.out.resolve()
    args.device = _device(args.device)
    if args.run_tests_child:
        return run_tests_child(args)
    if not (src / "tests").is_dir() or not (src / "examples").is_dir():
        msg = (
            f"--nsight-python-src {src}: no tests/ and examples/ there; give a "
            "checkout of NVIDIA/nsight-python"
        )
        raise SystemExit(msg)
    args.out.mkdir(parents=True, exist_ok=True)
    what = args.what or "tests"
    rows: list[dict[str, Any]] = []
    if what in {"tests", "all"}:
        rows += run_tests(args, src)
    if what in {"examples", "all"}:
        rows += run_examples(args, src)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
    commit = _commit(src, args.commit)
    report = {
        "device": args.device,
        "what": what,
        "nsight_python_commit": commit,
        "pinned_commit": PINNED_COMMIT,
        "at_pinned_commit": commit == PINNED_COMMIT,
        "host": platform.node(),
        "python": platform.python_version(),
        "command": " ".join(
            ["python", "benchmarks/nsight_python_compat.py", *(argv or sys.argv[1:])]
        ),
        **_versions(),
        "counts": counts,
        "tests": rows,
    }
    prefix: Path = args.results or (
        ROOT / "benchmarks" / "results" / f"nsight_python_compat_{args.device}"
    )
    prefix.parent.mkdir(parents=True, exist_ok=True)
    prefix.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    prefix.with_suffix(".md").write_text(_markdown(report))
    print(_markdown(report).split("| test |", 1)[0].strip())
    for row in rows:
        if row["verdict"] in {"failed", "not run"}:
            print(f"{row['verdict']}: {row['nodeid']}: {row['reason']}")
    return 1 if counts.get("failed") or counts.get("not run") else 0


if __name__ == "__main__":
    sys.exit(main())
