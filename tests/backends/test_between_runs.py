"""Between two runs (issue 32): little on the launching thread, the same records.

The live view's notifications leave the path between two runs (at most every
``NOTIFY_S``), the store's rows are the writer thread's, and a config's last runs are
handed over once the next is launched (:mod:`nsight_lab.runner`); the events and cupti
backends run on the CPU against :mod:`tests.backends.fake_gpu`, a GPU in software.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from nsight_lab.backends.cpu import CpuMeasurement, CpuTimerBackend
from nsight_lab.contract.collector import CellCode, Output
from nsight_lab.options import parse_options
from nsight_lab.plan import make_plan
from nsight_lab.runner import NOTIFY_S
from nsight_lab.store.run_store import RunStore
from nsight_lab.store.writer import StoreWriter
from nsight_lab.views.live import WidgetView
from tests.backends.fake_gpu import FakeGpu, replay

if TYPE_CHECKING:
    from types import FrameType

FIXTURE = Path(__file__).parents[1] / "fixtures" / "between_runs.json"
"""The records the code before the change gave (tests/fixtures/make_between_runs.py)."""


@pytest.mark.parametrize("backend", ["events", "cupti"])
def test_a_replayed_cell_gives_the_records_it_gave_before(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpu = FakeGpu().install(monkeypatch)
    got = replay(gpu, backend)
    before = json.loads(FIXTURE.read_text(encoding="utf-8"))[backend]
    assert got["records"] == before
    # The fake's kernels, so the comparison holds the numbers it should.
    mm = [r["duration_ns"] for r in got["records"] if r["annotation"] == "mm"]
    assert mm == [52_000.0] * 5 + [102_000.0] * 5 + [152_000.0] * 5


@pytest.mark.parametrize("backend", ["events", "cupti"])
def test_each_record_reaches_the_sink_and_the_view_once_the_view_seldom(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpu = FakeGpu().install(monkeypatch)
    started = time.monotonic()
    got = replay(gpu, backend, "--configs 1,2,3 --runs 200 --warmup 1")
    wall = time.monotonic() - started
    records = len(got["records"])
    assert records == 3 * 200 * 2
    assert sum(got["batches"]) == records
    assert sum(n for _, _, n in got["progress"]) == records
    # The view: the first run at once, then at most once per NOTIFY_S (or when a
    # config begins), not after every run.
    notified = sum(1 for _, _, n in got["progress"] if n)
    assert notified <= 1 + 3 + wall / NOTIFY_S + 1, (notified, wall)
    final = got["progress"][-1]
    assert final[:2] == (2, 600)


class _Between:
    """Who runs what on the launching thread between one run's end and the next."""

    WORK = (
        *(
            "nsight_lab/views/",
            "nsight_lab/viewmodel/",
            "nsight_lab/figures/",
            "/json/",
        ),
        *("store/rows.py", "store/run_writes.py", "store/connection.py"),
    )
    """The live view's model, figures and JSON, and the store's rows and SQL."""

    def __init__(self) -> None:
        self.between = False
        self.run = -1
        self.calls: list[int] = []
        """Python calls between each run and the next."""
        self.work: dict[int, set[str]] = {}
        """Run -> the view/JSON/store-row functions called after it."""

    def profile(self, frame: FrameType, event: str, _arg: Any) -> None:
        if not self.between or event != "call":
            return
        self.calls[-1] += 1
        code = frame.f_code
        name = code.co_filename.replace("\\", "/")
        if any(w in name for w in self.WORK):
            self.work.setdefault(self.run, set()).add(code.co_name)

    def ended(self) -> None:
        self.between = True
        self.run += 1
        self.calls.append(0)

    def began(self) -> None:
        self.between = False


def test_between_two_runs_the_launching_thread_draws_encodes_and_writes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The view hears of runs at most every NOTIFY_S; the rows are the writer's."""
    spy = _Between()
    begin, end = CpuMeasurement.begin_run, CpuMeasurement.end_run

    def begin_run(self: CpuMeasurement, key: Any) -> None:
        spy.began()
        begin(self, key)

    def end_run(self: CpuMeasurement, waited: float) -> None:
        end(self, waited)
        spy.ended()

    monkeypatch.setattr(CpuMeasurement, "begin_run", begin_run)
    monkeypatch.setattr(CpuMeasurement, "end_run", end_run)
    options = parse_options("--backend cpu --configs 1,2,3 --runs 300 --warmup 0")
    plan = make_plan(options, {"cpu": CpuTimerBackend().probe()})
    source = "with annotate('a'):\n    x = sum(range(50 * n))\n"
    from nsight_lab.regions import annotate

    cell = CellCode(source, source, compile(source, "<cell>", "exec"),
                    {"annotate": annotate})  # fmt: skip
    shown: list[int] = []
    with RunStore() as store:
        session = store.create_session(backend="cpu", configs=plan.configs)
        view = WidgetView(session_id=session.id, show=False)

        def hook(progress: Any, records: Any) -> None:
            shown.append(len(records))
            view.update(progress, records)

        with StoreWriter(store) as writer:
            out = Output(lambda _d, _n: session.id, writer.put, hook,
                         between_runs=writer.between_runs)  # fmt: skip
            started = time.monotonic()
            sys.setprofile(spy.profile)
            try:
                records = CpuTimerBackend().collect(plan, cell, out)
            finally:
                sys.setprofile(None)
            wall = time.monotonic() - started
        assert store.run_counts([session.id])[session.id] == 900
    assert len(records) == 900
    assert sum(shown) == 900
    assert len(view.records) == 900
    assert len(spy.calls) == 900
    # Notified with records: the first run, then once per NOTIFY_S at most (and
    # when a config begins), not after every run.
    notified = sum(1 for n in shown if n)
    assert notified <= 1 + 3 + wall / NOTIFY_S + 1, (notified, wall)
    # Between two runs the launching thread touched the view, JSON or the store's
    # rows only where it notified the view (or a config began).
    assert len(spy.work) <= notified + 3, sorted(spy.work.items())[:5]
    # Python calls between two runs: the records and the store's queue, 25 (30
    # before: the view's update and a progress snapshot after every run).
    assert statistics.median(spy.calls) <= 27, statistics.median(spy.calls)
