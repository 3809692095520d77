r"""The PM-sampling metric catalog of the GPU at hand, as JSON (issue 28 item 5).

On an H100 NVIDIA nsight-python's examples 08, 09 and 11 failed with "no metric left
to PM-sample" and the tutorial's step 6 lost its ``sm__throughput`` row: which
metrics PM sampling takes differs from what Nsight Compute takes, and nsight-lab's
planner must know it per chip. This script records, for the chip it runs on:

- the GPU's name, CUPTI's chip name, the driver, cupti-python's version;
- every metric PM sampling offers on the chip (the profiler host API's base
  metrics and their sub-metrics: what nsight-lab's check offers as close names);
- for every metric that nsight-lab's defaults, its roofline set, NVIDIA's
  nsight-python examples 00-13 and the tutorial ask for (:data:`REQUESTED`):
  whether PM sampling takes it alone (the passes of its config image, or the
  error text);
- for every set asked for together: the passes of its config image (one pass is
  what PM sampling can do) and whether ``pm_sampling.Collector.configure`` takes it.

The planner's CPU tests read these files (``tests/fixtures/pm_catalog_*.json``,
``tests/backends/pm/catalogs.py``) in place of the chip. Each probe runs under
try/except and records the error text; probes stop after :data:`BUDGET_S` seconds
(the rest marked "skipped"), so the run stays under a minute.

Run from the repository root on the GPU machine, as root, with ``PYTHONPATH`` to the
repository and the carried wheels and ``LD_LIBRARY_PATH`` to the wheel's libcupti::

    python benchmarks/pm_catalog.py $OUT/pm_catalog_gh100_h100.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any

BUDGET_S = 50.0
"""Seconds of probing before the rest is skipped (the whole run stays under 60 s)."""

DRAM_PAIR = ("dram__bytes_read.sum", "dram__bytes_write.sum")
SHARED_PAIR = (
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
)
TUTORIAL_STEP_6 = (
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
)
NSIGHT_PYTHON_EXAMPLES: dict[str, tuple[str, ...]] = {
    # examples 00, 02, 04-07, 12 and 13 ask for the duration only (no counter)
    "nsight-python 01_compare_throughput": (
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    ),
    "nsight-python 08_multiple_metrics": SHARED_PAIR,
    "nsight-python 09_advanced_metric_custom": (*SHARED_PAIR, "launch__sm_count"),
    "nsight-python 10_combine_kernel_metrics": ("sm__cycles_elapsed.avg",),
    "nsight-python 11_output_csv": SHARED_PAIR,
}
"""The ``metrics=`` of NVIDIA/nsight-python's examples (read from its repository)."""


def requested_sets() -> dict[str, tuple[str, ...]]:
    """Every set of metrics asked for together, by who asks: what the catalog probes.

    nsight-lab's own sets come from its modules (so the catalog follows them);
    the examples' and the tutorial's are written out above.
    """
    from nsight_lab.backends.pm.metrics import DEFAULT_METRICS  # noqa: PLC0415
    from nsight_lab.roofline.counters import (  # noqa: PLC0415
        DURATION,
        ROOFLINE_METRICS,
    )

    return {
        "nsight-lab pm defaults": DEFAULT_METRICS,
        "nsight-lab roofline": tuple(m for m in ROOFLINE_METRICS if m != DURATION),
        "DRAM pair": DRAM_PAIR,
        **NSIGHT_PYTHON_EXAMPLES,
        "tutorial step 6": TUTORIAL_STEP_6,
    }


class Clock:
    """The time budget shared by every probe."""

    def __init__(self, budget_s: float) -> None:
        """Start the budget now."""
        self.start = time.monotonic()
        self.budget_s = budget_s

    def spent(self) -> float:
        """Seconds since the start."""
        return time.monotonic() - self.start

    def over(self) -> bool:
        """Whether the budget is spent."""
        return self.spent() > self.budget_s


def _error(exc: BaseException) -> str:
    """One line: the exception's type and text."""
    return f"{type(exc).__name__}: {exc}".replace("\n", " ")[:500]


def _device(info: dict[str, Any]) -> None:
    """GPU name, driver and CUDA through torch and NVML, each under try/except."""
    try:
        import torch  # noqa: PLC0415

        torch.cuda.init()
        torch.zeros(1, device="cuda")  # a context, as a profile has one
        info["gpu"] = torch.cuda.get_device_name(0)
        info["torch"] = torch.__version__
        info["cuda"] = torch.version.cuda
    except Exception as exc:  # noqa: BLE001  (recorded)
        info["errors"].append(f"torch: {_error(exc)}")
    try:
        import pynvml  # noqa: PLC0415

        pynvml.nvmlInit()
        info["driver"] = pynvml.nvmlSystemGetDriverVersion()
        info.setdefault(
            "gpu", pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
        )
    except Exception as exc:  # noqa: BLE001
        info["errors"].append(f"nvml: {_error(exc)}")
    try:
        import importlib.metadata  # noqa: PLC0415

        info["cupti_python"] = importlib.metadata.version("cupti-python")
    except Exception as exc:  # noqa: BLE001
        info["errors"].append(f"cupti-python version: {_error(exc)}")


def _passes(host: Any, metrics: list[str]) -> dict[str, Any]:  # noqa: ANN401
    """The passes of ``metrics``' config image, or why none was made.

    ``accepted``: one pass (PM sampling takes them); ``refused``: the host API
    refused them (a ValueError from nsight-lab's host: unknown or not sampleable);
    ``failed``: the probe itself failed (any other error).
    """
    try:
        passes = int(host.passes(metrics))
    except ValueError as exc:
        return {
            "passes": None,
            "one_pass": False,
            "outcome": "refused",
            "error": _error(exc),
        }
    except Exception as exc:  # noqa: BLE001  (recorded)
        return {
            "passes": None,
            "one_pass": None,
            "outcome": "failed",
            "error": _error(exc),
        }
    return {
        "passes": passes,
        "one_pass": passes == 1,
        "outcome": "accepted" if passes == 1 else "several passes",
        "error": None,
    }


def _configure(metrics: list[str]) -> dict[str, Any]:
    """Whether ``pm_sampling.Collector.configure`` takes ``metrics`` (no kernel run)."""
    try:
        from cupti import pm_sampling  # noqa: PLC0415

        collector = pm_sampling.Collector(0)
        collector.enable()
    except Exception as exc:  # noqa: BLE001
        return {"configured": None, "error": f"enable: {_error(exc)}"}
    try:
        collector.configure(
            metrics=list(metrics),
            sampling_interval=100_000,
            trigger_mode=pm_sampling.TriggerMode.GPU_TIME_INTERVAL,
            hardware_buffer_size=64 << 20,
        )
    except Exception as exc:  # noqa: BLE001
        return {"configured": False, "error": _error(exc)}
    finally:
        with contextlib.suppress(Exception):
            collector.disable()
    return {"configured": True, "error": None}


def catalog(budget_s: float = BUDGET_S) -> dict[str, Any]:
    """Probe the chip of CUDA device 0: the catalog as a JSON-able dict."""
    clock = Clock(budget_s)
    info: dict[str, Any] = {
        "source": "benchmarks/pm_catalog.py (CUPTI profiler host API, PM sampling)",
        "gpu": None,
        "chip": None,
        "driver": None,
        "cupti_python": None,
        "python": platform.python_version(),
        "errors": [],
        "offered": None,
        "metrics": {},
        "sets": [],
    }
    _device(info)
    sets = requested_sets()
    try:
        from nsight_lab.backends.pm.host import CuptiMetricsHost, chip_name  # noqa: PLC0415

        info["chip"] = chip_name(0)
        host = CuptiMetricsHost(info["chip"])
    except Exception as exc:  # noqa: BLE001  (nothing more can be asked)
        info["errors"].append(f"chip: {_error(exc)}")
        info["sets"] = [
            {"name": name, "metrics": list(group), "outcome": "not probed"}
            for name, group in sets.items()
        ]
        info["elapsed_s"] = round(clock.spent(), 3)
        return info
    try:
        info["offered"] = host.names()
    except Exception as exc:  # noqa: BLE001
        info["errors"].append(f"offered metrics: {_error(exc)}")
    for metric in dict.fromkeys(m for group in sets.values() for m in group):
        if clock.over():
            info["metrics"][metric] = {"alone": None, "outcome": "skipped: time budget"}
            continue
        found = _passes(host, [metric])
        offered = info["offered"]
        info["metrics"][metric] = {
            "alone": found["one_pass"],
            "offered": None if offered is None else metric in offered,
            **{k: found[k] for k in ("passes", "outcome", "error")},
        }
    for name, group in sets.items():
        entry: dict[str, Any] = {"name": name, "metrics": list(group)}
        if clock.over():
            entry |= {"one_pass": None, "outcome": "skipped: time budget"}
        else:
            entry |= _passes(host, list(group))
            if entry["one_pass"] and not clock.over():
                entry["configure"] = _configure(list(group))
        info["sets"].append(entry)
    info["elapsed_s"] = round(clock.spent(), 3)
    return info


def main(argv: list[str] | None = None) -> int:
    """Write the catalog to the path given; exit 0 even where probes failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="where the JSON goes")
    parser.add_argument("--budget", type=float, default=BUDGET_S, help="probe seconds")
    args = parser.parse_args(argv)
    try:
        found = catalog(args.budget)
    except Exception:  # noqa: BLE001  (the file says what broke)
        found = {"errors": [traceback.format_exc()]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(found, indent=1, sort_keys=False) + "\n")
    accepted = sum(1 for m in found.get("metrics", {}).values() if m.get("alone"))
    print(
        f"{found.get('gpu')} ({found.get('chip')}): {len(found.get('offered') or [])} "
        f"metrics offered; {accepted} of {len(found.get('metrics', {}))} asked for "
        f"taken alone; {sum(1 for s in found.get('sets', []) if s.get('one_pass'))} of "
        f"{len(found.get('sets', []))} sets in one pass; {found.get('elapsed_s')} s "
        f"-> {args.out}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
