"""The ``ncu`` collector: hardware counters, the cell run under Nsight Compute.

Each config runs in a child Python under the installed ``ncu``, NVTX-filtered to
nsight-lab's regions, with the cell's free variables shipped by cloudpickle
(:mod:`nsight_lab.backends.ncu.isolate`); ncu itself applies ``--cache-control`` and
``--clock-control``, and there is no per-run telemetry. The records of a config are
handed over once its report is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.backends.ncu.isolate import run_isolated, ship_cell_variables
from nsight_lab.backends.ncu.probe import probe_ncu
from nsight_lab.errors import NsightLabError
from nsight_lab.gpu.stack import nvml_devices

if TYPE_CHECKING:
    from nsight_lab.contract.collector import Availability, CellCode, Output
    from nsight_lab.contract.records import RunRecord
    from nsight_lab.plan import Plan


class NcuCollector:
    """Nsight Compute counters, collected by running the cell under ``ncu``."""

    id = "ncu"

    def probe(self) -> Availability:
        """Say whether ncu, ``ncu_report`` and ``nvtx`` are here; never raises."""
        return probe_ncu()

    def collect(self, plan: Plan, cell: CellCode, out: Output) -> list[RunRecord]:
        """Run every config under ncu in a child process; hand over each config's runs.

        See :meth:`nsight_lab.contract.collector.Collector.collect` and
        :func:`nsight_lab.backends.ncu.isolate.run_isolated` (which lists the errors:
        no ncu, counter permission, unknown metrics, the cell failing in the child, a
        variable that cannot be shipped, no kernels in the regions).
        """
        options = plan.options
        # What cannot reach the child is named before a session opens or ncu starts.
        shipped = ship_cell_variables(plan, cell.python, cell.namespace)
        note = (
            f"isolated under ncu: --cache-control {options.cache_control}, "
            f"--clock-control {options.clock_control} passed to ncu"
        )
        session_id = out.begin(gpu_name(), [note])
        return run_isolated(
            plan,
            cell.python,  # plain Python: the child has no IPython
            cell.namespace,
            session_id,
            out.sink,
            on_progress=out.progress,
            shipped=shipped,
            prepare=cell.prepare,
        )


def gpu_name() -> str | None:
    """The first GPU's name through NVML (this process opens no CUDA context)."""
    try:
        devices = nvml_devices()
    except NsightLabError:
        return None
    return devices[0].name if devices else None
