"""The pm backend at the issue's scale on the H200: runs, walls, bytes, interval.

The issue's 12-region cell (elementwise ops on 32-64M floats, softmax, layernorm, bf16
and fp32 matmuls, a transpose copy, a sum, a cumsum, a tiny add, an fp16 bmm) through
the real ``%%nsight`` magic: the DRAM pair (auto picks pm) and the default set
(``--backend pm``) at several run counts, and events and cupti beside them for the
wall per run. Each cell's wall, its per-region median DRAM bytes, the session notes
(the interval chosen) and the sampler's drain statistics go to ``--out``.

Usage: python benchmarks/pm_scale_h200.py --out DIR [--runs 10,50,200]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

MiB = 1 << 20
DRAM = ("dram__bytes_read.sum", "dram__bytes_write.sum")
TENSORS = """
import torch
x = torch.randn(64 << 20, device="cuda")
a, b, c = (torch.randn(32 << 20, device="cuda") for _ in range(3))
s = torch.randn(8192, 4096, device="cuda")
m16 = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
m32 = torch.randn(4096, 4096, device="cuda")
small = torch.randn(16384, device="cuda")
q = torch.randn(32, 1024, 128, device="cuda", dtype=torch.float16)
k = torch.randn(32, 128, 1024, device="cuda", dtype=torch.float16)
"""
REGIONS: dict[str, str] = {
    "x2": "x * 2",
    "unfused": "a + b * c",
    "fused": "torch.addcmul(a, b, c)",
    "softmax": "torch.softmax(s, dim=-1)",
    "layernorm": "torch.nn.functional.layer_norm(s, (4096,))",
    "matmul_bf16": "m16 @ m16",
    "matmul_fp32": "m32 @ m32",
    "transpose": "s.t().contiguous()",
    "sum": "x.sum()",
    "cumsum": "a.cumsum(0)",
    "tiny": "small + 1",
    "bmm_fp16": "torch.bmm(q, k)",
}


def cell_text(options: str) -> str:
    lines = [f"%%nsight {options} --quiet --out _out"]
    for name, expr in REGIONS.items():
        lines += [f"with nsight.annotate({name!r}):", f"    _ = {expr}"]
    return "\n".join(lines) + "\n"


def run(ip: Any, options: str) -> dict[str, Any]:  # noqa: ANN401
    from nsight_lab.store.run_store import RunStore

    t0 = time.perf_counter()
    result = ip.run_cell(cell_text(options))
    wall = time.perf_counter() - t0
    entry: dict[str, Any] = {"options": options, "wall_s": round(wall, 4)}
    if result.error_in_exec is not None:
        entry["error"] = f"{type(result.error_in_exec).__name__}: {result.error_in_exec}"
        return entry
    frame = ip.user_ns["_out"]
    session_id = int(frame["SessionId"].iloc[0])
    with RunStore() as store:
        session = store.get_session(session_id)
        runs = store.runs(session_id)
    entry["session"] = session_id
    entry["backend"] = session.backend
    entry["notes"] = list(session.notes)
    entry["runs_stored"] = len(runs)
    per: dict[str, dict[str, list[float]]] = {}
    for r in runs:
        got = per.setdefault(r.annotation, {"us": [], "read": [], "written": []})
        got["us"].append(r.duration_ns / 1e3)
        if DRAM[0] in r.metrics:
            got["read"].append(r.metrics[DRAM[0]])
        if DRAM[1] in r.metrics:
            got["written"].append(r.metrics[DRAM[1]])

    def median(v: list[float]) -> float | None:
        return sorted(v)[len(v) // 2] if v else None

    entry["regions"] = {
        name: {
            "median_us": median(v["us"]),
            "read_mb": (median(v["read"]) or 0) / 1e6 if v["read"] else None,
            "written_mb": (median(v["written"]) or 0) / 1e6 if v["written"] else None,
            "runs_with_counters": len(v["read"]),
        }
        for name, v in per.items()
    }
    stats = LAST_SAMPLER.get("stats")
    if stats is not None and session.backend == "pm":
        entry["sampler"] = stats
    return entry


LAST_SAMPLER: dict[str, Any] = {}


def watch_sampler() -> None:
    """Keep each closed PmSampler's drain statistics and interval."""
    from nsight_lab.backends.pm.sampler import PmSampler

    close = PmSampler.close

    def recorded(self: PmSampler) -> None:
        LAST_SAMPLER["stats"] = {
            **vars(self.stats),
            "interval_ns": self.interval_ns,
            "limit": self.limit,
        }
        close(self)

    PmSampler.close = recorded  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runs", default="10,50,200")
    parser.add_argument("--budget-s", type=float, default=300.0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ["NSIGHT_LAB_HOME"] = tempfile.mkdtemp(prefix="nsight-lab-pm-")
    from IPython.testing.globalipapp import start_ipython

    watch_sampler()
    ip = start_ipython()
    ip.run_line_magic("load_ext", "nsight_lab")
    ip.run_cell("import torch, nsight\n" + TENSORS)
    results: dict[str, Any] = {"cells": [], "started": time.strftime("%F %T")}
    path = args.out / "pm_scale_h200.json"
    started = time.monotonic()
    counts = [int(n) for n in args.runs.split(",")]
    plan = []
    for n in counts:
        plan += [
            f"--metrics {','.join(DRAM)} --runs {n}",
            f"--backend pm --runs {n}",
            f"--backend events --runs {n}",
            f"--backend cupti --runs {n}",
        ]
    # The first pm cell of the process first: its set-up cost is the first cell's.
    for options in plan:
        if time.monotonic() - started > args.budget_s:
            results["cells"].append({"options": options, "skipped": "over budget"})
            continue
        try:
            entry = run(ip, options)
        except Exception as exc:  # noqa: BLE001  (one cell never stops the rest)
            entry = {"options": options, "error": repr(exc), "tb": traceback.format_exc()}
        results["cells"].append(entry)
        print(json.dumps(entry)[:600], flush=True)  # noqa: T201
        path.write_text(json.dumps(results, indent=1, default=str) + "\n")
    results["total_s"] = time.monotonic() - started
    path.write_text(json.dumps(results, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
