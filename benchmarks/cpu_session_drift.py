"""How far apart are two sessions of the same cell on the cpu backend, and why.

The comparison's interval knows only the noise within each session; what changes
between sessions (which CPU the kernel runs on, its frequency, other processes) is
added as :data:`nsight_lab.compare.SESSION_DRIFT`. This measures that drift where the
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
import tempfile
from pathlib import Path
from typing import Any

SETUP = """\
%load_ext nsight_lab
import numpy as np
a = np.random.default_rng(0).random(1 << 16)
"""
CELL = """\
%%nsight --backend cpu --runs {runs} --warmup 5 --quiet --name {name}
b = np.sort(a)
"""


def _session_medians(names: list[str]) -> list[tuple[float, float]]:
    """Each session's median duration and median host probe (ns)."""
    from nsight_lab.host_speed import PROBE_METRIC
    from nsight_lab.store.run_store import RunStore

    with RunStore() as store:
        by_name = {s.name: s.id for s in store.list_sessions(limit=10_000)}
        out = []
        for name in names:
            runs = [r for r in store.runs(by_name[name]) if r.annotation == "cell"]
            out.append(
                (
                    statistics.median(r.duration_ns for r in runs),
                    statistics.median(r.metrics[PROBE_METRIC] for r in runs),
                )
            )
        return out


def _verdicts(names: list[str]) -> list[dict[str, Any]]:
    """The comparison of each session with the one before, as the sidebar shows it."""
    from nsight_lab.compare import compare_runs
    from nsight_lab.records import TIME_METRIC
    from nsight_lab.store.run_store import RunStore

    with RunStore() as store:
        by_name = {s.name: s.id for s in store.list_sessions(limit=10_000)}
        out = []
        for a, b in itertools.pairwise(names):
            (row,) = [
                r
                for r in compare_runs(store.runs(by_name[a]), store.runs(by_name[b]))
                if r.metric == TIME_METRIC
            ]
            out.append(
                {
                    "ratio": round(row.ratio, 4),
                    "ci": [round(row.ci_low or 0, 4), round(row.ci_high or 0, 4)],
                    "verdict": row.verdict,
                    "host_differs": row.host_differs,
                }
            )
        return out


def _p95(values: list[float]) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    return round(ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)], 4)


def _mode(mode: str, sessions: int, runs: int) -> dict[str, Any]:
    import jupyter_client

    manager, client = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    try:

        def run(code: str) -> None:
            reply = client.execute_interactive(code, timeout=600)
            if reply["content"]["status"] != "ok":
                msg = f"{mode}: the cell failed: {reply['content']}"
                raise RuntimeError(msg)

        if mode == "pinned":
            run("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})")
        run(SETUP)
        run(CELL.format(runs=runs, name=f"{mode}-warm-up"))
        names = [f"{mode}-{i}" for i in range(sessions)]
        for name in names:
            run(CELL.format(runs=runs, name=name))
    finally:
        manager.shutdown_kernel(now=True)
    from nsight_lab.host_speed import HOST_TOLERANCE

    medians = _session_medians(names)
    verdicts = _verdicts(names)
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
    # The kernels inherit this: one throwaway store for the whole benchmark.
    os.environ["NSIGHT_LAB_HOME"] = tempfile.mkdtemp(prefix="nsight-lab-drift-")
    os.environ.pop("NSIGHT_LAB_STORE", None)

    from nsight_lab.compare import SESSION_DRIFT

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
