"""Does the live display disturb what it shows? Quiet vs live medians, side by side.

The same cell (a small torch matmul per config, a few regions) is profiled alternately
with ``--quiet`` and with the live widget, several times each, in one IPython shell on
the cpu backend (or ``events`` on a GPU). For every region and config, the median
duration of the live sessions is compared with the quiet ones. The display's work
happens between runs on the measuring thread, within a 5 % time budget, so the medians
should agree within a few per cent (issue 10 asks for 5 % on the 2-core machine).

Run: ``python benchmarks/display_interference.py OUT_DIR [--backend cpu]``; writes
``display_interference_<backend>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

CELL = """%%nsight --backend {backend} --configs 128,256 --runs 60 --warmup 3{quiet}
import torch, nsight
a = torch.randn(n, n, device=DEVICE)
with nsight.annotate("matmul"):
    a @ a
with nsight.annotate("relu"):
    torch.relu(a)
"""


def _medians(session_id: int) -> dict[str, float]:
    from nsight_lab.store.run_store import RunStore

    by_key: dict[str, list[float]] = {}
    with RunStore() as store:
        for run in store.runs(session_id):
            if run.duration_ns is not None:
                key = f"{run.annotation} n={run.config.get('n')}"
                by_key.setdefault(key, []).append(run.duration_ns)
    return {key: statistics.median(values) for key, values in by_key.items()}


def main() -> None:
    """Alternate quiet and live cells; write the medians and their ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args()
    os.environ["NSIGHT_LAB_HOME"] = tempfile.mkdtemp(prefix="nsight-lab-display-")

    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython()
    ip.run_line_magic("load_ext", "nsight_lab")
    device = "'cpu'" if args.backend == "cpu" else "'cuda'"
    ip.run_cell(f"DEVICE = {device}")
    magics = ip.magics_manager.registry["NsightMagics"]
    sessions: dict[str, list[int]] = {"quiet": [], "live": []}
    walls: dict[str, list[float]] = {"quiet": [], "live": []}
    for _ in range(args.repeats):
        for mode in ("quiet", "live"):
            quiet = " --quiet" if mode == "quiet" else ""
            t0 = time.monotonic()
            ip.run_cell(CELL.format(backend=args.backend, quiet=quiet))
            walls[mode].append(time.monotonic() - t0)
            sessions[mode].append(magics.last_session_id)
    pooled: dict[str, dict[str, float]] = {}
    for mode, ids in sessions.items():
        per_key: dict[str, list[float]] = {}
        for sid in ids:
            for key, value in _medians(sid).items():
                per_key.setdefault(key, []).append(value)
        pooled[mode] = {key: statistics.median(v) for key, v in per_key.items()}
    ratios = {
        key: pooled["live"][key] / pooled["quiet"][key] for key in pooled["quiet"]
    }
    result: dict[str, Any] = {
        "what": (
            "median region duration, live display vs --quiet, medians over "
            f"{args.repeats} alternating sessions of each"
        ),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "backend": args.backend,
        "median_ns": pooled,
        "live_over_quiet": ratios,
        "max_abs_diff_pct": max(abs(r - 1) * 100 for r in ratios.values()),
        "wall_s": walls,
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = args.out_dir / f"display_interference_{args.backend}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("live_over_quiet", "max_abs_diff_pct")}))


if __name__ == "__main__":
    main()
