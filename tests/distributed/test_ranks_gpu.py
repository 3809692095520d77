"""Multi-rank regions on GPUs: NCCL ranks, CUDA events per device, NVML per GPU.

Marked ``gpu`` (skipped, with the reason, where no CUDA device is visible). One GPU
is enough for everything but the last test, which needs two and says so otherwise.
"""

from __future__ import annotations

import math
import textwrap
from typing import TYPE_CHECKING

import pytest

from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.distributed import metrics as m
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from pathlib import Path

    from IPython.core.interactiveshell import InteractiveShell

pytestmark = pytest.mark.gpu

CELL = """\
%%nsight --backend events --ranks {ranks} --runs 5 --warmup 1 --quiet --out gpu_ranks
import torch
import torch.distributed as dist
import nsight
rank = dist.get_rank()
x = torch.ones(16 * 1024 * 1024, device=f"cuda:{{rank}}")  # 64 MB
a = torch.randn(2048, 2048, device=f"cuda:{{rank}}", dtype=torch.bfloat16)
with nsight.annotate("matmul"):
    a @ a
with nsight.annotate("all_reduce"):
    dist.all_reduce(x)
"""


def _latest():
    with RunStore() as store:
        session = store.list_sessions(limit=1)[0]
        return session, store.runs(session.id)


def test_one_nccl_rank_on_one_gpu(ip: InteractiveShell) -> None:
    result = ip.run_cell(CELL.format(ranks=1))
    assert result.error_in_exec is None, result.error_in_exec
    session, records = _latest()
    assert session.status == "completed"
    assert "(NCCL, one GPU per rank)" in session.notes[0]
    assert [r.annotation for r in records] == ["matmul", "all_reduce"] * 5
    for record in records:
        assert m.per_rank(record, m.DEVICE) == {0: 0.0}
        # One rank: the span is that rank's own duration, and it is a GPU time.
        assert record.duration_ns == record.metrics[m.rank_metric(m.DURATION, 0)]
        assert 0 < record.duration_ns < 1e9
        assert record.metrics[m.STRAGGLER] == 0
        # NVML per GPU: the rank's own clock and temperature.
        assert record.metrics[m.rank_metric(m.SM_CLOCK, 0)] > 0
        assert record.metrics[m.rank_metric(m.TEMPERATURE, 0)] > 0
    reduces = [r for r in records if r.annotation == "all_reduce"]
    assert all(r.metrics[m.COMM_BYTES] == 0.0 for r in reduces)  # a ring of one
    frame = ip.user_ns["gpu_ranks"]
    rows = frame[frame["Metric"] == TIME_METRIC]
    assert list(rows["Rank"]) == [-1, 0, -1, 0]
    assert set(rows[rows["Rank"] == 0]["Device"]) == {"cuda:0"}
    assert (rows[rows["Rank"] == 0]["SMClockMHz"] > 0).all()


def test_more_ranks_than_gpus_is_one_line(ip: InteractiveShell) -> None:
    import torch

    count = torch.cuda.device_count()
    result = ip.run_cell(f"%%nsight --backend events --ranks {count + 1}\npass\n")
    error = str(result.error_in_exec)
    assert error.startswith(f"--ranks {count + 1}: {count} CUDA GPU"), error
    assert "\n" not in error
    with RunStore() as store:
        assert store.list_sessions(limit=1) == []


def test_an_nccl_group_of_one_in_this_kernel(
    ip: InteractiveShell, tmp_path: Path
) -> None:
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(0)
    dist.init_process_group(
        "nccl", init_method=f"file://{tmp_path / 'rdv'}", rank=0, world_size=1
    )
    try:
        result = ip.run_cell(
            textwrap.dedent(
                """\
                %%nsight --backend events --runs 4 --warmup 1 --quiet --out grouped
                import torch, torch.distributed as dist, nsight
                y = torch.ones(1024 * 1024, device="cuda")
                with nsight.annotate("all_reduce"):
                    dist.all_reduce(y)
                """
            )
        )
    finally:
        dist.destroy_process_group()
    assert result.error_in_exec is None, result.error_in_exec
    session, records = _latest()
    assert "process group of 1 (nccl)" in session.notes[0]
    assert len(records) == 4
    assert all(m.ranks_of(r) == 1 for r in records)
    assert all(not math.isnan(r.duration_ns) for r in records)


def test_two_nccl_ranks_on_two_gpus(ip: InteractiveShell) -> None:
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs 2 GPUs, {torch.cuda.device_count()} visible")
    result = ip.run_cell(CELL.format(ranks=2))
    assert result.error_in_exec is None, result.error_in_exec
    _, records = _latest()
    for record in records:
        durations = m.per_rank(record, m.DURATION)
        assert sorted(durations) == [0, 1]
        assert record.duration_ns >= max(durations.values())
        assert m.per_rank(record, m.DEVICE) == {0: 0.0, 1: 1.0}
        assert set(m.per_rank(record, m.SM_CLOCK)) == {0, 1}
    reduces = [r for r in records if r.annotation == "all_reduce"]
    assert all(r.metrics[m.COMM_BYTES] == 64 * 1024 * 1024 for r in reduces)
