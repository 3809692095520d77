"""The "Counters over time" chart of PM samples recorded on the H200, as a PNG.

Reads ``tests/fixtures/pm_samples_h200.json`` (PM samples and CUPTI kernel intervals
that ``benchmarks/pm_h200.py`` recorded on the H200 on 2026-12-01: ``x*2`` over
256 MB, ``a + b*c`` and ``torch.addcmul`` on 32M floats, a tiny 4 MB ``x*2``, with
the DRAM-quiet gaps), runs the pm backend's own attribution over it
(:func:`nsight_lab.backends.pm.counters.region_counters`), builds the run records a
session would store and draws them with the chart builder the sidebar and the widget
use (:func:`nsight_lab.figures.counters_figure`), then writes the PNG (kaleido and a
Chrome/Chromium). No GPU needed: the samples are the H200's, the path after the
decode is the product's.

Usage::

    python benchmarks/pm_timeline_fixture.py benchmarks/results/pm_timeline_h200.png
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from nsight_lab.backends.pm.attribution import Layout
from nsight_lab.backends.pm.counters import region_counters
from nsight_lab.backends.pm.sampler import Chunk
from nsight_lab.contract.records import RunRecord
from nsight_lab.figures import counters_figure, write_png

FIXTURE = Path(__file__).resolve().parents[1] / "tests/fixtures/pm_samples_h200.json"


def records(recording: dict[str, Any]) -> list[RunRecord]:
    """The run records of the recording's batch with quiet gaps."""
    metrics = tuple(recording["metrics"])
    batch = next(b for b in recording["batches"] if b["quiet_gaps"])
    table = np.asarray(batch["samples"], dtype=np.float64)
    chunk = Chunk(
        metrics=metrics,
        starts=table[:, 0].astype(np.int64),
        ends=table[:, 1].astype(np.int64),
        _values=dict(enumerate(table[:, 2:])),
    )
    spans = {
        (r["run"], r["name"]): [tuple(k) for k in r["kernels"]]
        for r in batch["regions"]
    }
    layout = Layout(regions=spans, busy=[tuple(b) for b in batch["busy"]])
    totals = region_counters([chunk], layout, metrics)
    out = []
    order = {name: i for i, name in enumerate(dict.fromkeys(k[1] for k in spans))}
    for (run, name), kernels in spans.items():
        found = totals.get((run, name))
        if found is None:
            continue
        out.append(
            RunRecord(
                session_id=1,
                config_index=0,
                config={},
                run_index=run,
                annotation=name,
                duration_ns=float(sum(b - a for a, b in kernels)),
                backend="pm",
                metrics=found.values(metrics),
                series=found.packed_series(metrics),
            )
        )
    out.sort(key=lambda r: (order[r.annotation], r.run_index))
    return out


def main(path: Path) -> None:
    """Draw the chart of the recording and write it to ``path``."""
    recording = json.loads(FIXTURE.read_text())
    fig = counters_figure(records(recording))
    if fig is None:
        msg = "the recording gave no counter series"
        raise SystemExit(msg)
    fig.update_layout(
        title=(
            "Counters over time: PM samples recorded on the H200 "
            f"({recording['chip']}, every {recording['interval_ns'] / 1000:g} µs)"
        )
    )
    print(write_png(fig, path, width=1200, height=700))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("pm_timeline_h200.png"))
