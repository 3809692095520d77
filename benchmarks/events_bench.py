"""Events backend vs ``triton.testing.do_bench`` vs a bare CUDA-event loop, on one GPU.

For each workload, side by side in one process:

- nsight-lab: a ``%%nsight --backend events`` cell in a real IPython shell; its median
  and CI95 from the results DataFrame, and the clocks its telemetry saw;
- ``triton.testing.do_bench(fn, return_mode="median")`` (flushes a 256 MB cache each
  rep);
- a bare loop: flush the L2, record an event, run, record an event; one sync at the end.

Wall overhead is the *marginal* cost per run: the wall time of a profile with R2 runs
minus one with R1 runs, divided by R2 - R1, against the same for the bare loop. That
cancels fixed costs (session set-up, the DataFrame) which are reported separately.

Run: ``python benchmarks/events_bench.py [OUT_DIR]`` (needs a CUDA GPU, IPython,
triton).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

R1, R2 = 50, 450
ROUNDS = 3
LONG_KERNEL_NS = 100_000
"""A kernel at least this long (100 us) is where the median target applies."""
MEDIAN_TOLERANCE = 0.03
"""Target: our median within 3% of ``do_bench``'s."""
OVERHEAD_RATIO_TARGET = 1.05
"""Target: our marginal wall time per run at most 5% above the bare loop's."""

WORKLOADS: dict[str, tuple[str, str]] = {
    # name: (set-up code, timed expression)
    "mul2_256MB_fp32": ("x = torch.randn(64 * 1024 * 1024, device='cuda')", "x * 2"),
    "matmul_4096_bf16": (
        "a = torch.randn(4096, 4096, device='cuda', dtype=torch.bfloat16)",
        "a @ a",
    ),
    "softmax_8192x4096_fp32": (
        "s = torch.randn(8192, 4096, device='cuda')",
        "torch.softmax(s, dim=-1)",
    ),
    "add_16K_fp32": (
        "u = torch.randn(16384, device='cuda'); v = torch.randn(16384, device='cuda')",
        "u + v",
    ),
}


def bare_loop(fn: Any, runs: int, flush: Any) -> tuple[list[float], float]:  # noqa: ANN401
    """Median-ready per-run times (ns) and wall seconds of a hand-written event loop."""
    import torch

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    pairs = []
    for _ in range(runs):
        flush.zero_()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        pairs.append((start, end))
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) * 1e6 for s, e in pairs]
    return times, time.perf_counter() - t0


def ours(ip: Any, expr: str, runs: int) -> tuple[Any, float]:  # noqa: ANN401
    """Run the magic; return its DataFrame and the cell's wall seconds."""
    import torch

    cell = (
        f"%%nsight --backend events --runs {runs} --warmup 0 --quiet --out _bench\n"
        f"with nsight.annotate('op'):\n    {expr}\n"
    )
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    result = ip.run_cell(cell)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    if result.error_in_exec is not None:
        raise result.error_in_exec
    return ip.user_ns["_bench"], wall


def main(out_dir: Path) -> dict[str, Any]:
    """Run every workload and write ``events_h200.json`` to ``out_dir``.

    The file is named after the GPU.
    """
    import torch
    import triton
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython()
    ip.run_line_magic("load_ext", "nsight_lab")
    ip.run_cell("import torch, nsight")
    props = torch.cuda.get_device_properties(0)
    flush = torch.empty(
        max(2 * props.L2_cache_size, 32 << 20) // 4, dtype=torch.int32, device="cuda"
    )
    results: dict[str, Any] = {
        "device": props.name,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "runs": [R1, R2],
        "rounds": ROUNDS,
        "workloads": {},
    }
    for name, (setup, expr) in WORKLOADS.items():
        ip.run_cell(setup)
        fn = eval(f"lambda: {expr}", ip.user_ns)  # noqa: S307  (our own fixed workloads)
        for _ in range(20):
            fn()
        rounds = []
        for _ in range(ROUNDS):
            _frame_small, wall_ours_small = ours(ip, expr, R1)
            frame, wall_ours = ours(ip, expr, R2)
            _bare_small, wall_bare_small = bare_loop(fn, R1, flush)
            bare, wall_bare = bare_loop(fn, R2, flush)
            do_bench = (
                triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
                * 1e6
            )
            row = frame.iloc[0]
            per_run_ours = (wall_ours - wall_ours_small) / (R2 - R1)
            per_run_bare = (wall_bare - wall_bare_small) / (R2 - R1)
            rounds.append(
                {
                    "ours_median_ns": float(row["MedianValue"]),
                    "ours_mean_ns": float(row["AvgValue"]),
                    "ours_ci95_ns": [
                        float(row["CI95_Lower"]),
                        float(row["CI95_Upper"]),
                    ],
                    "ours_rsd_pct": float(row["RelativeStdDevPct"]),
                    "do_bench_median_ns": do_bench,
                    "bare_median_ns": statistics.median(bare),
                    "ours_vs_do_bench": float(row["MedianValue"]) / do_bench,
                    "ours_vs_bare": float(row["MedianValue"]) / statistics.median(bare),
                    "wall_per_run_ours_us": per_run_ours * 1e6,
                    "wall_per_run_bare_us": per_run_bare * 1e6,
                    "wall_overhead_ratio": per_run_ours / per_run_bare,
                    "fixed_cost_ours_ms": (wall_ours - per_run_ours * R2) * 1e3,
                    "sm_clock_mhz": [
                        float(row["SMClockMHzMin"]),
                        float(row["SMClockMHz"]),
                    ],
                    "mem_clock_mhz": float(row["MemoryClockMHz"]),
                    "temperature_c": [
                        float(row["TemperatureC"]),
                        float(row["TemperatureCMax"]),
                    ],
                    "power_w": float(row["PowerW"]),
                    "throttled_runs": int(row["ThrottledRuns"]),
                    "clock_event_reasons": row["ClockEventReasons"],
                }
            )
        summary = {
            key: statistics.median(r[key] for r in rounds)
            for key in (
                "ours_median_ns",
                "do_bench_median_ns",
                "bare_median_ns",
                "ours_vs_do_bench",
                "ours_vs_bare",
                "wall_per_run_ours_us",
                "wall_per_run_bare_us",
                "wall_overhead_ratio",
                "fixed_cost_ours_ms",
            )
        }
        long_kernel = summary["ours_median_ns"] >= LONG_KERNEL_NS
        summary["kernel_at_least_100us"] = long_kernel
        summary["meets_median_target_3pct"] = (
            abs(summary["ours_vs_do_bench"] - 1) <= MEDIAN_TOLERANCE
        )
        summary["meets_overhead_target_5pct"] = (
            summary["wall_overhead_ratio"] <= OVERHEAD_RATIO_TARGET
        )
        results["workloads"][name] = {
            "expr": expr,
            "summary": summary,
            "rounds": rounds,
        }
        print(name, json.dumps(summary), flush=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    slug = "h200" if "H200" in props.name else props.name.replace(" ", "_").lower()
    (out_dir / f"events_{slug}.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "results")
