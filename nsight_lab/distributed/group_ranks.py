"""The kernel's own process group: this rank times the cell, rank 0 stores it.

:class:`GroupRanks`: the kernel is rank 0 of a process group it initialised; the
cell runs here and on the other ranks (each in its own kernel or script, running the
same cell), each rank times itself and the runs are gathered over that group.
:func:`follow` is the same loop on the other ranks, which store nothing.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from nsight_lab.distributed.clock import open_clock
from nsight_lab.distributed.group import GroupComm
from nsight_lab.distributed.stream import RunStream, bindings, rank_job
from nsight_lab.distributed.worker import run_rank
from nsight_lab.errors import NsightLabError
from nsight_lab.regions import nsight_python_routed

if TYPE_CHECKING:
    from nsight_lab.contract.collector import Availability, CellCode, Collector, Output
    from nsight_lab.contract.records import RunRecord
    from nsight_lab.distributed.group import GroupInfo
    from nsight_lab.plan import Plan


class GroupRanks:
    """This kernel is rank 0 of an initialised process group (see module)."""

    def __init__(self, inner: Collector[Plan], group: GroupInfo) -> None:
        """Time ``inner``'s backend on this rank of ``group``."""
        self.id = inner.id
        self._inner = inner
        self.group = group

    def probe(self) -> Availability:
        """The backend's own probe."""
        return self._inner.probe()

    def collect(self, plan: Plan, cell: CellCode, out: Output) -> list[RunRecord]:
        """Run the cell on this rank; store each run gathered from the group.

        Raises:
            RankError: The cell failed on another rank.
            BaseException: What the cell raised here.
        """
        clock = open_clock(plan.backend, plan.options)
        try:
            note = (
                f"rank {self.group.rank} of the kernel's process group of "
                f"{self.group.world_size} ({self.group.backend}); each region's "
                "duration is its span over the ranks"
            )
            stream = RunStream(
                plan, out, out.begin(clock.device_name, [note, *clock.notes])
            )
            with nsight_python_routed():
                run_rank(
                    rank_job(plan, cell, self.group.world_size),
                    code=cell.code,
                    namespace=cell.namespace,
                    bindings=bindings(plan),
                    clock=clock,
                    comm=GroupComm(),
                    emit=stream.run,
                )
            return stream.finish()
        finally:
            clock.close()


def follow(plan: Plan, cell: CellCode, group: GroupInfo) -> None:
    """A rank other than 0 of the kernel's group: time the cell, store nothing.

    Raises:
        RankError: The cell failed on another rank.
        BaseException: What the cell raised here.
    """
    clock = open_clock(plan.backend, plan.options)
    try:
        with nsight_python_routed():
            run_rank(
                rank_job(plan, cell, group.world_size),
                code=cell.code,
                namespace=cell.namespace,
                bindings=bindings(plan),
                clock=clock,
                comm=GroupComm(),
            )
    finally:
        with contextlib.suppress(NsightLabError):
            clock.close()
