"""Where the host time of a profile goes.

NVML call costs and a cProfile of the run loop.

Run: ``python benchmarks/host_overhead.py OUT_DIR`` on a GPU machine; writes
``host_overhead.json`` and ``host_overhead_profile.txt`` to OUT_DIR.
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path


def nvml_costs(reps: int = 200) -> dict[str, float]:
    """Mean microseconds per NVML call used by the telemetry."""
    import pynvml

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    calls = {
        "clock_sm": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
        "clock_mem": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
        "temperature": lambda: pynvml.nvmlDeviceGetTemperature(
            h, pynvml.NVML_TEMPERATURE_GPU
        ),
        "power": lambda: pynvml.nvmlDeviceGetPowerUsage(h),
        "clock_event_reasons": lambda: pynvml.nvmlDeviceGetCurrentClocksEventReasons(h),
        "margin_temperature": lambda: pynvml.nvmlDeviceGetMarginTemperature(h),
    }
    out = {}
    for name, call in calls.items():
        call()
        t0 = time.perf_counter()
        for _ in range(reps):
            call()
        out[name] = (time.perf_counter() - t0) / reps * 1e6
    return out


def main(out_dir: Path) -> None:
    """Measure and write the files."""
    from IPython.testing.globalipapp import start_ipython

    out_dir.mkdir(parents=True, exist_ok=True)
    result: dict[str, object] = {"nvml_us_per_call": nvml_costs()}
    ip = start_ipython()
    ip.run_line_magic("load_ext", "nsight_lab")
    ip.run_cell(
        "import torch, nsight\nx = torch.randn(64 * 1024 * 1024, device='cuda')"
    )
    cell = (
        "%%nsight --backend events --runs 400 --warmup 0 --quiet\n"
        "with nsight.annotate('op'):\n"
        "    x * 2\n"
    )
    ip.run_cell(cell)
    profiler = cProfile.Profile()
    t0 = time.perf_counter()
    profiler.enable()
    ip.run_cell(cell)
    profiler.disable()
    result["profiled_cell_wall_s"] = time.perf_counter() - t0
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(30)
    (out_dir / "host_overhead_profile.txt").write_text(text.getvalue())
    (out_dir / "host_overhead.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(text.getvalue()[:6000])


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "results")
