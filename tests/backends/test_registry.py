"""The backend registry: one table from which every list of backends comes.

Also the promise of issue 9: a new backend is one new module plus one registry line,
shown by adding one (a module written here, a line patched into
``BUILTIN_BACKENDS``) and profiling a cell with it through the magic, end to end.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import pytest

from nsight_lab.contract import registry
from nsight_lab.contract.collector import Availability
from nsight_lab.contract.records import RunRecord
from nsight_lab.contract.registry import (
    BackendEntry,
    auto_candidates,
    backend_choices,
    backend_entry,
    backend_ids,
    counters_source,
    get_collector,
    probe_all,
    registered,
    times_the_host,
)
from nsight_lab.options import parse_options
from nsight_lab.plan import make_plan
from nsight_lab.roofline.placement import region_work
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from pathlib import Path

    from IPython.core.interactiveshell import InteractiveShell


def test_the_table_names_each_backend_once_with_a_collector() -> None:
    assert backend_ids() == ("cpu", "events", "cupti", "ncu", "pm")
    assert backend_choices() == ("auto", "cpu", "events", "cupti", "ncu", "pm")
    for entry in registered():
        module_name, _, class_name = entry.collector.partition(":")
        collector_class = getattr(importlib.import_module(module_name), class_name)
        assert collector_class.id == entry.id
        assert callable(collector_class.probe)
        assert callable(collector_class.collect)
        assert entry.description
    assert [e.id for e in registered() if e.isolated] == ["ncu"]
    assert [e.id for e in registered() if e.on_host] == ["cpu"]


def test_auto_order_comes_from_the_table() -> None:
    assert [e.id for e in auto_candidates(counters=False)] == ["events", "cpu"]
    assert [e.id for e in auto_candidates(counters=True)] == ["pm", "ncu"]
    assert backend_entry("cupti").auto_order is None  # only when asked by name


def test_an_unknown_id_names_the_registered_ones() -> None:
    with pytest.raises(KeyError, match=r"no backend 'nope'.*'cpu', 'events'"):
        backend_entry("nope")


def test_probe_table_on_this_machine() -> None:
    table = probe_all()
    assert list(table) == list(backend_ids())
    assert table["cpu"].ok
    assert all(found.reason for found in table.values())
    assert list(probe_all(["ncu", "cpu"])) == ["ncu", "cpu"]


def test_the_registry_imports_no_backend_module() -> None:
    probe = (
        "import json, sys\nimport nsight_lab.backends, nsight_lab.plan\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    result = subprocess.run(  # noqa: S603  (our own interpreter, fixed code)
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    loaded = set(result.stdout.split('"'))
    for heavy in (
        "torch",
        "nsight_lab.backends.cpu",
        "nsight_lab.backends.events",
        "nsight_lab.backends.cupti",
        "nsight_lab.backends.ncu.collector",
    ):
        assert heavy not in loaded


def test_get_collector_builds_a_new_one_each_time() -> None:
    first, second = get_collector("cpu"), get_collector("cpu")
    assert first is not second
    assert first.id == "cpu"


# ------------------------------------------------ a new backend: a module and a line

TINY_MODULE = '''
"""A whole backend in one module: this process's CPU time around each region."""

import time

from nsight_lab.contract.collector import Availability, RunTiming
from nsight_lab.backends.inprocess import InProcessCollector


class ProcessTimeMeasurement:
    def __init__(self, options):
        self.device_name = "process clock"
        self.notes = [f"tiny backend, {options.runs} runs per config"]
        self._done = []
        self._open = {}

    def thermal_wait(self, on_wait):
        return 0.0

    def begin_run(self, key):
        self._key, self._regions = key, {}
        self._t0 = time.process_time_ns()

    def enter_region(self, name):
        self._open[name] = time.process_time_ns()

    def exit_region(self, name):
        self._regions[name] = float(time.process_time_ns() - self._open.pop(name))

    def end_run(self, thermal_wait_s):
        whole = float(time.process_time_ns() - self._t0)
        self._done.append(RunTiming(self._key, dict(self._regions), whole))

    def abandon_run(self):
        pass

    def completed(self, *, wait):
        done, self._done = self._done, []
        return done

    def close(self):
        CLOSED.append(True)


CLOSED = []


class ProcessTimeBackend(InProcessCollector):
    id = "proctime"

    def probe(self):
        return Availability(ok=True, reason="time.process_time_ns always works")

    def open(self, options):
        return ProcessTimeMeasurement(options)
'''


@pytest.fixture
def tiny_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> BackendEntry:
    """Step 1, a module (``tiny_backend.py``); step 2, one registry line."""
    (tmp_path / "tiny_backend.py").write_text(TINY_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "tiny_backend", raising=False)
    entry = BackendEntry(
        "proctime",
        "tiny_backend:ProcessTimeBackend",
        "this process's CPU time around each region",
    )
    monkeypatch.setattr(
        registry, "BUILTIN_BACKENDS", (*registry.BUILTIN_BACKENDS, entry)
    )
    return entry


@pytest.mark.usefixtures("tiny_backend")
def test_a_new_backend_is_one_module_and_one_line(ip: InteractiveShell) -> None:
    assert "proctime" in backend_choices()
    assert probe_all()["proctime"].ok

    result = ip.run_cell(
        "%%nsight --backend proctime --configs 3,4 --runs 3 --warmup 1 "
        "--quiet --out tiny\n"
        + textwrap.dedent(
            """\
            import nsight
            with nsight.annotate("spin"):
                total = sum(range(n * 1000))
            """
        )
    )

    assert result.error_in_exec is None, result.error_in_exec
    frame = ip.user_ns["tiny"]
    assert (frame["Backend"] == "proctime").all()
    assert list(frame["Annotation"]) == ["spin", "spin"]
    assert (frame["NumRuns"] == 3).all()
    session_id = int(frame["SessionId"].iloc[0])
    with RunStore() as store:
        session = store.get_session(session_id)
        runs = store.runs(session_id)
    assert session.status == "completed"
    assert session.backend == "proctime"
    assert session.device == "process clock"
    assert session.notes == ["tiny backend, 3 runs per config"]
    assert len(runs) == 2 * 3
    assert sys.modules["tiny_backend"].CLOSED == [True]  # closed by the collector


@pytest.mark.usefixtures("tiny_backend")
def test_a_new_backend_gets_the_region_rules(ip: InteractiveShell) -> None:
    from IPython.core.error import UsageError

    result = ip.run_cell(
        "%%nsight --backend proctime --runs 2 --warmup 0 --quiet\n"
        "import nsight\nfor _ in range(2):\n"
        "    with nsight.annotate('twice'):\n        pass\n"
    )

    assert isinstance(result.error_in_exec, UsageError)
    assert "region 'twice' ran twice in one run" in str(result.error_in_exec)
    assert sys.modules["tiny_backend"].CLOSED == [True]


def test_whether_a_stored_session_timed_the_host_comes_from_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server and the history place a session under CPU roofs by this, not by
    its backend being named "cpu"."""
    assert times_the_host("cpu")
    assert not times_the_host("events")
    assert not times_the_host("a-backend-no-longer-registered")
    host_timer = BackendEntry(
        "hosttimer", "tiny:HostTimer", "another host timer", on_host=True
    )
    monkeypatch.setattr(
        registry, "BUILTIN_BACKENDS", (*registry.BUILTIN_BACKENDS, host_timer)
    )
    assert times_the_host("hosttimer")


def test_the_source_label_of_measured_bytes_comes_from_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The roofline's BytesSource names a counter backend by its ``measures``."""
    assert counters_source("pm") == "measured (PM sampling)"
    assert counters_source("ncu") == "measured"
    assert counters_source("a-backend-no-longer-registered") == "measured"
    # Three runs of region "a" with DRAM bytes counted, FLOPs modelled.
    dram = {"dram__bytes_read.sum": 1e6, "dram__bytes_write.sum": 1e6}
    records = [
        RunRecord(1, 0, {}, run, "a", 1e5, "sampler", metrics={**dram})
        for run in range(3)
    ]
    records[0].metrics["model__flops"] = 1e6
    assert region_work(records)[0].bytes_source == "measured"
    sampler = BackendEntry(
        "sampler",
        "tiny:SamplerCollector",
        "counter sampling",
        counters=True,
        measures="measured (PM sampling)",
    )
    monkeypatch.setattr(
        registry, "BUILTIN_BACKENDS", (*registry.BUILTIN_BACKENDS, sampler)
    )
    assert region_work(records)[0].bytes_source == "measured (PM sampling)"


def test_auto_takes_a_new_counters_backend_before_ncu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sampler = BackendEntry(
        "sampler",
        "tiny:SamplerCollector",
        "counter sampling",
        auto_order=-2,
        auto_reason="metrics {metrics} are sampled",
        counters=True,
    )
    monkeypatch.setattr(
        registry, "BUILTIN_BACKENDS", (*registry.BUILTIN_BACKENDS, sampler)
    )
    ok = Availability(ok=True, reason="here")
    probes = {"cpu": ok, "events": ok, "ncu": ok, "sampler": ok}

    plan = make_plan(parse_options("--metrics dram__bytes_read.sum"), probes)
    assert plan.backend == "sampler"
    assert plan.backend_reason == "metrics dram__bytes_read.sum are sampled"

    probes["sampler"] = Availability(ok=False, reason="no sampling here")
    plan = make_plan(parse_options("--metrics dram__bytes_read.sum"), probes)
    assert plan.backend == "ncu"
    assert make_plan(parse_options(""), probes).backend == "events"


# ------------------------------------------- a backend registered by another package


class _EntryPoint:
    """What ``importlib.metadata.entry_points`` yields: a name and ``load()``."""

    def __init__(self, name: str, value: object) -> None:
        self.name = name
        self._value = value

    def load(self) -> object:
        if isinstance(self._value, Exception):
            raise self._value
        return self._value


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch):
    """Entry points of the group ``nsight_lab.backends``, as an installed package
    declares them; the registry's read of them is forgotten before and after."""
    points: list[_EntryPoint] = []

    def entry_points(*, group: str) -> list[_EntryPoint]:
        return points if group == registry.ENTRY_POINT_GROUP else []

    monkeypatch.setattr(registry.importlib.metadata, "entry_points", entry_points)
    registry.plugin_entries.cache_clear()
    yield points
    registry.plugin_entries.cache_clear()


def test_a_backend_registered_from_outside_is_a_backend_choice(plugins) -> None:
    entry = BackendEntry("outside", "their_pkg:Collector", "another package's")
    plugins.append(_EntryPoint("outside", entry))

    assert backend_choices()[-1] == "outside"
    assert backend_entry("outside") is entry
    assert parse_options("--backend outside").backend == "outside"
    from nsight_lab.options import help_text

    assert "auto|cpu|events|cupti|ncu|pm|outside" in help_text()
    # the server's list and the probe table read the same registry
    assert [e.id for e in registered()][-1] == "outside"


def test_a_broken_or_clashing_plugin_leaves_the_built_in_backends(
    plugins, caplog: pytest.LogCaptureFixture
) -> None:
    plugins.append(_EntryPoint("broken", ImportError("no module named their_pkg")))
    plugins.append(_EntryPoint("odd", "not an entry"))
    plugins.append(_EntryPoint("cpu", BackendEntry("cpu", "x:Y", "a second cpu")))

    assert backend_ids() == ("cpu", "events", "cupti", "ncu", "pm")
    assert backend_entry("cpu").collector == "nsight_lab.backends.cpu:CpuTimerBackend"
    said = caplog.text
    assert "'broken' does not load (ImportError: no module named their_pkg)" in said
    assert "'odd' is a str, not a BackendEntry" in said
    assert "backend 'cpu' is registered twice" in said


def test_a_counter_backends_defaults_are_read_when_asked() -> None:
    from nsight_lab.backends.pm.metrics import DEFAULT_OPTION_METRICS
    from nsight_lab.roofline.counters import ROOFLINE_METRICS

    assert registry.default_metrics(backend_entry("pm")) == DEFAULT_OPTION_METRICS
    assert registry.default_metrics(backend_entry("ncu")) == ROOFLINE_METRICS
