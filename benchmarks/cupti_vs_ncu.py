"""cupti durations against Nsight Compute's ``gpu__time_duration.sum``, per kernel.

One cell of eight regions (the kernels the trust issue names), each its own region
with the L2 flushed before it (``--cache-control all``, the read-only sweep) and the
clocks left alone (``--clock-control none``) on both sides:

- ``%%nsight --backend cupti --runs 30`` in this process: each region's median;
- a plain ``ncu --cache-control all --clock-control none --metrics
  gpu__time_duration.sum`` run of a script doing the same work in NVTX ranges named as
  nsight-lab's child names them (``"region [c0 rR]"``), read back with
  :func:`nsight_lab.backends.ncu.report.read_report`: each region's median.

Writes ``cupti_vs_ncu_<gpu>.json``: per region both medians, their ratio, and whether
the region is within 3 % (the bound for kernels of >= 30 us).

Run: ``python benchmarks/cupti_vs_ncu.py OUT_DIR``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RUNS = 30
NCU_RUNS = 7
BOUND = 0.03
MIN_NS = 30_000.0

SETUP = """\
x = torch.randn(64 * 1024 * 1024, device=dev)
a, b, c = (torch.randn(1 << 25, device=dev) for _ in range(3))
s = torch.randn(8192, 4096, device=dev)
w = torch.ones(4096, device=dev)
m = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
"""

REGIONS: dict[str, str] = {
    "mul2_256MB": "x * 2.0",
    "a+b*c": "a + b * c",
    "addcmul": "torch.addcmul(a, b, c)",
    "softmax": "torch.softmax(s, dim=-1)",
    "layernorm": "torch.nn.functional.layer_norm(s, (4096,), w)",
    "transpose": "s.t().contiguous()",
    "sum_64M": "x.sum()",
    "matmul_bf16": "m @ m",
}

PLAIN = """\
import nvtx, torch
dev = "cuda"
{setup}
for run in range(-1, {runs}):
{body}
torch.cuda.synchronize()
"""


def _cupti(ip: Any) -> dict[str, float]:  # noqa: ANN401  (an InteractiveShell)
    lines = ["import torch, nsight", SETUP]
    for name, expr in REGIONS.items():
        lines += [f"with nsight.annotate({name!r}):", f"    _ = {expr}"]
    result = ip.run_cell(
        f"%%nsight --backend cupti --runs {RUNS} --warmup 2 --cache-control all "
        "--clock-control none --quiet --out _cupti\n" + "\n".join(lines)
    )
    if result.error_in_exec is not None:
        raise result.error_in_exec
    frame = ip.user_ns["_cupti"]
    rows = frame[frame["Metric"] == "gpu__time_duration.sum"]
    return {str(r.Annotation): float(r.MedianValue) for r in rows.itertuples()}


def _ncu(ncu: str) -> tuple[dict[str, float], float]:
    from nsight_lab.backends.ncu.report import read_report

    body = "".join(
        f"    with nvtx.annotate(f'{name} [c0 r{{run}}]', domain='nsight_lab'):\n"
        f"        _ = {expr}\n"
        for name, expr in REGIONS.items()
    )
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "plain.py"
        script.write_text(PLAIN.format(setup=SETUP, runs=NCU_RUNS, body=body))
        report = Path(tmp) / "plain"
        command = [
            ncu, "--nvtx", "--nvtx-include", "regex:nsight_lab@.+/",
            "--metrics", "gpu__time_duration.sum", "--cache-control", "all",
            "--clock-control", "none", "-f", "-o", str(report),
            sys.executable, str(script),
        ]  # fmt: skip
        t0 = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:] or done.stdout[-2000:])
        rows = read_report(str(report) + ".ncu-rep", ["gpu__time_duration.sum"])
    per_run: dict[tuple[str, int], float] = {}
    for row in rows:
        if row.run_index >= 0:  # run -1 warms up
            key = (row.region, row.run_index)
            per_run[key] = per_run.get(key, 0.0) + row.metrics["gpu__time_duration.sum"]
    medians = {
        name: statistics.median(v for (r, _), v in per_run.items() if r == name)
        for name in REGIONS
        if any(r == name for r, _ in per_run)
    }
    return medians, wall


def main(out_dir: Path) -> dict[str, Any]:
    """Measure both sides and write the JSON to ``out_dir``."""
    import torch
    from IPython.testing.globalipapp import start_ipython

    from nsight_lab.gpu.stack import find_ncu, ncu_version

    ip = start_ipython()
    ip.run_line_magic("load_ext", "nsight_lab")
    ip.user_ns["dev"] = "cuda"
    ncu = find_ncu()
    gpu = torch.cuda.get_device_name(0)
    cupti = _cupti(ip)
    ncu_medians, ncu_wall = _ncu(str(ncu))
    regions: dict[str, Any] = {}
    for name in REGIONS:
        ours, theirs = cupti.get(name), ncu_medians.get(name)
        ratio = ours / theirs if ours and theirs else None
        regions[name] = {
            "cupti_median_ns": ours,
            "ncu_median_ns": theirs,
            "cupti_over_ncu": ratio,
            "within_3pct": None if ratio is None else abs(ratio - 1) <= BOUND,
            "bound_applies": bool(theirs and theirs >= MIN_NS),
        }
        print(f"{name:12s} cupti {ours} ncu {theirs} ratio {ratio}", flush=True)
    result = {
        "device": gpu,
        "ncu_version": ".".join(map(str, ncu_version(ncu) or ())) if ncu else None,
        "runs": RUNS,
        "ncu_runs": NCU_RUNS,
        "flush": "read-only sweep of 2x L2 (--cache-control all) on both sides",
        "clocks": "--clock-control none on both sides",
        "ncu_wall_s": ncu_wall,
        "regions": regions,
        "all_within_bound": all(
            r["within_3pct"] for r in regions.values() if r["bound_applies"]
        ),
    }
    slug = gpu.replace("NVIDIA ", "").replace(" ", "_").lower()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"cupti_vs_ncu_{slug}.json").write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results"))
