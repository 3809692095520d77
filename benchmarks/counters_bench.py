"""Hardware counters on one GPU: the isolated ncu path, the work model, cupti vs ncu.

For each workload, in one process on the GPU host:

- nsight-lab's ``%%nsight --backend ncu`` (isolated child under the installed ncu,
  the roofline metric set): measured FLOPs and DRAM bytes, achieved FLOP/s and
  bandwidth, % of roof, and the cell's wall time;
- the same metrics from a plain ``ncu`` command line on a script doing the same work
  (same NVTX filter), with its wall time;
- modelled FLOPs and bytes (``workmodel.count_work``) for the same regions;
- ``%%nsight --backend cupti`` durations against ncu's ``gpu__time_duration.sum``
  (both with ``--clock-control none`` and the L2 flushed per region).

Writes ``counters_<gpu>.json`` (placements included, so the roofline and traffic PNGs
can be drawn anywhere: ``python benchmarks/counters_plots.py``).

Run: ``python benchmarks/counters_bench.py OUT_DIR``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

RUNS, WARMUP = 2, 1
CUPTI_RUNS = 10
ELEMENTWISE = ("mul2", "unfused", "fused")

WORKLOADS: dict[str, tuple[str, dict[str, str]]] = {
    "mul2_256MB_fp32": (
        "x = torch.randn(64 * 1024 * 1024, device=dev)",
        {"mul2": "x * 2"},
    ),
    "fusion_2e25_fp32": (
        "a, b, c = (torch.randn(1 << 25, device=dev) for _ in range(3))",
        {"unfused": "a + b * c", "fused": "torch.addcmul(a, b, c)"},
    ),
    "softmax_8192x4096_fp32": (
        "s = torch.randn(8192, 4096, device=dev)",
        {"softmax": "torch.softmax(s, dim=-1)"},
    ),
    "matmul_8192_bf16": (
        "m = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)",
        {"matmul_bf16": "m @ m"},
    ),
    "matmul_4096_fp32": (
        "f = torch.randn(4096, 4096, device=dev)",
        {"matmul_fp32": "f @ f"},
    ),
}


def cell_body(setup: str, regions: dict[str, str]) -> str:
    """The cell: set-up outside the regions, one region per timed expression."""
    lines = ["import torch, nsight", setup]
    for name, expr in regions.items():
        lines += [f"with nsight.annotate({name!r}):", f"    _ = {expr}"]
    return "\n".join(lines) + "\n"


PLAIN_SCRIPT = """
import nvtx, torch
dev = "cuda"
{setup}
for run in range({total}):
{body}
torch.cuda.synchronize()
"""


def plain_ncu(
    ncu: str, setup: str, regions: dict[str, str], metrics: list[str]
) -> dict[str, Any]:
    """Profile a plain script with the same work and metrics on the ncu command line."""
    import ncu_report

    body = "".join(
        f"    with nvtx.annotate({name!r}, domain='nsight_lab'):\n        _ = {expr}\n"
        for name, expr in regions.items()
    )
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "plain.py"
        script.write_text(
            PLAIN_SCRIPT.format(setup=setup, total=RUNS + WARMUP, body=body)
        )
        report = Path(tmp) / "plain"
        command = [
            ncu, "--nvtx", "--nvtx-include", "regex:nsight_lab@.+/",
            "--metrics", ",".join(metrics), "--cache-control", "all",
            "--clock-control", "none", "-f", "-o", str(report), sys.executable, str(script),
        ]  # fmt: skip
        t0 = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            return {"wall_s": wall, "error": done.stderr[-2000:] or done.stdout[-2000:]}
        ctx = ncu_report.load_report(str(report) + ".ncu-rep")
        values: dict[str, list[float]] = {}
        for r in range(ctx.num_ranges()):
            rng = ctx.range_by_idx(r)
            for a in range(rng.num_actions()):
                action = rng.action_by_idx(a)
                for m in (
                    "dram__bytes_read.sum",
                    "dram__bytes_write.sum",
                    "gpu__time_duration.sum",
                ):
                    metric = action.metric_by_name(m)
                    if metric is not None:
                        values.setdefault(m, []).append(float(metric.value()))
        kernels = len(values.get("gpu__time_duration.sum", []))
        return {
            "wall_s": wall,
            "kernels_profiled": kernels,
            "dram_bytes_read_per_kernel_median": statistics.median(
                values["dram__bytes_read.sum"]
            )
            if kernels
            else None,
            "dram_bytes_write_per_kernel_median": statistics.median(
                values["dram__bytes_write.sum"]
            )
            if kernels
            else None,
            "duration_ns_median": statistics.median(values["gpu__time_duration.sum"])
            if kernels
            else None,
        }


def main(out_dir: Path) -> dict[str, Any]:  # noqa: C901, PLR0915
    """Run every workload and write the JSON to ``out_dir``."""
    import torch
    from IPython.testing.globalipapp import start_ipython

    from nsight_lab.gpu.stack import find_ncu, ncu_version
    from nsight_lab.regions import annotate
    from nsight_lab.roofline.counters import ROOFLINE_METRICS
    from nsight_lab.roofline.placement import peaks_for, place
    from nsight_lab.roofline.traffic import traffic_comparison
    from nsight_lab.roofline.workmodel import count_work, dominant_dtype

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    ip = start_ipython()
    ip.run_line_magic("load_ext", "nsight_lab")
    ip.user_ns["dev"] = dev
    ncu = find_ncu()
    gpu = torch.cuda.get_device_name(0) if dev == "cuda" else "cpu"
    peaks = peaks_for(gpu)
    results: dict[str, Any] = {
        "device": gpu,
        "ncu": str(ncu),
        "ncu_version": ".".join(map(str, ncu_version(ncu) or ())) if ncu else None,
        "runs": RUNS,
        "warmup": WARMUP,
        "metrics": list(ROOFLINE_METRICS),
        "workloads": {},
    }
    placements: dict[str, Any] = {}
    only = [w for w in os.environ.get("COUNTERS_ONLY", "").split(",") if w]
    for name, (setup, regions) in WORKLOADS.items():
        if only and name not in only:
            continue
        entry: dict[str, Any] = {"regions": {}}
        cell = cell_body(setup, regions)
        t0 = time.perf_counter()
        result = ip.run_cell(
            f"%%nsight --backend ncu --runs {RUNS} --warmup {WARMUP} --clock-control none "
            f"--quiet --out _counters\n{cell}"
        )
        entry["ours_isolated_wall_s"] = time.perf_counter() - t0
        if result.error_in_exec is not None:
            entry["error"] = (
                f"{type(result.error_in_exec).__name__}: {result.error_in_exec}"
            )
            results["workloads"][name] = entry
            print(name, entry["error"], flush=True)
            continue
        frame = ip.user_ns["_counters"]
        # The work model, in this process, on the same device.
        ns: dict[str, Any] = {
            "torch": torch,
            "dev": dev,
            "nsight": sys.modules.get("nsight"),
        }
        exec(setup, ns)  # noqa: S102  (our own fixed workloads)
        code = "".join(
            f"with annotate({r!r}):\n    _ = {e}\n" for r, e in regions.items()
        )
        ns["annotate"] = annotate
        model = count_work(lambda: exec(code, ns))  # noqa: S102
        if dev == "cuda":
            torch.cuda.synchronize()
        # cupti durations, same flush and clocks.
        cupti = ip.run_cell(
            f"%%nsight --backend cupti --runs {CUPTI_RUNS} --warmup 1 --clock-control none "
            f"--quiet --out _cupti\n{cell}"
        )
        cupti_frame = ip.user_ns.get("_cupti") if cupti.error_in_exec is None else None
        for region in regions:
            rows = frame[frame["Annotation"] == region].set_index("Metric")
            time_row = rows.loc["gpu__time_duration.sum"]
            modelled = model.get(region, {})
            modelled_bytes = modelled.get("model__bytes_read", 0.0) + modelled.get(
                "model__bytes_written", 0.0
            )
            measured_bytes = float(time_row["BytesRead"]) + float(
                time_row["BytesWritten"]
            )
            info: dict[str, Any] = {
                "duration_ns_median": float(time_row["MedianValue"]),
                "measured_flops": float(time_row["FLOPs"]),
                "flops_source": time_row["FLOPsSource"],
                "measured_bytes_read": float(time_row["BytesRead"]),
                "measured_bytes_written": float(time_row["BytesWritten"]),
                "bytes_source": time_row["BytesSource"],
                "modelled_flops": modelled.get("model__flops"),
                "modelled_bytes_read": modelled.get("model__bytes_read"),
                "modelled_bytes_written": modelled.get("model__bytes_written"),
                "modelled_over_measured_bytes": modelled_bytes / measured_bytes
                if measured_bytes
                else None,
                "modelled_over_measured_flops": (modelled.get("model__flops") or 0)
                / float(time_row["FLOPs"])
                if float(time_row["FLOPs"] or 0)
                else None,
                "achieved_tflops": float(time_row["AchievedTFLOPs"]),
                "achieved_gbps": float(time_row["AchievedGBps"]),
                "pct_of_roof": float(time_row["PctOfRoof"]),
                "bound": time_row["Bound"],
                "roofline_dtype": time_row["RooflineDtype"],
                "kernels": time_row["Kernel"],
            }
            if cupti_frame is not None:
                c = cupti_frame[
                    (cupti_frame["Annotation"] == region)
                    & (cupti_frame["Metric"] == "gpu__time_duration.sum")
                ]
                info["cupti_duration_ns_median"] = float(c["MedianValue"].iloc[0])
                info["cupti_over_ncu"] = (
                    info["cupti_duration_ns_median"] / info["duration_ns_median"]
                )
            elif cupti.error_in_exec is not None:
                info["cupti_error"] = str(cupti.error_in_exec)
            entry["regions"][region] = info
            if peaks is not None and measured_bytes:
                dtype = dominant_dtype(modelled) or "fp32"
                p = place(
                    region,
                    flops=float(time_row["FLOPs"]),
                    bytes_read=float(time_row["BytesRead"]),
                    bytes_written=float(time_row["BytesWritten"]),
                    duration_ns=float(time_row["MedianValue"]),
                    peaks=peaks,
                    dtype=dtype if dtype in peaks.flops_per_s else "fp32",
                    flops_source="measured",
                    bytes_source="measured",
                )
                placements[region] = p
        if ncu is not None and dev == "cuda":
            entry["plain_ncu"] = plain_ncu(
                str(ncu),
                setup,
                regions,
                list(ROOFLINE_METRICS),
            )
        results["workloads"][name] = entry
        print(name, json.dumps(entry, default=str)[:1500], flush=True)
    if "unfused" in placements and "fused" in placements:
        results["fusion"] = asdict(
            traffic_comparison(placements["unfused"], placements["fused"])
        )
        for key in ("a", "b"):
            results["fusion"].pop(key, None)
    results["placements"] = {k: asdict(v) for k, v in placements.items()}
    results["peaks"] = asdict(peaks) if peaks else None
    out_dir.mkdir(parents=True, exist_ok=True)
    slug = "h200" if "H200" in gpu else gpu.replace(" ", "_").lower()
    path = out_dir / f"counters_{slug}.json"
    path.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print("wrote", path, flush=True)
    return results


if __name__ == "__main__":
    if shutil.which("ncu") is None and len(sys.argv) < 2:
        print("no ncu on PATH", file=sys.stderr)
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "results")
