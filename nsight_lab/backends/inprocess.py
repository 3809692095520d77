"""The collector of every backend that measures in this process: cpu, events, cupti.

Such a backend only says how to measure one run (:meth:`InProcessCollector.open`
gives a :class:`~nsight_lab.contract.collector.Measurement`); this base class turns
that into a :class:`~nsight_lab.contract.collector.Collector`: it opens the
measurement, opens the
session with the device and notes the measurement found, drives the cell through the
:class:`~nsight_lab.runner.Runner` (region rules, warm-up, ``--target-rsd``, records to
the sink as runs finish) and closes the measurement (unlocking clocks) however the
profile ends.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

from nsight_lab.regions import nsight_python_routed
from nsight_lab.roofline.workmodel import count_work
from nsight_lab.runner import NOTIFY_S, Runner

if TYPE_CHECKING:
    from collections.abc import Callable

    from nsight_lab.contract.collector import (
        Availability,
        CellCode,
        Measurement,
        Output,
        WorkModel,
    )
    from nsight_lab.contract.records import RunRecord
    from nsight_lab.options import ProfileOptions
    from nsight_lab.plan import Plan


class InProcessCollector(ABC):
    """A backend that times the cell in this process, run by run.

    Subclasses set :attr:`id` and implement :meth:`probe` and :meth:`open`; they are
    about measuring, and leave running the plan to :meth:`collect`.
    """

    id: ClassVar[str]

    @abstractmethod
    def probe(self) -> Availability:
        """Say whether this backend can run here; never raises."""

    @abstractmethod
    def open(self, options: ProfileOptions) -> Measurement:
        """Start measuring a profile with ``options``.

        Raises:
            BackendUnavailableError: The backend cannot run here.
        """

    def measure(self, plan: Plan) -> Measurement:
        """Open the measurement of ``plan``: :meth:`open` with its options.

        A backend that needs more of the plan (``pm``: the probe's verdict on the
        metrics) overrides it.

        Raises:
            BackendUnavailableError: The backend cannot run here.
        """
        return self.open(plan.options)

    def collect(self, plan: Plan, cell: CellCode, out: Output) -> list[RunRecord]:
        """Open a measurement, run the plan through the runner, close it.

        See :meth:`nsight_lab.contract.collector.Collector.collect`.

        Raises:
            BackendUnavailableError: :meth:`open` refused (no session was begun).
            RegionError: The cell broke a region rule.
            CellError: ``--normalize-against`` names a region the cell lacks.
            BaseException: Whatever the cell raised, after the finished runs were
                handed to ``out.sink``.
        """
        measurement = self.measure(plan)
        said: list[str] = []
        try:
            said = list(measurement.notes)
            session_id = out.begin(measurement.device_name, said)
            runner = Runner(
                plan,
                measurement,
                session_id,
                out.sink,
                on_progress=out.progress,
                model_work=work_model(plan, cell),
                notify_s=NOTIFY_S,
                between_runs=out.between_runs,
            )
            with nsight_python_routed():
                return runner.run(cell.run)
        finally:
            measurement.close()  # undoes clock locks even when the cell failed
            if out.note is not None:  # what it learned while running (pm's interval)
                for note in measurement.notes:
                    if note not in said:
                        with contextlib.suppress(Exception):  # never hide the cell's
                            out.note(note)


def work_model(
    plan: Plan, cell: CellCode | None = None
) -> Callable[[Callable[[], None]], WorkModel] | None:
    """The FLOP/byte counter to run once per config, if it is worth a pass.

    Counted for ``--derive tflops|gbps``, and for the roofline whenever a warm-up run
    can carry the counting pass at no extra execution of the cell and the cell may
    run PyTorch ops (the counter hooks into PyTorch): the notebook imported PyTorch,
    or the cell names it. A notebook that never did is not made to import it (3.6 s
    on CI's CPU; its cells have no op to count).
    """
    torch_in_use = "torch" in sys.modules or (
        cell is not None
        and "torch" in cell.python
        and importlib.util.find_spec("torch") is not None
    )
    wanted = plan.model_work or (plan.options.warmup >= 1 and torch_in_use)
    if not wanted:
        return None
    return _count_work


def _count_work(call: Callable[[], None]) -> WorkModel:
    """:func:`count_work`, PyTorch's FLOP formulas loaded first without Triton.

    The op counter reads ``torch.utils.flop_counter``, which imports Triton when it
    is first imported (0.2 s on the H100, issue 32): loaded here it does not, unless
    the notebook imported Triton (:mod:`nsight_lab.roofline.torch_flops`).
    """
    from nsight_lab.roofline.torch_flops import flop_counter  # noqa: PLC0415  (torch)

    flop_counter()
    return count_work(call)
