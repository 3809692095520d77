"""How far apart are two sessions of the same cell on the cpu backend, and why.

The comparison's interval knows only the noise within each session; what changes
between sessions (which CPU the kernel runs on, its frequency, other processes) is
added as :data:`nsight_lab.analysis.compare.SESSION_DRIFT`. This measures that drift where the
cpu backend is used: in a real IPython kernel (started with jupyter_client, as
JupyterLab starts one), the same ``%%nsight --backend cpu`` cell (``np.sort`` of 64k
floats) profiled ``--sessions`` times in a row, for each mode:

- ``unpinned``: the kernel as it starts, free to move between CPUs;
- ``pinned``: the kernel pinned to one CPU (``os.sched_setaffinity``) before the first
  session, as the README recommends for host timings.

For each mode it records every session's median and the ratio of each session's
median to the one before (what comparing two consecutive sessions would see), and
the 95th percentile and the largest of ``|log ratio|``: over all pairs, and over the
pairs whose host probes (:mod:`nsight_lab.host_speed`) agree within its tolerance,
the pairs the comparison does not flag. ``SESSION_DRIFT["cpu"]`` is set from the
latter: the drift that is left once the host's steps are named.

Run: ``python benchmarks/cpu_session_drift.py OUT_DIR [--sessions 20] [--runs 200]``;
writes ``cpu_session_drift.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import statistics
from pathlib import Path
from typing import Any

import numpy as np
from _kernel import jupyter_kernel, use_throwaway_store

SETUP = """\
%load_ext nsight_lab
import numpy as np
a = np.random.default_rng(0).random(1 << 16)
"""
CELL = """\
%%nsight --backend cpu --runs {runs} --warmup 5 --quiet --name {name}
b = np.sort(a)
"""


def _read(names: list[str]) -> tuple[list[tuple[float, float]], list[dict[str, Any]]]:
    """Read each session once: its median duration and median host probe (ns).

    Also the comparison of each session with the one before, as the sidebar shows it.
    """
    from nsight_lab.analysis.compare import compare_runs
    from nsight_lab.contract.records import TIME_METRIC
    from nsight_lab.host_speed import PROBE_METRIC
    from nsight_lab.store.run_store import RunStore

    with RunStore() as store:
        by_name = {s.name: s.id for s in store.list_sessions(limit=10_000)}
        runs = {name: store.runs(by_name[name]) for name in names}
    medians = [
        (
            statistics.median(r.duration_ns for r in runs[name]),
            statistics.median(r.metrics[PROBE_METRIC] for r in runs[name]),
        )
        for name in names
    ]
    verdicts = []
    for a, b in itertools.pairwise(names):
        (row,) = [r for r in compare_runs(runs[a], runs[b]) if r.metric == TIME_METRIC]
        verdicts.append(
            {
                "ratio": round(row.ratio, 4),
                "ci": [round(row.ci_low or 0, 4), round(row.ci_high or 0, 4)],
                "verdict": row.verdict,
                "host_differs": row.host_differs,
            }
        )
    return medians, verdicts


def _p95(values: list[float]) -> float | None:
    """The nearest-rank 95th percentile (numpy's ``inverted_cdf``), rounded."""
    if not values:
        return None
    return round(float(np.percentile(values, 95, method="inverted_cdf")), 4)


def _mode(mode: str, sessions: int, runs: int) -> dict[str, Any]:
    names = [f"{mode}-{i}" for i in range(sessions)]
    with jupyter_kernel() as run:
        if mode == "pinned":
            run("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})")
        run(SETUP)
        run(CELL.format(runs=runs, name=f"{mode}-warm-up"))
        for name in names:
            run(CELL.format(runs=runs, name=name))
    from nsight_lab.host_speed import HOST_TOLERANCE

    medians, verdicts = _read(names)
    ratios = [b[0] / a[0] for a, b in itertools.pairwise(medians)]
    probes = [b[1] / a[1] for a, b in itertools.pairwise(medians)]
    same_speed = [
        abs(math.log(r))
        for r, p in zip(ratios, probes, strict=True)
        if abs(p - 1) <= HOST_TOLERANCE
    ]
    logs = [abs(math.log(r)) for r in ratios]
    return {
        "medians_us": [round(m / 1e3, 2) for m, _ in medians],
        "probe_medians_us": [round(p / 1e3, 2) for _, p in medians],
        "adjacent_ratios": [round(r, 4) for r in ratios],
        "adjacent_probe_ratios": [round(p, 4) for p in probes],
        "p95_abs_log_ratio": _p95(logs),
        "max_abs_log_ratio": round(max(logs), 4),
        "pairs_flagged_by_the_probe": len(ratios) - len(same_speed),
        "p95_abs_log_ratio_same_speed": _p95(same_speed),
        "max_abs_log_ratio_same_speed": round(max(same_speed), 4)
        if same_speed
        else None,
        "comparisons": verdicts,
        "false_alarms": sum(
            v["verdict"] != "no change" and not v["host_differs"] for v in verdicts
        ),
    }


def main() -> None:
    """Profile the same cell many times per mode; write the ratios between sessions."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    use_throwaway_store("nsight-lab-drift-")  # the kernels inherit it: one store

    from nsight_lab.analysis.compare import SESSION_DRIFT

    result = {
        "what": (
            "medians of consecutive sessions of one %%nsight --backend cpu cell "
            f"(np.sort of 64k floats, {args.runs} runs, 5 warm-up) in one jupyter "
            "kernel, after a warm-up session; per mode, the ratio of each session's "
            "median to the previous one's"
        ),
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor()},
        "session_drift_cpu": SESSION_DRIFT["cpu"],
        "modes": {
            m: _mode(m, args.sessions, args.runs) for m in ("unpinned", "pinned")
        },
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = args.out_dir / "cpu_session_drift.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    for mode, figures in result["modes"].items():
        print(
            f"{mode}: p95 |log ratio| {figures['p95_abs_log_ratio']}, "
            f"max {figures['max_abs_log_ratio']}; "
            f"{figures['pairs_flagged_by_the_probe']} pairs flagged by the probe, "
            f"{figures['false_alarms']} of {len(figures['comparisons'])} unflagged "
            "pairs judged other than no change"
        )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
