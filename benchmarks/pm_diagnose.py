r"""Why a pm cell reads no bytes, and who holds CUPTI's subscriber: a device check.

Each case runs in its own child process (CUPTI state is per process) and prints one
JSON line. ``pm-stopped`` / ``pm-live``: the pm backend's collector driven as the
runner drives it (a warm-up and 5 timed runs of a 256 MiB copy and a 1 MiB add), with
every drain traced: its samples' time range against the batch's kernels' range, the
regions the attribution found, the measurement's notes. ``order-*``: NVIDIA
nsight-python's CUPTI tool before or after an nsight-lab cupti cell or torch.profiler
in one process (its ``cuptiSubscribe`` takes the process's one subscriber).

On the device, the carried site installed (``benchmarks/device_realwork.sh``)::

    python3 benchmarks/pm_diagnose.py --out $OUT
"""

# ruff: noqa: S603  (runs this interpreter on this script; prints its report)
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.backends.drive import drive  # noqa: E402  (the tests' driver)

MiB = 1 << 20
DRAM = ("dram__bytes_read.sum", "dram__bytes_write.sum")


def case_pm() -> dict[str, Any]:
    """The pm collector on a copy and a tiny add, every drain traced."""
    import torch

    from nsight_lab.backends.pm import collector as pm_collector
    from nsight_lab.backends.pm.backend import PmBackend
    from nsight_lab.options import parse_options

    trace: list[dict[str, Any]] = []
    real_counters = pm_collector.region_counters

    def traced_counters(chunks: Any, layout: Any, metrics: Any) -> Any:  # noqa: ANN401
        totals = real_counters(chunks, layout, metrics)
        entry: dict[str, Any] = {
            "chunks": len(chunks),
            "samples": sum(len(c) for c in chunks),
            "sample_lo": min(
                (int(c.starts[0]) for c in chunks if len(c)), default=None
            ),
            "sample_hi": max((int(c.ends[-1]) for c in chunks if len(c)), default=None),
            "totals": sorted(str(k) for k in totals)[:8],
        }
        try:
            entry["layout"] = repr(layout)[:600]
        except Exception as exc:  # noqa: BLE001
            entry["layout"] = f"{type(exc).__name__}"
        trace.append(entry)
        return totals

    pm_collector.region_counters = traced_counters
    real_timings = pm_collector.PmMeasurement._timings  # noqa: SLF001

    def traced_timings(self: Any, causes: Any, runs: Any) -> Any:  # noqa: ANN401
        ks = causes.kernels
        trace.append(
            {
                "batch_runs": [r.seq for r in runs],
                "kernels": len(ks),
                "kernel_lo": min((k.start_ns for k in ks), default=None),
                "kernel_hi": max((k.end_ns for k in ks), default=None),
                "sampler": type(self._sampler).__name__,
                "interval_ns": self.interval_ns,
                "stats": repr(getattr(self._sampler, "stats", None))[:300],
            }
        )
        return real_timings(self, causes, runs)

    pm_collector.PmMeasurement._timings = traced_timings  # noqa: SLF001
    x = torch.randn(64 * MiB, device="cuda")
    small = torch.randn(MiB // 4, device="cuda")
    work = {"copy": lambda: x * 2, "tiny": lambda: small * 2}
    m = PmBackend().open(parse_options(f"--backend pm --metrics {','.join(DRAM)}"))
    try:
        timings = drive(m, lambda name: work[name](), list(work), 5)
    finally:
        notes = list(getattr(m, "notes", []))
        m.close()
    return {
        "counters": [
            {
                r: {k: round(v / MiB, 1) for k, v in c.items()}
                for r, c in t.counters.items()
            }
            for t in timings
        ],
        "durations_us": [
            {r: round(v / 1e3, 1) for r, v in t.durations_ns.items()}
            if hasattr(t, "durations_ns")
            else repr(t)[:200]
            for t in timings[:2]
        ],
        "notes": notes,
        "trace": trace,
    }


def case_pm_after_torchprof() -> dict[str, Any]:
    """torch.profiler first (Kineto's clock), then the pm case, every clock recorded.

    Each batch's raw kernel records (CUPTI's ticks), their conversion, its samples
    (times and DRAM values) and the clocks read at the drain go to
    ``pm_after_torchprof.json.gz``: the CPU replays it.
    """
    import gzip

    import numpy as np

    from nsight_lab.backends import cupti as cupti_backend
    from nsight_lab.backends.pm.decoding import Decoding

    _torch_profiler()
    batches: list[dict[str, Any]] = []
    real_in_ns = cupti_backend.CuptiMeasurement._in_ns  # noqa: SLF001
    real_take = Decoding._take_samples  # noqa: SLF001

    def in_ns(self: Any, kernels: Any, runs: Any) -> Any:  # noqa: ANN401
        batches.append(
            {"raw": [[k.start_ns, k.end_ns, k.correlation_id] for k in kernels]}
        )
        got = real_in_ns(self, kernels, runs)
        clock = self._clock
        batches[-1].update(
            ns=[[k.start_ns, k.end_ns] for k in got],
            rate=clock.rate,
            tick0=clock._tick0,  # noqa: SLF001
            epoch0=clock._epoch0,  # noqa: SLF001
            perf0=clock._perf0,  # noqa: SLF001
        )
        return got

    def take(self: Any, kernels: Any, runs: Any) -> Any:  # noqa: ANN401
        chunks = real_take(self, kernels, runs)
        import time

        now = {
            "ticks": int(self._cupti.get_timestamp()),
            "time_ns": time.time_ns(),
            "perf_ns": time.perf_counter_ns(),
        }
        entry = batches[-1] if batches else {}
        entry["now"] = now
        entry["runs"] = [[r.seq, list(r.regions)] for r in runs]
        entry["samples"] = [
            {
                "starts": c.starts.tolist(),
                "ends": c.ends.tolist(),
                "values": np.round(c.all_values(), 1).tolist(),
            }
            for c in chunks or []
        ]
        return chunks

    cupti_backend.CuptiMeasurement._in_ns = in_ns  # noqa: SLF001
    Decoding._take_samples = take  # noqa: SLF001
    out = case_pm()
    path = Path(os.environ.get("DIAG_OUT", ".")) / "pm_after_torchprof.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(batches, f)
    out["recorded"] = str(path)
    out["batch_ranges"] = [
        {
            "raw": [min(k[0] for k in b["raw"]), max(k[1] for k in b["raw"])]
            if b.get("raw")
            else None,
            "ns": [min(k[0] for k in b["ns"]), max(k[1] for k in b["ns"])]
            if b.get("ns")
            else None,
            "samples": [b["samples"][0]["starts"][0], b["samples"][-1]["ends"][-1]]
            if b.get("samples")
            else None,
            "now": b.get("now"),
            "rate": b.get("rate"),
        }
        for b in batches
    ]
    out.pop("trace", None)
    return out


def case_magic_sequence() -> dict[str, Any]:
    """events, cupti, then auto with the DRAM pair, as findings_labelled runs them."""
    import traceback as tb

    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    from nsight_lab.backends.pm import errors as pm_errors

    seen: list[str] = []
    real_explain = pm_errors.explain

    def explain(exc: BaseException, *, started: bool) -> Any:  # noqa: ANN401
        seen.append("".join(tb.format_exception(exc))[-1500:])
        return real_explain(exc, started=started)

    pm_errors.explain = explain
    ip = start_ipython() or get_ipython()
    ip.run_line_magic("load_ext", "nsight_lab")
    body = (
        "import torch, nsight\n"
        "x = torch.randn(1 << 24, device='cuda')\n"
        "with nsight.annotate('copy'):\n    x * 2\n"
    )
    out: dict[str, Any] = {}
    for options in (
        "--backend events",
        "--backend cupti",
        f"--metrics {','.join(DRAM)}",
        f"--backend pm --metrics {','.join(DRAM)}",
    ):
        result = ip.run_cell(f"%%nsight {options} --runs 5 --quiet\n{body}")
        failure = result.error_before_exec or result.error_in_exec
        out[options] = (
            "ok" if failure is None else f"{type(failure).__name__}: {failure}"
        )
    out["explained"] = seen
    return out


def _nspy_cell() -> dict[str, Any]:
    os.environ.setdefault("NSPY_NCU_INIT_AT_IMPORT", "0")
    import nsight
    import torch

    a = torch.randn(2048, 2048, device="cuda")
    nsight.activate(nsight.Tool.CUPTI)
    try:

        @nsight.analyze.kernel(configs=[[0]], runs=3)
        def mm(_: int) -> None:
            with nsight.annotate("mm"):
                a @ a

        frame = mm().to_dataframe()
        return {"nspy_mean_us": float(frame["AvgValue"].iloc[0]) / 1e3}
    finally:
        nsight.deactivate()


def _lab_cupti_cell() -> dict[str, Any]:
    import torch

    from nsight_lab.backends.cupti import CuptiBackend
    from nsight_lab.options import parse_options

    a = torch.randn(2048, 2048, device="cuda")
    m = CuptiBackend().open(parse_options("--backend cupti"))
    try:
        timings = drive(m, lambda _: a @ a, ["mm"], 3)
    finally:
        m.close()
    return {"lab_regions": sorted(timings[0].counters) if timings else None}


def _torch_profiler() -> dict[str, Any]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    a = torch.randn(2048, 2048, device="cuda")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        a @ a
        torch.cuda.synchronize()
    return {"torch_profiler": "ran"}


ORDERS = {
    "order-lab-then-nspy": (_lab_cupti_cell, _nspy_cell),
    "order-nspy-then-lab": (_nspy_cell, _lab_cupti_cell),
    "order-torchprof-then-nspy": (_torch_profiler, _nspy_cell),
}


def run_case(name: str) -> dict[str, Any]:
    """One case in this process."""
    steps = ORDERS.get(name)
    out: dict[str, Any] = {"case": name}
    try:
        if name == "pm-after-torchprof":
            out.update(case_pm_after_torchprof())
        elif name == "magic-sequence":
            out.update(case_magic_sequence())
        elif steps is None:
            out.update(case_pm())
        else:
            for i, step in enumerate(steps):
                try:
                    out[f"{i}:{step.__name__}"] = step()
                except Exception as exc:  # noqa: BLE001
                    out[f"{i}:{step.__name__}"] = f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001
        out["error"] = f"{type(exc).__name__}: {exc}"
        out["tb"] = traceback.format_exc()[-2000:]
    return out


def main() -> None:
    """Every case in a child of its own; the JSON lines to ``--out``."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path())
    ap.add_argument("--case")
    ap.add_argument("--cases", help="comma-separated cases (default: the first five)")
    args = ap.parse_args()
    if args.case:
        print("CASE " + json.dumps(run_case(args.case), default=str))
        return
    results = []
    cases = args.cases.split(",") if args.cases else ["pm-stopped", "pm-live", *ORDERS]
    for case in cases:
        env = dict(os.environ, PYTHONPATH=f"{ROOT}:{os.environ.get('PYTHONPATH', '')}")
        env["DIAG_OUT"] = str(args.out.resolve())
        args.out.mkdir(parents=True, exist_ok=True)
        if case == "pm-live":
            env["NSIGHT_LAB_PM_DECODE"] = "live"
        try:
            done = subprocess.run(
                [sys.executable, __file__, "--case", case],
                env=env, capture_output=True, text=True, timeout=120, check=False,
            )  # fmt: skip
            lines = [x for x in done.stdout.splitlines() if x.startswith("CASE ")]
            found = json.loads(lines[-1][5:]) if lines else {"case": case}
            found["stderr_tail"] = done.stderr[-1500:]
        except subprocess.TimeoutExpired:
            found = {"case": case, "error": "timed out (120 s)"}
        results.append(found)
        print(json.dumps(found, default=str)[:4000], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "pm_diagnose.json").write_text(
        json.dumps(results, indent=1, default=str)
    )


if __name__ == "__main__":
    main()
