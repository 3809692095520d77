"""What every rank runs: the cell per config and run, timed, gathered each run.

:func:`run_rank` is the loop of one rank, the same in a process spawned by
``--ranks`` (:func:`spawn_main`, started by ``torch.multiprocessing``) and in a kernel
that is itself a rank of a process group. Per config it runs ``--warmup`` untimed
runs (the first one also counts the collectives' modelled bytes,
:mod:`nsight_lab.distributed.traffic`, so no timed run pays for counting) and then
``--runs`` timed ones. Each run:

1. the rank waits for thermal headroom, then for every rank (a barrier), so the
   ranks start the run together and a run's span is not the previous run's skew;
2. the cell runs with its regions routed through the region rules
   (:class:`~nsight_lab.regions.RegionTracker`) to the rank's clock
   (:mod:`nsight_lab.distributed.clock`);
3. every rank's :class:`~nsight_lab.distributed.assemble.RankRun` is all-gathered,
   so that a cell failing on one rank stops every rank after the same run (rank 0
   hands the run on to be stored; a failing rank re-raises its own exception, the
   others raise :class:`RankError` naming it).

Each run waits for its device before the gather: runs do not overlap on the GPU as
the single-process events backend lets them.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import importlib.util
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from nsight_lab.backends.ncu.shipping import unship
from nsight_lab.distributed.clock import open_clock
from nsight_lab.distributed.group import GroupComm
from nsight_lab.distributed.traffic import Traffic, counting
from nsight_lab.errors import MeasurementError
from nsight_lab.regions import RegionTracker, listening

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import CodeType

    from nsight_lab.distributed.assemble import RankRun
    from nsight_lab.distributed.clock import RankClock
    from nsight_lab.options import ProfileOptions

EXIT_FAILED = 3
"""Exit status of a spawned rank whose profile failed (the reason is on the queue)."""


class RankError(MeasurementError):
    """The cell failed on a rank; the message names the rank and the error."""


class Comm(Protocol):
    """What the loop asks of the process group (:class:`~.group.GroupComm`)."""

    rank: int
    world_size: int

    def barrier(self) -> None:
        """Wait for every rank."""

    def gather(self, run: RankRun) -> list[RankRun]:
        """Every rank's run, in rank order."""


@dataclass(frozen=True)
class RankJob:
    """What every rank runs; picklable (it is sent to the spawned ranks)."""

    source: str
    """The cell as plain Python."""
    filename: str
    configs: int
    """How many configs; their values come with the shipped namespace."""
    runs: int
    warmup: int
    backend: str
    options: ProfileOptions
    world_size: int
    prepare: Callable[[], None] | None = None
    """What a spawned rank calls first (the cell's ``CellCode.prepare``: the magic's
    makes ``import nsight`` nsight-lab's stand-in)."""


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def run_rank(  # noqa: PLR0913  (the rank's collaborators, keyword-only)
    job: RankJob,
    *,
    code: CodeType,
    namespace: dict[str, Any],
    bindings: list[dict[str, Any]],
    clock: RankClock,
    comm: Comm,
    emit: Callable[[int, int, list[RankRun]], None] | None = None,
) -> None:
    """Run every config of ``job`` on this rank; hand the gathered runs to ``emit``.

    Args:
        job: Configs, runs, warm-up, backend.
        code: The compiled cell.
        namespace: Where the cell runs (the kernel's, or the shipped variables).
        bindings: What each config binds in the cell.
        clock: This rank's clock.
        comm: The process group.
        emit: Called on every rank that gives it with ``(config_index, run_index,
            runs of every rank)`` after each measured run.

    Raises:
        RankError: The cell failed on another rank.
        BaseException: What the cell raised on this rank (after every rank knew).
    """
    counts = importable("torch")
    for ci in range(job.configs):
        context: dict[str, Any] = {
            "namespace": namespace,
            "config": bindings[ci],
            "clock": clock,
            "comm": comm,
            "traffic": Traffic(),
        }
        for w in range(job.warmup):
            _one_run(code, count=counts and w == 0, **context)
        for ri in range(job.runs):
            runs = _one_run(code, count=False, **context)
            if emit is not None:
                emit(ci, ri, runs)


def importable(module: str) -> bool:
    """Whether ``module`` can be imported here (PyTorch, for the traffic count)."""
    return module in sys.modules or importlib.util.find_spec(module) is not None


def _one_run(  # noqa: PLR0913  (one run's collaborators)
    code: CodeType,
    *,
    namespace: dict[str, Any],
    config: dict[str, Any],
    clock: RankClock,
    comm: Comm,
    traffic: Any,  # noqa: ANN401  (a traffic.Traffic)
    count: bool,
) -> list[RankRun]:
    waited = clock.thermal_wait()
    comm.barrier()
    tracker = RegionTracker(clock)
    error: BaseException | None = None
    clock.begin_run()
    try:
        counter = (
            counting(traffic, clock.open_region, comm.world_size)
            if count
            else contextlib.nullcontext()
        )
        with listening(tracker), counter:
            namespace.update(config)
            exec(code, namespace)  # noqa: S102  (running the user's cell is the point)
        tracker.check_closed()
    except Exception as exc:  # noqa: BLE001  (every rank must hear of it first)
        error = exc
    run = dataclasses.replace(
        clock.end_run(comm.rank, tuple(sorted(tracker.failed))),
        bytes_sent=dict(traffic.bytes_sent),
        collectives=dict(traffic.calls),
        thermal_wait_s=waited,
        error=None if error is None else _one_line(error),
    )
    runs = comm.gather(run)
    if error is not None:
        raise error
    failed = next((r for r in runs if r.error is not None), None)
    if failed is not None:
        msg = f"rank {failed.rank} of {len(runs)}: the cell raised {failed.error}"
        raise RankError(msg)
    return runs


def spawn_main(  # torch.multiprocessing passes these positionally
    rank: int,
    job: RankJob,
    shipped: bytes,
    init_method: str,
    queue: Any,  # noqa: ANN401  (a torch.multiprocessing SimpleQueue)
) -> None:
    """One rank spawned by ``--ranks`` (``torch.multiprocessing.start_processes``).

    Joins the process group (NCCL on this rank's GPU for ``events``, gloo for
    ``cpu``), rebuilds the cell's shipped variables (GPU tensors on this rank's
    device), runs :func:`run_rank` and, on rank 0, puts on ``queue``:
    ``("ready", device_name, notes)`` once its clock is open, ``("run", config_index,
    run_index, runs)`` after each measured run and ``("done",)``. A rank that fails
    puts ``("error", message)`` (rank 0 for a failure every rank heard of) and exits
    with :data:`EXIT_FAILED`.

    Raises:
        SystemExit: The profile failed on some rank.
    """
    import torch.distributed as dist  # noqa: PLC0415  (torch is optional)

    gpu = job.backend != "cpu"
    clock: RankClock | None = None
    try:
        _join(rank, job, init_method)  # job.prepare first: before the unshipping
        clock = open_clock(job.backend, job.options)
        namespace, bindings = _rank_namespace(shipped, f"cuda:{rank}" if gpu else None)
        if rank == 0:
            queue.put(("ready", clock.device_name, list(clock.notes)))

        def emit(ci: int, ri: int, runs: list[RankRun]) -> None:
            queue.put(("run", ci, ri, runs))

        comm = GroupComm()
        run_rank(
            job,
            code=compile(job.source, job.filename, "exec"),
            namespace=namespace,
            bindings=bindings,
            clock=clock,
            comm=comm,
            emit=emit if rank == 0 else None,
        )
        comm.barrier()  # leave together: a peer torn down early can abort the other
        if rank == 0:
            queue.put(("done",))
    except RankError as exc:
        if rank == 0:
            queue.put(("error", str(exc)))
        raise SystemExit(EXIT_FAILED) from exc
    except Exception as exc:
        queue.put(("error", f"rank {rank} of {job.world_size}: {_one_line(exc)}"))
        raise SystemExit(EXIT_FAILED) from exc
    finally:
        if clock is not None:
            clock.close()
        if dist.is_initialized():
            dist.destroy_process_group()


def _join(rank: int, job: RankJob, init_method: str) -> None:
    """Call ``job.prepare``, then join the group (NCCL on this rank's GPU, or gloo)."""
    import torch  # noqa: PLC0415  (torch is optional)
    import torch.distributed as dist  # noqa: PLC0415  (torch is optional)

    if job.prepare is not None:
        job.prepare()

    gpu = job.backend != "cpu"
    if gpu:
        torch.cuda.set_device(rank)
    dist.init_process_group(
        "nccl" if gpu else "gloo",
        init_method=init_method,
        rank=rank,
        world_size=job.world_size,
    )


def _rank_namespace(
    shipped: bytes, device: str | None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The cell's namespace rebuilt on this rank (tensors on ``device``), bindings."""
    shipped_ns = unship(shipped, device)
    bindings = shipped_ns.pop(CONFIGS_NAME)
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    namespace.update(shipped_ns)
    return namespace, bindings


CONFIGS_NAME = "__nsight_lab_configs__"
"""The shipped namespace's entry holding each config's bindings."""
