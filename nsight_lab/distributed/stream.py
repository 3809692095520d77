"""What both multi-rank collectors share: gathered runs -> records, a rank's job.

:class:`RunStream` assembles each run gathered from the ranks into records
(:func:`~nsight_lab.distributed.assemble.assemble`), hands them to the store writer
and reports the progress, as every backend does; :func:`rank_job` is the job every
rank runs (:mod:`.worker`) and :func:`bindings` the configs' values it binds.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nsight_lab.contract.progress import ProgressCounter
from nsight_lab.distributed.assemble import assemble
from nsight_lab.distributed.worker import RankJob

if TYPE_CHECKING:
    from nsight_lab.contract.collector import CellCode, Output
    from nsight_lab.contract.records import RunRecord
    from nsight_lab.distributed.assemble import RankRun
    from nsight_lab.plan import Plan


class RunStream:
    """Turns gathered runs into records for the sink, with the progress."""

    def __init__(self, plan: Plan, out: Output, session_id: int) -> None:
        """Stream ``plan``'s runs of session ``session_id`` to ``out``."""
        self.plan = plan
        self.out = out
        self.session_id = session_id
        self.records: list[RunRecord] = []
        self.counter = ProgressCounter(
            len(plan.configs), plan.options.runs, out.progress
        )

    def run(self, config_index: int, run_index: int, runs: list[RankRun]) -> None:
        """One run gathered from every rank: its records to the sink, the progress."""
        batch = assemble(
            runs,
            session_id=self.session_id,
            config_index=config_index,
            config=self.plan.configs[config_index],
            run_index=run_index,
            backend=self.plan.backend,
        )
        self.out.sink(batch)
        self.records.extend(batch)
        if config_index != self.counter.config_index:
            self.counter.start_config(config_index)
        self.counter.runs_done()
        self.counter.emit(batch)

    def finish(self) -> list[RunRecord]:
        """Report completion; every record streamed."""
        self.counter.complete()
        self.counter.emit()
        return self.records


def rank_job(plan: Plan, cell: CellCode, world_size: int) -> RankJob:
    """The job every rank of ``world_size`` runs: the cell, its configs and runs."""
    return RankJob(
        source=cell.python,
        filename="<nsight-lab cell>",
        configs=len(plan.configs),
        runs=plan.options.runs,
        warmup=plan.options.warmup,
        backend=plan.backend,
        options=replace(plan.options, combine_fn=None),  # not used by ranks; picklable
        world_size=world_size,
        prepare=cell.prepare,
    )


def bindings(plan: Plan) -> list[dict[str, Any]]:
    """The values each config binds, by config index."""
    return [dict(plan.bound(ci)) for ci in range(len(plan.configs))]
