"""The store writer's lag on SQLite and PostgreSQL, side by side in one run.

``tests/store/test_writer.py`` asserts the README's bound (100 ms on SQLite, 250 ms on
PostgreSQL, never more than 1,000 runs) with CI's slack; this reports the figures
behind it. For each engine and producer pace, ``tests/store/_writer_lag.py`` (the
test's own measurement: a producer hands one-run batches to a ``StoreWriter`` for 1 s
while a second connection polls the committed count every 5 ms) runs in a fresh
process, ``--repeats`` times. The paced producer spins between runs, holding the GIL
as a fast Python cell does: what it gets through in its second, against the flat-out
figure, says how much the writer's commits hold the cell back.

Run, with a throwaway PostgreSQL cluster (Debian's ``postgresql`` package)::

    python tests/_postgres.py -- python benchmarks/writer_lag.py benchmarks/results

``$NSIGHT_LAB_STORE`` (set by ``tests/_postgres.py``) names the PostgreSQL store;
without it only SQLite is measured. Writes ``writer_lag.json`` to the folder given.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nsight_lab.store.postgres import is_postgres_url, redact

ROOT = Path(__file__).resolve().parents[1]
MEASURE = ROOT / "tests" / "store" / "_writer_lag.py"
PACES_S = {"flat-out": 0.0, "4000-per-s": 0.00025}


def measure(store: str, pace_s: float) -> dict[str, Any]:
    """One fresh-process measurement: its figures and how many polls broke the bound."""
    done = subprocess.run(  # noqa: S603  (our own script, with this Python)
        [sys.executable, str(MEASURE), store, str(pace_s), "1.0"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {**result["figures"], "late_polls": len(result["late"])}


def summarize(trials: list[dict[str, Any]]) -> dict[str, Any]:
    """Median and worst of the repeats."""
    return {
        "runs_median": statistics.median(t["runs"] for t in trials),
        "worst_lag_ms_median": statistics.median(t["worst_lag_ms"] for t in trials),
        "worst_lag_ms_max": max(t["worst_lag_ms"] for t in trials),
        "worst_lag_runs_max": max(t["worst_lag_runs"] for t in trials),
        "bound_ms": trials[0]["bound_ms"],
        "trials_with_late_polls": sum(1 for t in trials if t["late_polls"]),
        "trials": trials,
    }


def main() -> None:
    """Measure every engine and pace; write ``writer_lag.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for writer_lag.json")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    stores: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="nsight-lab-writer-lag-") as tmp:
        stores["sqlite"] = str(Path(tmp) / "store.sqlite")
        url = os.environ.get("NSIGHT_LAB_STORE", "")
        if is_postgres_url(url):
            stores["postgresql"] = url
        results: dict[str, Any] = {}
        for engine, store in stores.items():
            for pace_name, pace_s in PACES_S.items():
                trials = []
                for _ in range(args.repeats):
                    trials.append(measure(store, pace_s))
                    time.sleep(0.2)  # the last process's server backend goes first
                found = summarize(trials)
                results[f"{engine}/{pace_name}"] = found
                print(
                    f"{engine:10s} {pace_name:10s} runs {found['runs_median']:,.0f}, "
                    f"worst lag {found['worst_lag_ms_max']:.0f} ms "
                    f"(bound {found['bound_ms']:.0f} ms), "
                    f"{found['trials_with_late_polls']} of {len(trials)} late"
                )
    report = {
        "what": __doc__.splitlines()[0],
        "host": {
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        "stores": {
            k: redact(v) if is_postgres_url(v) else "a SQLite file"
            for k, v in stores.items()
        },
        "paces_s": PACES_S,
        "results": results,
    }
    path = args.out / "writer_lag.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
