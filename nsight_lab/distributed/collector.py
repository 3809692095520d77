"""The collector of ``%%nsight --ranks N``: N ranks spawned by PyTorch's launcher.

:class:`SpawnedRanks` (``%%nsight --ranks N``) starts N ranks with PyTorch's own
launcher, ``torch.multiprocessing.start_processes`` (spawn), which join one process
group over a file rendezvous (NCCL on the events backend, one GPU per rank; gloo on
the cpu backend). The cell's free variables (and the configs' values) are shipped
with the isolated ncu path's shipping (:mod:`nsight_lab.backends.ncu.shipping`),
GPU tensors re-created on each rank's device. Rank 0 puts each measured run's
gathered :class:`~nsight_lab.distributed.assemble.RankRun` on a
``torch.multiprocessing`` queue; this process (the notebook) assembles the records
and hands them to the store writer as each run arrives, as every backend does.

:class:`~nsight_lab.distributed.group_ranks.GroupRanks` times the kernel's own
process group instead. Either way a session is begun only once rank 0's clock is
open, and a failure on any rank stops every rank; runs finished before it are kept.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import sys
import tempfile
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsight_lab.backends.ncu.shipping import ShippingError, free_variables, ship
from nsight_lab.distributed.group import check_gpus
from nsight_lab.distributed.stream import RunStream, bindings, rank_job
from nsight_lab.distributed.worker import CONFIGS_NAME, importable, spawn_main
from nsight_lab.errors import BackendUnavailableError, MeasurementError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from nsight_lab.contract.collector import (
        Availability,
        CellCode,
        Collector,
        Output,
    )
    from nsight_lab.contract.records import RunRecord
    from nsight_lab.plan import Plan

POLL_S = 0.05
"""How often the parent looks at the ranks and their queue while they run."""
STOP_S = 10.0
"""How long a rank may take to stop once asked to, before it is killed."""

logger = logging.getLogger(__name__)


class SpawnedRanks:
    """``--ranks N``: N ranks started by ``torch.multiprocessing`` (see module)."""

    def __init__(self, inner: Collector[Plan], ranks: int) -> None:
        """Run ``inner``'s backend (``cpu`` or ``events``) in ``ranks`` processes."""
        self.id = inner.id
        self._inner = inner
        self.ranks = ranks

    def probe(self) -> Availability:
        """The backend's own probe."""
        return self._inner.probe()

    def collect(self, plan: Plan, cell: CellCode, out: Output) -> list[RunRecord]:
        """Spawn the ranks; store each run as rank 0 sends it.

        See :meth:`nsight_lab.contract.collector.Collector.collect`.

        Raises:
            PlanError: More ranks than visible GPUs (events backend).
            ShippingError: A free variable of the cell cannot be pickled.
            MeasurementError: A rank failed (the message names it and its error);
                before the first run, no session is left behind.
        """
        _require_distributed(self.ranks)
        if plan.backend != "cpu":
            import torch  # noqa: PLC0415  (torch is optional)

            check_gpus(self.ranks, int(torch.cuda.device_count()))
        params = set(plan.param_names)
        names = [
            n for n in free_variables(cell.python, cell.namespace) if n not in params
        ]
        try:
            shipped = ship(
                [*names, CONFIGS_NAME],
                {**cell.namespace, CONFIGS_NAME: bindings(plan)},
            )
        except ShippingError as exc:
            raise ShippingError(_for_ranks(str(exc), self.ranks)) from exc
        job = rank_job(plan, cell, self.ranks)
        with tempfile.TemporaryDirectory(prefix="nsight-lab-ranks-") as tmp:
            rendezvous = f"file://{Path(tmp) / 'rendezvous'}"
            mp = _torch_mp()
            queue = mp.get_context("spawn").SimpleQueue()
            with _bare_main():
                context = mp.start_processes(
                    spawn_main,
                    args=(job, shipped, rendezvous, queue),
                    nprocs=self.ranks,
                    join=False,
                    start_method="spawn",
                )
            try:
                return self._follow(context, queue, plan, out)
            finally:
                _stop(context)

    def _follow(
        self,
        context: Any,  # noqa: ANN401  (a torch.multiprocessing ProcessContext)
        queue: Any,  # noqa: ANN401
        plan: Plan,
        out: Output,
    ) -> list[RunRecord]:
        mp = _torch_mp()
        group = "NCCL, one GPU per rank" if plan.backend != "cpu" else "gloo"
        note = (
            f"{self.ranks} ranks started by torch.multiprocessing ({group}); "
            "each region's duration is its span over the ranks"
        )
        inbox = _Inbox(queue, plan, out, note)
        while True:
            try:
                finished = context.join(timeout=POLL_S)
            except (mp.ProcessRaisedException, mp.ProcessExitedException) as exc:
                inbox.take()
                if inbox.complete():
                    # Every run arrived and rank 0 said so: a rank that dies after
                    # that (gloo's teardown aborted a rank once in a CI run) lost
                    # nothing, so the profile stands; the log says what happened.
                    logger.warning(
                        "--ranks %d: %s after the last run", self.ranks, _last_line(exc)
                    )
                    break
                reason = _for_ranks(
                    inbox.errors[0] if inbox.errors else _last_line(exc), self.ranks
                )
                when = "" if inbox.stream is not None else " before the first run"
                msg = f"--ranks {self.ranks}: the profile stopped{when}: {reason}"
                raise MeasurementError(msg) from exc
            inbox.take()
            if finished:
                break
        if inbox.stream is None:  # pragma: no cover - rank 0 always says it is ready
            msg = f"--ranks {self.ranks}: the ranks ended without measuring"
            raise MeasurementError(msg)
        return inbox.stream.finish()


class _Inbox:
    """What rank 0 puts on the queue: the session, its runs, errors, the end."""

    def __init__(self, queue: Any, plan: Plan, out: Output, note: str) -> None:  # noqa: ANN401
        self._queue = queue
        self._plan = plan
        self._out = out
        self._note = note
        self.stream: RunStream | None = None
        self.errors: list[str] = []
        self.done = False

    def take(self) -> None:
        """Handle every message waiting."""
        while not self._queue.empty():
            message = self._queue.get()
            kind = message[0]
            if kind == "done":
                self.done = True
            elif kind == "ready":
                session_id = self._out.begin(message[1], [self._note, *message[2]])
                self.stream = RunStream(self._plan, self._out, session_id)
            elif kind == "run" and self.stream is not None:
                self.stream.run(message[1], message[2], message[3])
            elif kind == "error":
                self.errors.append(str(message[1]))

    def complete(self) -> bool:
        """Every run arrived and no rank failed."""
        return self.done and not self.errors and self.stream is not None


@contextlib.contextmanager
def _bare_main() -> Iterator[None]:
    """Start processes without this process's ``__main__``.

    A spawned process first runs the parent's main module again (by path or name):
    a script's, a test runner's. The ranks need nothing from it (their entry point
    is importable and the cell's functions are shipped by value), so for as long as
    they start, ``__main__`` is an empty module.
    """
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def _require_distributed(ranks: int) -> None:
    """Refuse ``--ranks`` where PyTorch or ``torch.distributed`` is missing.

    Raises:
        BackendUnavailableError: Not installed, or a build without distributed.
    """
    why = None
    if not importable("torch"):
        why = "PyTorch is not installed; install torch"
    else:
        import torch.distributed as dist  # noqa: PLC0415  (torch is optional)

        if not dist.is_available():
            why = "this PyTorch build has no torch.distributed; install one that has"
    if why is not None:
        msg = f"--ranks {ranks} starts its ranks with torch.distributed: {why}"
        raise BackendUnavailableError(msg)


def _for_ranks(message: str, ranks: int) -> str:
    """A shipping error's words, said of the ranks (they are the ncu path's)."""
    return message.replace("the ncu child process", f"the {ranks} ranks").replace(
        "or pass --backend events", "or drop --ranks"
    )


def _torch_mp() -> Any:  # noqa: ANN401  (the module: partly untyped)
    """``torch.multiprocessing``: PyTorch's launcher and its exceptions."""
    return importlib.import_module("torch.multiprocessing")


def _last_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


def _stop(context: Any) -> None:  # noqa: ANN401  (a torch.multiprocessing ProcessContext)
    """End every rank still running (after a failure or Ctrl-C), then reap them."""
    for process in context.processes:
        if process.is_alive():
            process.terminate()
    for process in context.processes:
        process.join(STOP_S)
        if process.is_alive():
            process.kill()
            process.join()
