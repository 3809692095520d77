"""What the cpu backend's host probe costs a measurement: with it, without it, and bare.

In one Jupyter kernel (jupyter_client, as JupyterLab starts one), alternately, for
``--rounds`` rounds: a ``%%nsight --backend cpu`` session of a 64k ``np.sort`` with
the host probe at its interval (:data:`nsight_lab.host_speed.PROBE_INTERVAL_NS`), the
same session with the probe never re-timed, and the same 200 sorts timed by a bare
``perf_counter_ns`` loop in the kernel. Per round, the ratios of the medians; the
median ratio over rounds says what the probe adds, and what the cpu backend adds
over a bare loop. Rounds where the host changed speed between the three show as
outliers in the per-round ratios and move the median little.

Run: ``python benchmarks/host_probe_cost.py OUT_DIR [--rounds 12] [--interval-ms 5]``;
writes ``host_probe_cost.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from _kernel import jupyter_kernel, use_throwaway_store

SETUP = """\
%load_ext nsight_lab
import numpy as np, time, statistics
import nsight_lab.host_speed as host_speed
a = np.random.default_rng(0).random(1 << 16)
"""
CELL = """\
%%nsight --backend cpu --runs 200 --warmup 5 --quiet --name {name}
b = np.sort(a)
"""
BARE = """\
times = []
for _ in range(205):
    t = time.perf_counter_ns()
    b = np.sort(a)
    times.append(time.perf_counter_ns() - t)
print(statistics.median(times[5:]))
"""


def main() -> None:
    """Alternate probed, unprobed and bare timings; write their ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--interval-ms", type=float, default=5.0)
    args = parser.parse_args()
    use_throwaway_store("nsight-lab-probe-cost-")

    from nsight_lab.store.run_store import RunStore

    bare: list[float] = []
    with jupyter_kernel() as run:
        run(SETUP)
        run(CELL.format(name="warm-up"))
        interval = int(args.interval_ms * 1e6)
        for i in range(args.rounds):
            run(f"host_speed.PROBE_INTERVAL_NS = {interval}")
            run(CELL.format(name=f"probed-{i}"))
            run("host_speed.PROBE_INTERVAL_NS = 10**18")  # timed once, at the start
            run(CELL.format(name=f"unprobed-{i}"))
            bare.append(float(run(BARE).strip()))

    with RunStore() as store:
        ids = {s.name: s.id for s in store.list_sessions(limit=1000)}

        def median(name: str) -> float:
            return statistics.median(r.duration_ns for r in store.runs(ids[name]))

        probed = [median(f"probed-{i}") for i in range(args.rounds)]
        unprobed = [median(f"unprobed-{i}") for i in range(args.rounds)]
    with_probe = [p / u for p, u in zip(probed, unprobed, strict=True)]
    over_bare = [u / b for u, b in zip(unprobed, bare, strict=True)]
    result = {
        "what": (
            "medians of 200 runs of np.sort over 64k floats in one jupyter kernel: "
            "a %%nsight --backend cpu session with the host probe every "
            f"{args.interval_ms:g} ms, one without it, and a bare perf_counter_ns "
            "loop, alternated per round"
        ),
        "probe_interval_ms": args.interval_ms,
        "rounds": args.rounds,
        "probed_us": [round(v / 1e3, 2) for v in probed],
        "unprobed_us": [round(v / 1e3, 2) for v in unprobed],
        "bare_us": [round(v / 1e3, 2) for v in bare],
        "probed_over_unprobed": [round(r, 4) for r in with_probe],
        "unprobed_over_bare": [round(r, 4) for r in over_bare],
        "median_probed_over_unprobed": round(statistics.median(with_probe), 4),
        "median_unprobed_over_bare": round(statistics.median(over_bare), 4),
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = args.out_dir / "host_probe_cost.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"probe every {args.interval_ms:g} ms: median probed/unprobed "
        f"{result['median_probed_over_unprobed']}, unprobed/bare "
        f"{result['median_unprobed_over_bare']}; wrote {out}"
    )


if __name__ == "__main__":
    main()
