"""Run NVIDIA nsight-python's examples on nsight-lab: only ``import nsight`` switched.

Usage::

    python benchmarks/nsight_python_examples.py CHECKOUT OUT_DIR [--backend B]
        [--only 00,02] [--timeout S] [--cuda-to-cpu auto|on|off] [--store DIR]

``CHECKOUT`` is a checkout of https://github.com/NVIDIA/nsight-python (this script
fetches nothing; its ``examples/`` are read, never edited). Each example
``examples/NN_*.py`` runs in its own Python process, with a time limit, as
nsight-python's ``examples/test_examples.py`` runs them (its ``main()``), from a copy
of ``examples/`` in
``OUT_DIR/examples`` (example 11 writes its CSV files next to itself) and with
``OUT_DIR/NN`` as the working directory (the PNG files land there). The only change to
the example's world: ``import nsight`` gives nsight-lab's API
(:mod:`nsight_lab.api`, through ``install_nsight_shim(replace=True)`` of
:mod:`nsight_lab.nsight_shim`, also where nsight-python is installed), with
``nsight_lab.api.use_backend(B)``.

``--cuda-to-cpu on`` (the default ``auto``: on when PyTorch sees no CUDA device) runs
each example under a ``TorchFunctionMode`` that turns ``device="cuda"`` into
``device="cpu"`` in every PyTorch call, so examples written for a GPU run unchanged on
the ``cpu`` backend (their sizes are the GPU's: the larger ones take minutes on a CPU).

Writes ``OUT_DIR/results.json`` (per example: status, seconds, the error's last line,
the sessions it made with their backend and rows, the files it wrote) and
``OUT_DIR/summary.log`` (a table, then each example's output tail); ``OUT_DIR/NN.log``
holds an example's whole output. Sessions go to ``--store`` (default
``OUT_DIR/store``). Exit status 0 when every example passed or was skipped for a stated
reason (``needs`` below, on a backend that cannot give it).

On the H200::

    python benchmarks/nsight_python_examples.py /path/to/nsight-python \
        benchmarks/results/nsight_python_examples_h200 --backend auto --timeout 600
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

NEEDS: dict[str, str] = {
    "00": "duration",
    "01": "counters (dram__throughput.avg.pct_of_peak_sustained_elapsed)",
    "02": "duration",
    "03": "duration",
    "04": "duration (fp16 matmul)",
    "05": "duration (fp16 matmul)",
    "06": "duration (plot_callback written for matplotlib)",
    "07": "GPU: Triton kernels",
    "08": "counters (smsp__sass_inst_executed_op_shared_ld/st.sum)",
    "09": "counters (shared ld/st instructions, launch__sm_count)",
    "10": "counters (sm__cycles_elapsed.avg), combine_kernel_metrics",
    "11": "counters (shared ld/st instructions), output_csv",
    "12": "GPU: cuTile (cuda.tile) kernels",
    "13": "cuda.core importable (driver version), nvidia-smi optional (collectors)",
}
"""What each example needs (read from its source: metrics, imports)."""


def _examples(checkout: Path, only: set[str] | None) -> list[Path]:
    found = sorted((checkout / "examples").glob("[0-9][0-9]_*.py"))
    if not found:
        msg = f"no examples/NN_*.py under {checkout}: give a nsight-python checkout"
        raise SystemExit(msg)
    return [p for p in found if only is None or p.name[:2] in only]


def _cuda_to_cpu(mode: str) -> bool:
    if mode != "auto":
        return mode == "on"
    try:
        import torch
    except ImportError:
        return False
    return not torch.cuda.is_available()


def cuda_to_cpu_mode() -> Any:  # noqa: ANN401  (a TorchFunctionMode; torch is optional)
    """A ``TorchFunctionMode`` in which ``device="cuda"`` becomes ``device="cpu"``.

    Code written for a GPU then runs unchanged on a CPU (also used by
    ``nsight_python_compat.py`` for nsight-python's tests).
    """
    from torch.overrides import TorchFunctionMode

    class CudaToCpu(TorchFunctionMode):
        """``device="cuda"`` (any CUDA device) becomes ``device="cpu"``."""

        def __torch_function__(
            self,
            func: Any,  # noqa: ANN401
            types: Any,  # noqa: ANN401
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> Any:  # noqa: ANN401
            kwargs = dict(kwargs or {})
            device = kwargs.get("device")
            if device is not None and str(device).startswith("cuda"):
                kwargs["device"] = "cpu"
            return func(*args, **kwargs)

    return CudaToCpu()


def run_one(path: Path, backend: str, cuda_to_cpu: bool, result_file: Path) -> int:  # noqa: FBT001
    """In the child: run one example's ``main()`` with ``import nsight`` switched."""
    import contextlib
    import runpy
    import warnings

    from nsight_lab.nsight_shim import install_nsight_shim

    install_nsight_shim(replace=True)  # the one switch: import nsight -> nsight-lab
    import nsight  # nsight-lab's stand-in module

    nsight.use_backend(backend)
    mode: Any = cuda_to_cpu_mode() if cuda_to_cpu else contextlib.nullcontext()
    sys.path.insert(0, str(path.parent))
    from nsight_lab.store.run_store import RunStore

    with RunStore() as store:
        before = {s.id for s in store.list_sessions(limit=10_000)}
    outcome: dict[str, Any] = {"status": "passed", "error": None}
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with mode:
                namespace = runpy.run_path(str(path), run_name="nsight_python_example")
                namespace["main"]()
        except BaseException as exc:  # noqa: BLE001  (recorded: the harness goes on)
            traceback.print_exc()
            outcome = {
                "status": "failed",
                "error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:400]}",
            }
    outcome["seconds"] = round(time.perf_counter() - started, 2)
    outcome["warnings"] = sorted(
        {f"{w.category.__name__}: {w.message}" for w in caught}
    )
    with RunStore() as store:
        sessions = [s for s in store.list_sessions(limit=10_000) if s.id not in before]
        outcome["sessions"] = [
            {
                "id": s.id,
                "name": s.name,
                "backend": s.backend,
                "status": s.status,
                "device": s.device,
                "runs": len({(r.config_index, r.run_index) for r in store.runs(s.id)}),
            }
            for s in sorted(sessions, key=lambda s: s.id)
        ]
    outcome["files"] = sorted(
        str(p.relative_to(Path.cwd())) for p in Path.cwd().rglob("*") if p.is_file()
    )
    result_file.write_text(json.dumps(outcome, indent=1))
    return 0


def _classify(number: str, outcome: dict[str, Any], backend: str) -> str:
    """``passed``, ``failed``, ``timeout``, or ``skipped: why`` where it is expected.

    An example that needs what the backend cannot give (counters on ``cpu``, a GPU
    library without a GPU) and fails for that reason is skipped, with the reason.
    """
    status = str(outcome["status"])
    if status != "failed":
        return status
    error = str(outcome.get("error") or "")
    need = NEEDS.get(number, "")
    if (
        backend == "cpu"
        and need.startswith("counters")
        and "hardware counters" in error
    ):
        return f"skipped: needs {need}"
    missing = "ModuleNotFoundError" in error or "CUDA" in error
    if missing and (need.startswith("GPU") or "importable" in need):
        return f"skipped: needs {need}"
    return status


def main(argv: list[str] | None = None) -> int:  # noqa: PLR0915  (one report)
    """Run the examples (or, with ``--run-one``, one example in this process)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--only", default="", help="example numbers, e.g. 00,02")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument(
        "--timeout-for",
        default="",
        help="per-example limits, e.g. 04=120,05=120 (examples too big for a CPU)",
    )
    parser.add_argument("--cuda-to-cpu", choices=("auto", "on", "off"), default="auto")
    parser.add_argument("--store", type=Path, default=None)
    parser.add_argument("--run-one", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run_one is not None:
        return run_one(
            args.run_one, args.backend, args.cuda_to_cpu == "on", args.result
        )

    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    copy = out / "examples"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(args.checkout.resolve() / "examples", copy)
    only = {n.strip() for n in args.only.split(",") if n.strip()} or None
    to_cpu = _cuda_to_cpu(args.cuda_to_cpu)
    limits = {
        k.strip(): float(v)
        for k, _, v in (p.partition("=") for p in args.timeout_for.split(",") if p)
    }
    env = dict(os.environ)
    env["NSIGHT_LAB_HOME"] = str((args.store or out / "store").resolve())
    os.environ["NSIGHT_LAB_HOME"] = env["NSIGHT_LAB_HOME"]  # this process reads it too
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT), env.get("PYTHONPATH")])
    )
    env["MPLBACKEND"] = "Agg"
    results: dict[str, Any] = {
        "backend": args.backend,
        "cuda_to_cpu": to_cpu,
        "timeout_s": args.timeout,
        "timeout_for": limits,
        "host": platform.node(),
        "python": platform.python_version(),
        "examples": {},
    }
    lines = [
        (
            f"nsight-python examples on nsight-lab: backend {args.backend}, "
            f"cuda-to-cpu {'on' if to_cpu else 'off'}, timeout {args.timeout:g} s "
            f"{limits or ''}, "
            f"{platform.node()}"
        ),
        f"importable: {_importable()}",
        "",
    ]
    for path in _examples(out, only):
        number = path.name[:2]
        workdir = out / number
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir()
        result_file = workdir / "result.json"
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            str(copy),
            str(out),
            "--backend",
            args.backend,
            "--cuda-to-cpu",
            "on" if to_cpu else "off",
            "--run-one",
            str(path),
            "--result",
            str(result_file),
        ]
        first_id = _last_session_id() + 1
        started = time.perf_counter()
        try:
            done = subprocess.run(  # noqa: S603  (this script, with its own arguments)
                command,
                cwd=workdir,
                env=env,
                capture_output=True,
                text=True,
                timeout=limits.get(number, args.timeout),
                check=False,
            )
            output = done.stdout + done.stderr
            outcome = (
                json.loads(result_file.read_text())
                if result_file.exists()
                else {"status": "failed", "error": f"exit status {done.returncode}"}
            )
        except subprocess.TimeoutExpired as exc:
            output = _text(exc.stdout) + _text(exc.stderr)
            outcome = {
                "status": "timeout",
                "error": f"over {limits.get(number, args.timeout):g} s",
                "sessions": _sessions_since(first_id),
            }
        outcome["wall_s"] = round(time.perf_counter() - started, 1)
        outcome["needs"] = NEEDS.get(number, "")
        outcome["verdict"] = _classify(number, outcome, args.backend)
        (out / f"{number}.log").write_text(output)
        results["examples"][path.name] = outcome
        sessions = outcome.get("sessions") or []
        lines.append(
            f"{path.name:34} {outcome['verdict']:60.60} {outcome['wall_s']:7.1f} s  "
            f"{len(sessions)} session(s)"
            + (
                f"  [{outcome['error']}]"
                if outcome["verdict"] in {"failed", "timeout"}
                else ""
            )
        )
        print(lines[-1], flush=True)
    lines += ["", *_details(out, results)]
    (out / "results.json").write_text(json.dumps(results, indent=1))
    (out / "summary.log").write_text("\n".join(lines) + "\n")
    bad = [
        n
        for n, o in results["examples"].items()
        if o["verdict"] in {"failed", "timeout"}
    ]
    return 1 if bad else 0


PROGRESS = ("  config ", "  note: ", "  completed", "nsight-lab ")
"""nsight-lab's own progress lines (stderr), left out of the summary's output tails."""


def _details(out: Path, results: dict[str, Any]) -> list[str]:
    """Per example: its verdict, its sessions and the tail of what it printed."""
    lines: list[str] = []
    for name, outcome in results["examples"].items():
        printed = (out / f"{name[:2]}.log").read_text().strip().splitlines()
        tail = [line for line in printed if not line.startswith(PROGRESS)][-15:]
        lines += [f"--- {name}: {outcome['verdict']} (needs {outcome['needs']})"]
        lines += [f"    session {s['id']} {s['name']}: backend {s['backend']}, "
                  f"{s['status']}, {s['runs']} runs on {s['device']}"
                  for s in outcome.get("sessions") or []]  # fmt: skip
        lines += [f"    warning: {w}" for w in outcome.get("warnings") or []]
        lines += [f"    {line}" for line in tail]
    return lines


def _importable() -> str:
    """Which of the examples' GPU libraries this Python finds (and torch's version)."""
    import importlib.util

    found = []
    for name in ("torch", "triton", "cuda.tile", "cuda.core"):
        try:
            here = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            here = False
        found.append(f"{name} {'yes' if here else 'no'}")
    try:
        import torch

        found.append(f"torch {torch.__version__}, CUDA {torch.cuda.is_available()}")
    except ImportError:
        pass
    return ", ".join(found)


def _last_session_id() -> int:
    from nsight_lab.store.run_store import RunStore

    with RunStore() as store:
        return max((s.id for s in store.list_sessions(limit=1)), default=0)


def _sessions_since(first_id: int) -> list[dict[str, Any]]:
    """The sessions a killed example left (marked interrupted), with their runs."""
    from nsight_lab.store.run_store import RunStore

    with RunStore() as store:
        store.mark_interrupted()
        return [
            {
                "id": s.id,
                "name": s.name,
                "backend": s.backend,
                "status": s.status,
                "device": s.device,
                "runs": len({(r.config_index, r.run_index) for r in store.runs(s.id)}),
            }
            for s in sorted(store.list_sessions(limit=10_000), key=lambda s: s.id)
            if s.id >= first_id
        ]


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


if __name__ == "__main__":
    sys.exit(main())
