"""Multi-rank profiles: a cell's regions timed on every rank of a process group.

``%%nsight --ranks N`` runs the cell in N ranks started by ``torch.multiprocessing``
(NCCL on GPUs, one each, with the ``events`` backend; gloo processes with ``cpu``);
a kernel that initialised a ``torch.distributed`` process group itself is timed on
its rank and gathered over that group. Each run's regions become one record each,
whose duration is the region's span over the ranks, with every rank's duration,
start, device and telemetry, the straggler and the collectives' modelled bytes
beside it (:mod:`.metrics`). One job per module:

* :mod:`.group`: find an initialised group, check ranks against GPUs, its barrier
  and all-gather;
* :mod:`.clock`: a rank's stamps on the host's common clock (host timer, or CUDA
  events placed on it through a reference event);
* :mod:`.traffic`: bytes each collective moves, modelled (ring algorithms);
* :mod:`.worker`: the loop every rank runs, and the spawned rank's entry point;
* :mod:`.assemble`: one run of every rank -> records (span, straggler);
* :mod:`.stream`: gathered runs -> records for the store, a rank's job;
* :mod:`.collector`: the spawned ranks' collector (``--ranks N``);
* :mod:`.group_ranks`: the kernel's own group's collector and the other ranks'
  :func:`~.group_ranks.follow`;
* the per-rank rows of the results and the per-rank charts are the analysis
  layer's: :mod:`nsight_lab.results.ranks` and :mod:`nsight_lab.figures.ranks`.

The magic asks :func:`rank_collector` for the collector to run and :func:`follows`
whether this kernel is a rank that only follows rank 0. Importing this package
imports neither PyTorch nor a backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.contract.registry import backend_entry
from nsight_lab.distributed.group import initialised_group

if TYPE_CHECKING:
    from nsight_lab.contract.collector import CellCode, Collector
    from nsight_lab.distributed.group import GroupInfo
    from nsight_lab.plan import Plan

__all__ = ["follows", "rank_collector"]


def _group(plan: Plan) -> GroupInfo | None:
    """The kernel's process group, where this plan is timed over it."""
    if plan.options.ranks is not None or not backend_entry(plan.backend).ranks:
        return None
    return initialised_group()


def rank_collector(plan: Plan, collector: Collector[Plan]) -> Collector[Plan]:
    """The collector that runs ``plan``: ``collector`` itself, or over ranks.

    ``--ranks N``: N spawned ranks. Else, where the kernel initialised a process
    group and the backend can take ranks: this rank, gathered over the group.
    """
    # Local: `import nsight_lab.distributed` stays light (results and figures import
    # its metrics); the collectors load the backends.
    from nsight_lab.distributed.collector import SpawnedRanks  # noqa: PLC0415
    from nsight_lab.distributed.group_ranks import GroupRanks  # noqa: PLC0415

    if plan.options.ranks is not None:
        return SpawnedRanks(collector, plan.options.ranks)
    group = _group(plan)
    return GroupRanks(collector, group) if group is not None else collector


def follows(plan: Plan, cell: CellCode) -> bool:
    """Time ``cell`` as a rank other than 0 of the kernel's group; store nothing.

    Returns:
        Whether it did (then rank 0 stores the session, and the magic shows nothing).

    Raises:
        RankError: The cell failed on another rank.
        BaseException: What the cell raised here.
    """
    group = _group(plan)
    if group is None or group.rank == 0:
        return False
    from nsight_lab.distributed.group_ranks import follow  # noqa: PLC0415  (as above)

    follow(plan, cell, group)
    return True
