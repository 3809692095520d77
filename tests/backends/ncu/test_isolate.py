"""The isolated ncu path end to end, on the CPU, with the stand-in ``ncu``.

``tests/fixtures/fake_ncu.py`` parses the real arguments, runs the child for real and
writes the stand-in report format; everything else (payload, shipping, the child, NVTX
range names, the sidecar log, progress, report reading, combining, errors) is the real
code.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from nsight_lab.backends.ncu.collector import NcuCollector
from nsight_lab.backends.ncu.isolate import run_isolated
from nsight_lab.backends.ncu.report import parse_range_name, read_report
from nsight_lab.contract.collector import Availability
from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.errors import BackendUnavailableError, MeasurementError, RegionError
from nsight_lab.gpu import ncu as _ncu_tools
from nsight_lab.gpu import stack as gpu_stack
from nsight_lab.nsight_shim import prepare_child
from nsight_lab.options import parse_options
from nsight_lab.plan import Plan, make_plan

torch = pytest.importorskip("torch")


CELL = textwrap.dedent(
    """
    import nsight_lab
    with nsight_lab.annotate("first"):
        y = double(x) * n
    with nsight_lab.annotate("second"):
        z = math.sqrt(n) + square(float(y.sum()))
    """
)


pytestmark = pytest.mark.usefixtures("fake_ncu")


@pytest.fixture
def user_ns():
    ns: dict[str, object] = {"__name__": "__main__"}
    exec(  # noqa: S102
        textwrap.dedent(
            """
            import math
            def double(v):
                return v * 2
            square = lambda v: v * v
            """
        ),
        ns,
    )
    ns["x"] = torch.ones(4)
    return ns


def plan_for(line: str) -> Plan:
    """A plan for the ncu backend (by name, unless ``--metrics`` chooses it)."""
    return make_plan(
        parse_options(line if "--metrics" in line else f"{line} --backend ncu"),
        {"ncu": Availability(ok=True, reason="test")},
    )


class Calls:
    def __init__(self):
        self.batches = []
        self.messages = []
        self.runs_done = []
        self.statuses = []
        self.shown_records = []

    def sink(self, records):
        self.batches.append(list(records))

    def progress(self, progress, records):
        if records:
            self.shown_records.append(list(records))
        self.messages.append(progress.message)
        self.runs_done.append(progress.runs_done_total)
        self.statuses.append(progress.status)


def test_end_to_end_two_configs_two_regions_three_runs(user_ns, tmp_path):
    args_file = tmp_path / "args.json"
    calls = Calls()
    plan = plan_for(
        "--configs 1,2 --runs 3 --warmup 1 --backend ncu "
        "--metrics dram__bytes_read.sum,dram__bytes_write.sum"
    )
    reports = tmp_path / "reports"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FAKE_NCU_ARGS", str(args_file))
        records = run_isolated(
            plan,
            CELL,
            user_ns,
            42,
            calls.sink,
            on_progress=calls.progress,
            report_dir=reports,
        )

    assert len(records) == 2 * 2 * 3
    assert [len(b) for b in calls.batches] == [6, 6]  # once per config
    assert [r for b in calls.batches for r in b] == records
    for ci, n in enumerate((1, 2)):
        mine = [r for r in records if r.config_index == ci]
        assert {r.config["n"] for r in mine} == {n}
        assert sorted({r.run_index for r in mine}) == [0, 1, 2]  # warm-up dropped
        assert [r.annotation for r in mine] == ["first", "second"] * 3
    for r in records:
        assert r.session_id == 42
        assert r.backend == "ncu"
        assert r.duration_ns > 0
        assert r.kernels == ("stand_in_kernel",)
        assert r.metrics == {
            "dram__bytes_read.sum": 1000.0,
            "dram__bytes_write.sum": 1000.0,
        }
    assert sorted(p.name for p in reports.iterdir()) == [
        "config_0.ncu-rep",
        "config_1.ncu-rep",
    ]
    # Progress saw each kernel as ncu profiled it, and the child's finished runs.
    assert any('profiling "stand_in_kernel"' in m for m in calls.messages)
    assert calls.runs_done[-1] == 6
    assert calls.statuses[-1] == "completed"
    assert calls.shown_records == calls.batches  # each config's records, once

    argv = json.loads(args_file.read_text())
    assert argv[:2] == ["--nvtx", "--nvtx-include"]
    assert argv[2] == "regex:nsight_lab@.+"  # start/end ranges: no trailing "/"
    metrics = argv[argv.index("--metrics") + 1].split(",")
    assert metrics[0] == TIME_METRIC
    assert argv[argv.index("--cache-control") + 1] == "all"
    assert argv[argv.index("--clock-control") + 1] == "none"
    assert argv[argv.index("--replay-mode") + 1] == "kernel"
    assert argv[argv.index("--target-processes") + 1] == "all"
    assert argv[argv.index("-o") + 1] == str(reports / "config_1")
    assert argv[-3:-1] == ["-m", "nsight_lab.backends.ncu.child"]


@pytest.mark.parametrize(
    "case", [("sum", 300.0, 3000.0), ("max", 200.0, 2000.0), ("first", 100.0, 1000.0)]
)
def test_combine_two_kernels_in_a_region(user_ns, tmp_path, monkeypatch, case):
    combine, duration, metric = case
    monkeypatch.setenv("FAKE_NCU_KERNELS", "2")
    monkeypatch.setenv("FAKE_NCU_DURATION_NS", "100")
    plan = plan_for(
        f"--configs 1 --runs 2 --warmup 0 --combine {combine} "
        "--metrics dram__bytes_read.sum"
    )
    records = run_isolated(plan, CELL, user_ns, 1, lambda _: None, report_dir=tmp_path)
    assert len(records) == 4
    for r in records:
        assert r.kernels == ("stand_in_kernel", "stand_in_kernel_2")
        assert r.duration_ns == duration
        assert r.metrics == {"dram__bytes_read.sum": metric}


def test_a_cell_without_regions_is_one_region(user_ns, tmp_path):
    plan = plan_for("--runs 2 --warmup 1")
    records = run_isolated(
        plan, "y = double(x)", user_ns, 1, lambda _: None, report_dir=tmp_path
    )
    assert [(r.annotation, r.run_index) for r in records] == [("cell", 0), ("cell", 1)]


@pytest.mark.parametrize("warmup", [0, 1])
def test_range_replay_one_result_per_region_first_run_unmarked(
    user_ns, tmp_path, monkeypatch, warmup
):
    args_file = tmp_path / "args.json"
    monkeypatch.setenv("FAKE_NCU_ARGS", str(args_file))
    monkeypatch.setenv("FAKE_NCU_KERNELS", "3")  # per kernel, --combine single fails
    ran = tmp_path / "ran.txt"
    cell = f"open({str(ran)!r}, 'a').write('x')\n" + CELL
    plan = plan_for(
        f"--configs 1 --runs 2 --warmup {warmup} --replay-mode range "
        "--metrics dram__bytes_read.sum"
    )
    records = run_isolated(plan, cell, user_ns, 1, lambda _: None, report_dir=tmp_path)
    argv = json.loads(args_file.read_text())
    assert argv[argv.index("--replay-mode") + 1] == "range"
    assert [(r.annotation, r.run_index) for r in records] == [
        ("first", 0), ("second", 0), ("first", 1), ("second", 1)
    ]  # fmt: skip
    assert {r.kernels for r in records} == {("stand_in_range",)}
    assert {r.metrics["dram__bytes_read.sum"] for r in records} == {1000.0}
    # The first run pushes no range (so no "cell" range holds the regions' ranges):
    # the warm-up run, or with none, one extra run; the measured runs are the 2.
    assert len(ran.read_text()) == 3


def test_reports_default_to_the_session_folder(user_ns, nsight_home):
    run_isolated(plan_for("--runs 1 --warmup 0"), "y = 1", user_ns, 7, lambda _: None)
    assert (nsight_home / "reports" / "session_7" / "config_0.ncu-rep").is_file()


def test_import_nsight_in_the_child_is_our_annotate(user_ns, tmp_path):
    cell = "import nsight\nwith nsight.annotate('r'):\n    y = double(x)"
    records = run_isolated(
        plan_for("--runs 1 --warmup 0"),
        cell,
        user_ns,
        1,
        lambda _: None,
        report_dir=tmp_path,
        prepare=prepare_child,  # what a %%nsight cell hands the child
    )
    assert [r.annotation for r in records] == ["r"]


# -------------------------------------------------------------------------- errors


def test_no_ncu(user_ns, tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.delenv(gpu_stack.NCU_ENV_VAR, raising=False)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(_ncu_tools, "CUDA_NCU_PATH", empty / "ncu")
    monkeypatch.setattr(_ncu_tools, "NSIGHT_COMPUTE_ROOT", empty / "nsight-compute")
    with pytest.raises(BackendUnavailableError) as err:
        run_isolated(plan_for("--runs 1"), "y = 1", user_ns, 1, lambda _: None)
    assert "no ncu (Nsight Compute CLI) was found" in str(err.value)
    assert "NSIGHT_LAB_NCU" in str(err.value)


def test_counter_permission(user_ns, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_MODE", "perm")
    with pytest.raises(BackendUnavailableError) as err:
        run_isolated(
            plan_for("--configs 1 --runs 1"),
            CELL,
            user_ns,
            1,
            lambda _: None,
            report_dir=tmp_path,
        )
    message = str(err.value)
    assert "ERR_NVGPUCTRPERM" in message
    assert "run as root" in message
    assert "NVreg_RestrictProfilingToAdminUsers=0" in message
    assert "--cap-add SYS_ADMIN" in message


def test_unknown_metric_suggests_close_names(user_ns, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_MODE", "unknown_metric")
    plan = plan_for("--configs 1 --runs 1 --metrics dram__bytes_reed.sum")
    with pytest.raises(MeasurementError) as err:
        run_isolated(plan, CELL, user_ns, 1, lambda _: None, report_dir=tmp_path)
    message = str(err.value)
    assert "ncu 2025.3.1.0" in message
    assert "'dram__bytes_reed.sum'" in message  # left out by ncu: found as absent
    assert "did you mean 'dram__bytes_read.sum'" in message
    assert "ncu --query-metrics" in message


def test_metric_newer_than_ncu(user_ns, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_MODE", "unknown_metric")
    plan = plan_for("--configs 1 --runs 1 --metrics pm__brand_new_counter")
    with pytest.raises(MeasurementError) as err:
        run_isolated(plan, CELL, user_ns, 1, lambda _: None, report_dir=tmp_path)
    message = str(err.value)
    assert "'pm__brand_new_counter'" in message
    assert "newer than ncu 2025.3.1.0" in message
    assert "install a newer Nsight Compute" in message


def test_cell_failure_in_the_child_keeps_earlier_configs(user_ns, tmp_path):
    calls = Calls()
    cell = "with nsight_lab.annotate('r'):\n    y = 1 / (2 - n)\nimport nsight_lab"
    cell = "import nsight_lab\n" + cell
    with pytest.raises(MeasurementError) as err:
        run_isolated(
            plan_for("--configs 1,2 --runs 2 --warmup 0"),
            cell,
            user_ns,
            1,
            calls.sink,
            report_dir=tmp_path,
        )
    message = str(err.value)
    assert "the cell failed in the ncu child process" in message
    assert "ZeroDivisionError: division by zero" in message
    assert "\n" not in message
    assert [len(b) for b in calls.batches] == [2]  # config 0 was stored first


def test_region_rules_hold_in_the_child(user_ns, tmp_path):
    cell = textwrap.dedent(
        """
        import nsight_lab
        with nsight_lab.annotate("a"):
            with nsight_lab.annotate("b"):
                pass
        """
    )
    with pytest.raises(
        MeasurementError, match=r"RegionError: .*region 'b' opened inside"
    ):
        run_isolated(
            plan_for("--runs 1"), cell, user_ns, 1, lambda _: None, report_dir=tmp_path
        )
    assert issubclass(RegionError, MeasurementError)


@pytest.mark.parametrize("mode", ["norows", "nokernels"])
def test_no_kernels_in_the_regions(user_ns, tmp_path, monkeypatch, mode):
    monkeypatch.setenv("FAKE_NCU_MODE", mode)
    with pytest.raises(MeasurementError) as err:
        run_isolated(
            plan_for("--configs 1 --runs 1"),
            CELL,
            user_ns,
            1,
            lambda _: None,
            report_dir=tmp_path,
        )
    assert "no kernels ran inside the annotated regions" in str(err.value)


def test_unpicklable_free_variable_stops_before_ncu(user_ns, tmp_path):
    import socket

    with socket.socket() as sock:
        user_ns["conn"] = sock
        with pytest.raises(MeasurementError, match="cannot ship variable 'conn'"):
            run_isolated(
                plan_for("--runs 1"), "conn.fileno()", user_ns, 1, lambda _: None
            )
    assert not (tmp_path / "reports").exists()


# ------------------------------------------------------------------ reader, probe


def test_range_names_round_trip():
    assert parse_range_name("matmul [c0 r-1]") == ("matmul", 0, -1)
    assert parse_range_name("a [b] [c12 r3]") == ("a [b]", 12, 3)
    assert parse_range_name("someone else's range") is None


def test_stand_in_report_reader(tmp_path):
    report = tmp_path / "r.ncu-rep"
    report.write_text(
        json.dumps(
            [
                {"range_name": "a [c0 r1]", "kernel": "k", "metrics": {"m": 2}},
                {"range_name": "foreign", "kernel": "k", "metrics": {}},
            ]
        )
    )
    [row] = read_report(report, ["m", "absent"])
    assert (row.region, row.config_index, row.run_index, row.kernel) == ("a", 0, 1, "k")
    assert row.metrics == {"m": 2.0}


def test_probe_with_and_without_ncu(monkeypatch, tmp_path):
    ok_report = gpu_stack.StackStatus(ok=True, detail="ncu_report test")
    monkeypatch.setattr(
        "nsight_lab.backends.ncu.probe.ncu_report_status", lambda: ok_report
    )
    monkeypatch.setattr("nsight_lab.backends.ncu.probe.nvtx_installed", lambda: True)
    found = NcuCollector().probe()
    assert found.ok
    assert "2025.3.1.0" in found.reason
    assert "isolated: the cell runs in a child process under ncu" in found.reason
    assert "needs Nsight Compute >= 2026.2.1" in found.reason

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(_ncu_tools, "CUDA_NCU_PATH", tmp_path / "ncu")
    monkeypatch.setattr(_ncu_tools, "NSIGHT_COMPUTE_ROOT", tmp_path / "none")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    missing = NcuCollector().probe()
    assert not missing.ok
    assert "no ncu" in missing.reason
    assert missing.hint == gpu_stack.NCU_INSTALL_HINT


def test_the_collector_names_what_cannot_ship_before_a_session_opens(user_ns):
    from nsight_lab.backends.ncu.shipping import ShippingError
    from nsight_lab.contract.collector import CellCode

    class CUDAGraph:  # as the pickler meets torch's
        def __reduce__(self):
            msg = "cannot pickle 'CUDAGraph' object"
            raise TypeError(msg)

    class Out:
        begun = False

        def begin(self, *_args):
            self.begun = True
            return 1

    user_ns["graph"] = CUDAGraph()
    source = "graph.replay()\n"
    cell = CellCode(source, source, compile(source, "<cell>", "exec"), user_ns)
    out = Out()
    with pytest.raises(ShippingError, match="build \\(capture\\) the CUDA graph"):
        NcuCollector().collect(plan_for("--runs 1"), cell, out)  # type: ignore[arg-type]
    assert not out.begun
