"""How often does the verdict call two sessions of the same code changed, on a GPU?

Issue 20 asks for a practical threshold "so that <= 1 % of same-code rows are called
changed on real data". This profiles one 12-region cell (elementwise ops on 32-64M
floats, softmax, layernorm, bf16/fp32 matmuls, a transpose copy, a sum, a cumsum, an
fp16 bmm, as in ``../shared/device/FACTS.md`` 2026-12-02) ``--sessions`` times in each
of ``--processes`` fresh processes per backend, all into one throwaway store, then
compares every pair of sessions of a backend with :func:`nsight_lab.analysis.compare.
compare_runs` at the default threshold and writes, per backend: the |log ratio| of
the regions' medians (p50, p95, max), how many timed rows read other than "no
change" (and which), and the same at threshold 0 (noise and drift alone).

Run on the GPU machine (one command; IPython carried as a wheel):
``python benchmarks/verdict_calibration.py $OUT [--backends events,cupti,pm]
[--sessions 6] [--processes 3] [--runs 20]``; writes ``$OUT/verdict_calibration.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

SETUP = """\
%load_ext nsight_lab
import torch
d, k = "{device}", {shrink}
x = torch.randn((64 << 20) // k, device=d)
y = torch.randn((32 << 20) // k, device=d)
z = torch.randn((32 << 20) // k, device=d)
s = torch.randn(8192 // k, 4096, device=d)
ln = torch.nn.LayerNorm(4096, device=d)
a16 = torch.randn(4096 // k, 4096 // k, device=d, dtype=torch.bfloat16)
a32 = torch.randn(4096 // k, 4096 // k, device=d)
t = torch.randn(8192 // k, 8192 // k, device=d)
q = torch.randn(32, 1024 // k, 128, device=d, dtype=torch.float16)
small = torch.randn(16384, device=d)
"""
CELL = """\
%%nsight --backend {backend} --runs {runs} --warmup 3 --quiet --name {name}
import nsight
with nsight.annotate("scale"):
    x * 2.0
with nsight.annotate("addcmul"):
    torch.addcmul(y, y, z)
with nsight.annotate("softmax"):
    torch.softmax(s, dim=-1)
with nsight.annotate("layernorm"):
    ln(s)
with nsight.annotate("matmul_bf16"):
    a16 @ a16
with nsight.annotate("matmul_fp32"):
    a32 @ a32
with nsight.annotate("transpose"):
    t.t().contiguous()
with nsight.annotate("sum"):
    x.sum()
with nsight.annotate("cumsum"):
    y.cumsum(0)
with nsight.annotate("bmm_fp16"):
    torch.bmm(q, q.transpose(1, 2))
with nsight.annotate("add_small"):
    small + small
with nsight.annotate("mul_add"):
    y + y * z
"""


def _child(backend: str, names: list[str], runs: int, *, smoke: bool) -> None:
    """Profile the cell once per name in this process (IPython's shell)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    setup = SETUP.format(device="cpu" if smoke else "cuda", shrink=64 if smoke else 1)
    cells = [CELL.format(backend=backend, runs=runs, name=n) for n in names]
    for code in (setup, *cells):
        result = shell.run_cell(code)
        if not result.success:
            msg = f"cell failed: {result.error_in_exec or result.error_before_exec}"
            raise RuntimeError(msg)


def _compare(names: list[str]) -> dict[str, Any]:
    from nsight_lab.analysis.compare import DEFAULT_THRESHOLD, compare_runs
    from nsight_lab.store.run_store import RunStore

    with RunStore() as store:
        by_name = {s.name: s.id for s in store.list_sessions(limit=10_000)}
        runs = {n: store.runs(by_name[n]) for n in names if n in by_name}
    logs: list[float] = []
    changed: list[dict[str, Any]] = []
    changed_at_zero = 0
    rows = 0
    for a, b in itertools.combinations(list(runs), 2):
        for row in compare_runs(runs[a], runs[b]):
            if not row.timed:
                continue
            rows += 1
            logs.append(abs(math.log(row.ratio)))
            if row.verdict not in {"no change", None}:
                changed.append(
                    {"a": a, "b": b, "region": row.annotation,
                     "ratio": round(row.ratio, 4), "verdict": row.verdict,
                     "note": row.note}
                )  # fmt: skip
        zero = compare_runs(runs[a], runs[b], threshold=0.0)
        changed_at_zero += sum(r.timed and r.verdict != "no change" for r in zero)
    pct = (
        [round(float(np.percentile(logs, p)) * 100, 3) for p in (50, 95)]
        if logs
        else []
    )
    return {
        "sessions": len(runs),
        "timed_rows_compared": rows,
        "abs_log_ratio_pct": {
            "p50": pct[0] if pct else None,
            "p95": pct[1] if pct else None,
            "max": round(max(logs) * 100, 3) if logs else None,
        },
        "threshold": DEFAULT_THRESHOLD,
        "called_changed": len(changed),
        "called_changed_fraction": round(len(changed) / rows, 4) if rows else None,
        "called_changed_at_threshold_0": changed_at_zero,
        "changed_rows": changed,
    }


def main() -> None:
    """Profile, compare every same-code pair per backend, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--backends", default="events,cupti,pm")
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--smoke", action="store_true", help="a CPU check of the script: tensors / 64"
    )
    parser.add_argument("--child", nargs=2, metavar=("BACKEND", "NAMES"))
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.child[1].split(","), args.runs, smoke=args.smoke)
        return
    os.environ["NSIGHT_LAB_HOME"] = tempfile.mkdtemp(prefix="nsight-lab-verdicts-")
    os.environ.pop("NSIGHT_LAB_STORE", None)
    result: dict[str, Any] = {"what": __doc__.split("\n\n")[1].replace("\n", " ")}
    for backend in args.backends.split(","):
        names = []
        for p in range(args.processes):
            batch = [f"{backend}-p{p}-s{i}" for i in range(args.sessions)]
            done = subprocess.run(  # noqa: S603  (this script, this interpreter)
                [sys.executable, __file__, str(args.out_dir), "--runs",
                 str(args.runs), *(["--smoke"] if args.smoke else []),
                 "--child", backend, ",".join(batch)],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if done.returncode != 0:
                result[backend] = {"error": done.stderr.strip().splitlines()[-3:]}
                break
            names += batch
        else:
            result[backend] = _compare(names)
        print(backend, json.dumps(result[backend])[:300])
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = args.out_dir / "verdict_calibration.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
