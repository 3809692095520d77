"""The process group a multi-rank profile runs in: detected, checked, talked to.

:func:`initialised_group` finds a ``torch.distributed`` process group the kernel
already initialised (a notebook started under ``torchrun``, or one that called
``init_process_group`` itself); then each ``%%nsight`` cell is timed on this rank
and gathered over that group. :class:`GroupComm` is the little a profile asks of a
group: a barrier before each run and an all-gather of each run's stamps, both
``torch.distributed`` collectives (gloo or NCCL). :func:`check_gpus` refuses more
ranks than GPUs before any process starts.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nsight_lab.errors import PlanError

if TYPE_CHECKING:
    from nsight_lab.distributed.assemble import RankRun


@dataclass(frozen=True)
class GroupInfo:
    """This process's place in an initialised process group."""

    rank: int
    world_size: int
    backend: str
    """``gloo``, ``nccl``, ..."""


def initialised_group() -> GroupInfo | None:
    """The default process group this process initialised, if any.

    Cheap, and imports nothing: a kernel that never imported ``torch.distributed``
    has no group.
    """
    dist: Any = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return GroupInfo(
        rank=int(dist.get_rank()),
        world_size=int(dist.get_world_size()),
        backend=str(dist.get_backend()),
    )


def check_gpus(ranks: int, gpus: int) -> None:
    """Refuse ``--ranks`` beyond the GPUs visible (one GPU per rank under NCCL).

    Raises:
        PlanError: ``ranks`` exceeds ``gpus``.
    """
    if ranks > gpus:
        msg = (
            f"--ranks {ranks}: {gpus} CUDA GPU{'' if gpus == 1 else 's'} visible here "
            f"and each rank takes one; give --ranks {max(gpus, 1)} or fewer, or "
            "--backend cpu to run the ranks as gloo processes"
        )
        raise PlanError(msg)


class GroupComm:
    """The default process group's barrier and all-gather, for one rank."""

    def __init__(self) -> None:
        """Use the default group (initialised before)."""
        import torch.distributed as dist  # noqa: PLC0415  (torch is optional)

        self._dist: Any = dist
        self._nccl = str(dist.get_backend()) == "nccl"
        self.rank = int(dist.get_rank())
        self.world_size = int(dist.get_world_size())

    def barrier(self) -> None:
        """Wait until every rank is here (on NCCL: on this rank's device)."""
        if self._nccl:
            import torch  # noqa: PLC0415  (torch is optional)

            self._dist.barrier(device_ids=[torch.cuda.current_device()])
        else:
            self._dist.barrier()

    def gather(self, run: RankRun) -> list[RankRun]:
        """Every rank's ``run``, in rank order, on every rank."""
        out: list[Any] = [None] * self.world_size
        self._dist.all_gather_object(out, run)
        return list(out)
