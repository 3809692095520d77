"""A measurement driven as the runner drives it: a warm-up, then timed runs.

Shared by the GPU tests of the per-kernel backends and ``benchmarks/pm_diagnose.py``.
"""

from __future__ import annotations

from typing import Any

from nsight_lab.contract.collector import RunKey


def drive(measurement: Any, body: Any, regions: list[str], runs: int) -> list[Any]:
    """A warm-up run (it sizes pm's sampling) and ``runs`` timed ones; their timings.

    ``body(name)`` runs region ``name``'s work; the warm-up's timing is left out.
    """
    timings = []
    for run in range(-1, runs):
        measurement.begin_run(RunKey(0, max(run, 0), warmup=run < 0))
        for name in regions:
            measurement.enter_region(name)
            body(name)
            measurement.exit_region(name)
        measurement.end_run(0.0)
        timings += measurement.completed(wait=False)
    timings += measurement.completed(wait=True)
    return [t for t in timings if not t.key.warmup]
