"""Finding the kernel's process group, and ranks against GPUs."""

from __future__ import annotations

import pytest

from nsight_lab.distributed.group import GroupInfo, check_gpus, initialised_group
from nsight_lab.errors import PlanError


def test_no_group_without_an_initialised_one(tmp_path):
    assert initialised_group() is None
    dist = pytest.importorskip("torch.distributed", reason="groups are torch's")
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'rdv'}", rank=0, world_size=1
    )
    try:
        assert initialised_group() == GroupInfo(rank=0, world_size=1, backend="gloo")
    finally:
        dist.destroy_process_group()
    assert initialised_group() is None


def test_more_ranks_than_gpus_is_one_line():
    check_gpus(2, 2)
    with pytest.raises(PlanError) as caught:
        check_gpus(3, 2)
    assert str(caught.value) == (
        "--ranks 3: 2 CUDA GPUs visible here and each rank takes one; give --ranks 2 "
        "or fewer, or --backend cpu to run the ranks as gloo processes"
    )
    with pytest.raises(PlanError, match="1 CUDA GPU visible here"):
        check_gpus(2, 1)
