"""What a cell's final output costs: its size and the time to build its static page.

A 3-config x 30-run session of four regions (360 records) is profiled for real on the
cpu backend (the runner, the work model, the live view on its budget), and the final
bundle (``nsight_lab/views/bundle.py``) is built the way ``WidgetView.finish`` builds
it. Measured:

- the bundle's size in bytes, per MIME type and per figure (issue 10: at most
  150 KB per profiled cell; the kaleido PNGs made it ~0.9 MB);
- the static page's build time (``fallback.static_bundle``: progress line, median
  bars, summary table): the first call in the process and the median and p95 of
  ``--repeats`` more (issue 10: at most 100 ms; the kaleido PNG path took 1-5 s);
- ``finish`` as a whole (figures, summary, bundle), once.

Run: ``python benchmarks/final_bundle.py OUT_DIR [--repeats 200]``; writes
``final_bundle_cpu.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

REGIONS = ("unfused a+b*c", "fused", "sum", "matmul")


def _profile() -> tuple[Any, list[Any], Any]:
    """The session's live view before ``finish``, its records and its frame."""
    import torch

    from nsight_lab.backends.cpu import CpuTimerBackend
    from nsight_lab.contract.records import SessionInfo
    from nsight_lab.options import parse_options
    from nsight_lab.plan import make_plan
    from nsight_lab.regions import annotate
    from nsight_lab.results import to_dataframe
    from nsight_lab.roofline.workmodel import count_work
    from nsight_lab.runner import Runner
    from nsight_lab.views.live import WidgetView

    def body(config: dict[str, Any]) -> None:
        n = int(config["n"])
        a, b, c = torch.ones(n), torch.ones(n), torch.ones(n)
        with annotate(REGIONS[0]):
            a + b * c
        with annotate(REGIONS[1]):
            torch.addcmul(a, b, c)
        with annotate(REGIONS[2]):
            a.sum()
        with annotate(REGIONS[3]):
            a @ b

    options = parse_options("--backend cpu --configs 64,256,1024 --runs 30 --warmup 1")
    plan = make_plan(options, {"cpu": CpuTimerBackend().probe()})
    view = WidgetView(session_id=1, header="nsight-lab session 1", show=False)
    measurement = CpuTimerBackend().open(options)
    runner = Runner(
        plan,
        measurement,
        1,
        lambda _batch: None,
        on_progress=view.update,
        model_work=count_work,
    )
    try:
        records = runner.run(body)
    finally:
        measurement.close()
    session = SessionInfo(id=1, status="completed", backend="cpu", created_at="x")
    return view, records, to_dataframe(records, session, options.param_names)


def main() -> None:
    """Profile the session, build its bundle, time the static page; write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()

    from nsight_lab.roofline.placement import Peaks, place_records
    from nsight_lab.viewmodel.summary import median_bars
    from nsight_lab.views.bundle import MIME_TYPE
    from nsight_lab.views.fallback import static_bundle

    peaks = Peaks(
        device="cpu", flops_per_s={"fp32": 1e11}, dram_bytes_per_s=2e10, source="bench"
    )
    view, records, frame = _profile()
    start = time.perf_counter()
    view.finish(records, peaks)
    finish_s = time.perf_counter() - start
    bundle = view.bundle
    assert bundle is not None  # noqa: S101
    data = bundle[MIME_TYPE]

    def page() -> float:
        t0 = time.perf_counter()
        static_bundle(
            session_id=1,
            status="completed",
            progress=data["progress"],
            message=data["message"],
            summary=data["summary"],
            bars=median_bars(view.model.regions),
        )
        return time.perf_counter() - t0

    first_ms = page() * 1e3
    times = sorted(page() * 1e3 for _ in range(args.repeats))
    result = {
        "what": (
            "final bundle of a 3-config x 30-run cpu session of four regions "
            "(360 records): size and static-page build time"
        ),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "records": len(records),
        "bundle_bytes": len(json.dumps(bundle)),
        "bytes_by_type": {k: len(json.dumps(v)) for k, v in bundle.items()},
        "figure_bytes": {k: len(json.dumps(v)) for k, v in data["figures"].items()},
        "static_page_first_ms": round(first_ms, 3),
        "static_page_median_ms": round(statistics.median(times), 3),
        "static_page_p95_ms": round(times[int(0.95 * (len(times) - 1))], 3),
        "static_page_repeats": args.repeats,
        "finish_s": round(finish_s, 4),
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = args.out_dir / "final_bundle_cpu.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
