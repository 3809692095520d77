"""RunStream: gathered runs go to the sink and, with a progress snapshot, the hook."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.contract.collector import Availability, Output
from nsight_lab.distributed.assemble import RankRun
from nsight_lab.distributed.stream import RunStream
from nsight_lab.options import parse_options
from nsight_lab.plan import make_plan

if TYPE_CHECKING:
    from nsight_lab.contract.progress import Progress


def test_each_run_reaches_the_sink_and_the_hook_with_the_counts() -> None:
    plan = make_plan(
        parse_options("--backend cpu --configs 1,2 --runs 2"),
        {"cpu": Availability(ok=True, reason="test")},
    )
    sunk: list[list] = []
    shown: list[tuple[Progress, list]] = []
    out = Output(
        begin=lambda _device, _notes: 1,
        sink=sunk.append,
        progress=lambda progress, records: shown.append((progress, list(records))),
    )
    stream = RunStream(plan, out, 1)
    for config_index in (0, 1):
        for run_index in (0, 1):
            rank_run = RankRun(rank=0, device=-1, regions={"step": (0, 1000)})
            stream.run(config_index, run_index, [rank_run])
    records = stream.finish()
    assert [batch for _, batch in shown if batch] == sunk
    assert [r for batch in sunk for r in batch] == records
    counts = [
        (p.config_index, p.runs_done_in_config, p.runs_done_total) for p, _ in shown
    ]
    assert counts == [(0, 1, 1), (0, 2, 2), (1, 1, 3), (1, 2, 4), (1, 2, 4)]
    assert [p.status for p, _ in shown][-2:] == ["running", "completed"]
    assert shown[-1][1] == []  # completion brings no records
    assert shown[-1][0].runs_planned_total == 4
