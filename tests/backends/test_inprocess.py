"""nsight_lab.backends.inprocess, through the real cpu backend: what ``collect`` owes.

It opens the measurement before the session, begins the session once with the
measurement's device and notes, hands records to the sink as runs finish (also when
the cell fails), and closes the measurement however the profile ends. The runner's
own duties are in tests/test_runner.py.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

from nsight_lab.backends.cpu import CpuMeasurement, CpuTimerBackend, cpu_name
from nsight_lab.backends.inprocess import work_model
from nsight_lab.contract.collector import CellCode, Output
from nsight_lab.errors import BackendUnavailableError
from nsight_lab.options import ProfileOptions, parse_options
from nsight_lab.plan import make_plan
from nsight_lab.regions import annotate

SESSION_ID = 42


def _plan(line: str):
    return make_plan(
        parse_options(f"--backend cpu {line}"), {"cpu": CpuTimerBackend().probe()}
    )


def _cell(source: str, **namespace: object) -> CellCode:
    return CellCode(
        source=source,
        python=source,
        code=compile(source, "<cell>", "exec"),
        namespace={"annotate": annotate, **namespace},
    )


class _Spy:
    """The Output's receiving end: what began, what was sunk, in order."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def output(self) -> Output:
        return Output(begin=self.begin, sink=self.sink, progress=self.progress)

    def begin(self, device: str | None, notes) -> int:
        self.events.append(("begin", device, list(notes)))
        return SESSION_ID

    def sink(self, records) -> None:
        self.events.append(("sink", list(records)))

    def progress(self, _progress, records) -> None:
        self.events.append(("progress", list(records)))

    def sunk(self) -> list:
        return [r for event in self.events if event[0] == "sink" for r in event[1]]


class _ClosingCpu(CpuTimerBackend):
    """The cpu backend, counting how often its measurements are closed."""

    closed = 0

    def open(self, options: ProfileOptions) -> CpuMeasurement:
        backend = self

        class Counted(CpuMeasurement):
            def close(self) -> None:
                backend.closed += 1
                super().close()

        return Counted(options)


def test_collect_begins_once_binds_each_config_and_sinks_every_record():
    spy, seen = _Spy(), []
    plan = _plan("--configs 1,2 --runs 2 --warmup 0 --cache-control all")
    cell = _cell("seen.append(n)\nwith annotate('r'):\n    pass\n", seen=seen)
    backend = _ClosingCpu()
    records = backend.collect(plan, cell, spy.output())
    begins = [e for e in spy.events if e[0] == "begin"]
    assert begins == [
        (
            "begin",
            cpu_name(),
            ["cpu backend: --cache-control has no effect on host timing"],
        )
    ]
    assert spy.events[0][0] == "begin"  # before any record or progress
    assert seen == [1, 1, 2, 2]
    assert [(r.config_index, r.run_index) for r in records] == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
    ]
    assert {r.session_id for r in records} == {SESSION_ID}
    assert {r.backend for r in records} == {"cpu"}
    assert spy.sunk() == records
    assert any(e[0] == "progress" for e in spy.events)
    assert backend.closed == 1


def test_a_failing_cell_keeps_the_runs_before_it_and_closes_the_measurement():
    spy = _Spy()
    cell = _cell(
        "with annotate('r'):\n    pass\nif n == 2:\n    raise KeyError('late')\n"
    )
    backend = _ClosingCpu()
    with pytest.raises(KeyError, match="late"):
        backend.collect(_plan("--configs 1,2 --runs 3 --warmup 0"), cell, spy.output())
    assert [(r.config_index, r.run_index) for r in spy.sunk()] == [
        (0, 0),
        (0, 1),
        (0, 2),
    ]
    assert backend.closed == 1


def test_a_backend_that_cannot_open_begins_no_session():
    class Refusing(CpuTimerBackend):
        def open(self, options: ProfileOptions) -> CpuMeasurement:  # noqa: ARG002
            msg = "backend 'cpu' is unavailable: refused for the test"
            raise BackendUnavailableError(msg)

    spy = _Spy()
    with pytest.raises(BackendUnavailableError, match="refused for the test"):
        Refusing().collect(_plan("--runs 1"), _cell("pass\n"), spy.output())
    assert spy.events == []


def test_work_is_counted_when_derived_or_when_a_warmup_can_carry_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert work_model(_plan("--warmup 0")) is None
    assert work_model(_plan("--warmup 0 --derive tflops")) is not None
    with_torch = importlib.util.find_spec("torch") is not None
    named = _cell("import torch\nx = torch.ones(4)\n")
    assert (work_model(_plan("--warmup 1"), named) is not None) == with_torch
    # A notebook that never imported PyTorch, a cell that does not name it: no pass.
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert work_model(_plan("--warmup 1"), _cell("x = 1\n")) is None
