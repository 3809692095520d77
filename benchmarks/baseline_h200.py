"""Verdicts against a baseline on real kernels (issue 13), end to end through the magic.

Each case profiles a baseline cell, names it (``%nsight baseline set``), profiles a
candidate with ``%%nsight --baseline NAME`` in a real IPython shell and records the
verdict the magic kept, with the time row's ratio, interval, clocks and note:

- ``same_code``: ``x * 2`` against itself (expected: no change);
- ``same_kernel_other_spelling``: ``x * 2`` against ``torch.mul(x, 2)`` (one kernel:
  expected no change);
- ``addcmul``: ``x * 2`` against ``torch.addcmul(x, x, y, value=2)`` in the same
  region, which reads two more tensors (expected: slower);
- ``locked_clocks``: one bf16 matmul at two SM clocks locked through NVML (the
  ``GpuMonitor.lock_sm_clock`` that ``--clock-control`` uses), expected slower at the
  lower clock *and flagged* (SM clocks more than 2 % apart). Skipped, with the reason,
  where NVML cannot lock (the cpu backend, no root).

The CI gate is checked too: ``nsight-lab compare NAME ID --fail-on-regression`` as a
subprocess, whose exit status must be 1 exactly where the verdict is slower.

Run on the H200 (about 2 minutes)::

    python benchmarks/baseline_h200.py --backend events

and here, on the cpu backend (smaller tensors; no clock case)::

    python benchmarks/baseline_h200.py --backend cpu

It writes ``benchmarks/results/baseline_h200.json`` (``baseline_cpu.json`` for the
cpu backend; ``--out`` to choose) and exits 1 when a verdict differs from the one
expected. The store is a throwaway one (``NSIGHT_LAB_HOME`` in a temporary folder).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
TIME_METRIC = "gpu__time_duration.sum"


def _cell(backend: str, runs: int, expr: str, extra: str = "") -> str:
    return (
        f"%%nsight --backend {backend} --runs {runs} --warmup 3 --quiet --out _r"
        f"{extra}\n"
        "import nsight\n"
        'with nsight.annotate("op"):\n'
        f"    {expr}\n"
    )


def _profile(ip: Any, backend: str, runs: int, expr: str, extra: str = "") -> Any:  # noqa: ANN401
    result = ip.run_cell(_cell(backend, runs, expr, extra))
    if result.error_in_exec is not None:
        msg = f"{expr}: {result.error_in_exec}"
        raise RuntimeError(msg)
    return ip.user_ns["_r"]


def _time_row(verdicts: dict[str, Any]) -> dict[str, Any]:
    (row,) = [r for r in verdicts["rows"] if r["metric"] == TIME_METRIC]
    keys = (
        "ratio", "ci_low", "ci_high", "verdict", "median_a", "median_b", "n_a", "n_b",
        "sm_clock_mhz_a", "sm_clock_mhz_b", "clock_differs", "throttled_a",
        "throttled_b", "note",
    )  # fmt: skip
    return {key: row[key] for key in keys}


def _gate(name: str, session_id: int) -> int:
    """``nsight-lab compare NAME ID --fail-on-regression``'s exit status."""
    done = subprocess.run(  # noqa: S603  (this interpreter, our module)
        [sys.executable, "-m", "nsight_lab.cli", "compare", name, str(session_id),
         "--fail-on-regression"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    return done.returncode


def _case(  # noqa: PLR0913  (one case's parts)
    ip: Any,  # noqa: ANN401
    *,
    name: str,
    backend: str,
    runs: int,
    base: str,
    cand: str,
    expected: str,
    flagged: bool = False,
) -> dict[str, Any]:
    t0 = time.perf_counter()
    first = _profile(ip, backend, runs, base)
    base_id = int(first["SessionId"].iloc[0])
    ip.run_line_magic("nsight", f"baseline set {name} {base_id}")
    frame = _profile(ip, backend, runs, cand, f" --baseline {name}")
    verdicts = frame.attrs["verdicts"]
    row = _time_row(verdicts)
    cand_id = int(frame["SessionId"].iloc[0])
    gate = _gate(name, cand_id)
    got = verdicts["verdict"]["verdict"]
    ok = got == expected and gate == (1 if got == "slower" else 0)
    if flagged:
        ok = ok and bool(row["clock_differs"])
    return {
        "case": name,
        "baseline": base,
        "candidate": cand,
        "baseline_session": base_id,
        "candidate_session": cand_id,
        "expected": expected,
        "expected_flagged": flagged,
        "verdict": got,
        "verdict_note": verdicts["verdict"]["note"],
        "time_row": row,
        "cli_fail_on_regression_status": gate,
        "ok": ok,
        "wall_s": round(time.perf_counter() - t0, 2),
    }


def _clock_case(ip: Any, backend: str, runs: int, clocks: list[int]) -> dict[str, Any]:  # noqa: ANN401
    """The same matmul at two locked SM clocks (the higher one is the baseline)."""
    from nsight_lab.errors import NsightLabError
    from nsight_lab.gpu.telemetry import GpuMonitor

    if backend == "cpu":
        return {"case": "locked_clocks", "skipped": "the cpu backend has no GPU clocks"}
    try:
        monitor = GpuMonitor.open()
    except NsightLabError as exc:
        return {"case": "locked_clocks", "skipped": str(exc)}
    high, low = max(clocks), min(clocks)
    expr = "a @ a"
    setup = "a = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16)"
    ip.run_cell(f"import torch\n{setup}")
    sessions: dict[int, int] = {}
    said: dict[int, str] = {}
    try:
        for mhz in (high, low):
            locked, said[mhz] = monitor.lock_sm_clock(mhz, "benchmark")
            if not locked:
                return {"case": "locked_clocks", "skipped": said[mhz]}
            extra = " --baseline clock_high" if mhz == low else ""
            frame = _profile(ip, backend, runs, expr, extra)
            sessions[mhz] = int(frame["SessionId"].iloc[0])
            if mhz == high:
                ip.run_line_magic("nsight", f"baseline set clock_high {sessions[high]}")
            else:
                verdicts = frame.attrs["verdicts"]
    finally:
        monitor.reset_clocks()
    row = _time_row(verdicts)
    gate = _gate("clock_high", sessions[low])
    got = verdicts["verdict"]["verdict"]
    return {
        "case": "locked_clocks",
        "locked_mhz": [high, low],
        "lock_messages": [said[high], said[low]],
        "baseline": f"{expr} at {high} MHz",
        "candidate": f"{expr} at {low} MHz",
        "baseline_session": sessions[high],
        "candidate_session": sessions[low],
        "expected": "slower",
        "expected_flagged": True,
        "verdict": got,
        "verdict_note": verdicts["verdict"]["note"],
        "time_row": row,
        "cli_fail_on_regression_status": gate,
        "ok": got == "slower" and bool(row["clock_differs"]) and gate == 1,
    }


def main(argv: list[str] | None = None) -> int:
    """Run every case; write the JSON; status 1 if a verdict was not the expected."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="events", help="events (GPU) or cpu")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument(
        "--clocks", default="1980,1500", help="two SM clocks to lock, MHz (GPU)"
    )
    parser.add_argument("--out", type=Path, help="the JSON file to write")
    args = parser.parse_args(argv)
    cpu = args.backend == "cpu"
    out = args.out or RESULTS / ("baseline_cpu.json" if cpu else "baseline_h200.json")
    clocks = [int(c) for c in args.clocks.split(",")]

    home = tempfile.mkdtemp(prefix="nsight-lab-baseline-bench-")
    os.environ["NSIGHT_LAB_HOME"] = home  # the CLI subprocesses read the same store
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython()
    ip.run_line_magic("load_ext", "nsight_lab")
    device = "cpu" if cpu else "cuda"
    n = (1 << 24) if cpu else (64 << 20)  # 64 MB / 256 MB of fp32: DRAM-bound
    ip.run_cell(
        "import torch\n"
        f"x = torch.randn({n}, device='{device}')\n"
        f"y = torch.randn({n}, device='{device}')\n"
    )
    # One discarded profile first: the first session of a process also pays for
    # clocks ramping up, the allocator and thread pools, which no case should see.
    _profile(ip, args.backend, args.runs, "x * 2")
    started = time.perf_counter()
    cases = [
        _case(ip, name="same_code", backend=args.backend, runs=args.runs,
              base="x * 2", cand="x * 2", expected="no change"),
        _case(ip, name="same_kernel_other_spelling", backend=args.backend,
              runs=args.runs, base="x * 2", cand="torch.mul(x, 2)",
              expected="no change"),
        _case(ip, name="addcmul", backend=args.backend, runs=args.runs,
              base="x * 2", cand="torch.addcmul(x, x, y, value=2)",
              expected="slower"),
        _clock_case(ip, args.backend, args.runs, clocks),
    ]  # fmt: skip
    import torch

    report = {
        "benchmark": "baseline verdicts (issue 13)",
        "command": " ".join(["python", "benchmarks/baseline_h200.py", *sys.argv[1:]]),
        "backend": args.backend,
        "device": torch.cuda.get_device_name() if not cpu else platform.processor(),
        "elements": n,
        "runs": args.runs,
        "threshold": 0.0,
        "cases": cases,
        "all_ok": all(c.get("ok", True) for c in cases),
        "wall_s": round(time.perf_counter() - started, 1),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    for case in cases:
        if "skipped" in case:
            print(f"{case['case']}: skipped ({case['skipped']})")
            continue
        row = case["time_row"]
        print(
            f"{case['case']}: {case['verdict']} (expected {case['expected']}), "
            f"b/a {row['ratio']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}], "
            f"CLI status {case['cli_fail_on_regression_status']}"
            + (f"; {row['note']}" if row["note"] else "")
        )
    print(f"wrote {out}")
    return 0 if report["all_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
