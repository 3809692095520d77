"""``analyze.kernel`` on the isolated ncu path, with the stand-in ``ncu``.

The decorated function is shipped to the child under (stand-in) Nsight Compute with
cloudpickle, called there with each config's objects, and its kernels are folded by
nsight-python's rules: the real child, shipping and report reading, on the CPU.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

import nsight_lab as nsight
from nsight_lab.api import tools
from nsight_lab.nsight_shim import install_nsight_shim
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from pathlib import Path

pytest.importorskip("torch")
pytestmark = pytest.mark.usefixtures("fake_ncu")

METRICS = ["dram__bytes_read.sum"]


def _kernel(**kwargs: Any) -> Any:
    kwargs.setdefault("metrics", METRICS)
    return nsight.analyze.kernel(
        backend="ncu", verbosity=nsight.VerbosityLevel.SILENT, warmup=0, **kwargs
    )


def bench(n: int, dtype: Any) -> None:
    with nsight.annotate("zeros"):
        np.zeros(n, dtype=dtype).sum()


def test_the_function_runs_in_the_child_with_its_configs_objects() -> None:
    def per_byte(read: float, n: int, dtype: Any) -> tuple[float, str]:
        return read / (n * np.dtype(dtype).itemsize), "x"

    results = _kernel(
        configs=[(64, np.float32), (128, np.int64)], runs=2, derive_metric=per_byte
    )(bench)()
    frame = results.to_dataframe()
    assert set(frame["Backend"]) == {"ncu"}
    reads = frame[frame["Metric"] == METRICS[0]]
    assert reads["dtype"].tolist() == [np.float32, np.int64]
    assert (reads["NumRuns"] == 2).all()
    assert (reads["AvgValue"] == 1000.0).all()  # the stand-in's counter value
    # nsight-python's rows: the metrics asked for and the derived one, no duration.
    assert set(frame["Metric"]) == {*METRICS, "per_byte"}
    assert set(reads["Unit"]) == {"bytes"}
    derived = frame[frame["Metric"] == "per_byte"].set_index("n")
    assert derived.loc[64, "AvgValue"] == pytest.approx(1000.0 / (64 * 4))
    assert derived.loc[128, "AvgValue"] == pytest.approx(1000.0 / (128 * 8))


def test_several_kernels_need_a_combine_function(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_NCU_KERNELS", "3")
    monkeypatch.setenv("FAKE_NCU_DURATION_NS", "100")
    strict = _kernel(configs=[(64, np.float32)])(bench)
    with pytest.raises(RuntimeError, match=r"More than one \(total=3\) kernel"):
        strict()
    # The stand-in's kernels take 100, 200 and 300 ns; the user's function is folded
    # over them in launch order: (100 + 2 * 200) + 2 * 300.
    folded = _kernel(
        configs=[(64, np.float32)],
        combine_kernel_metrics=lambda x, y: x + 2 * y,
        metrics=["gpu__time_duration.sum", *METRICS],
    )(bench)().to_dataframe()
    times = folded[folded["Metric"] == "gpu__time_duration.sum"]
    assert times["AvgValue"].tolist() == [1100.0]
    assert times["Kernel"].str.count(r"\|").tolist() == [2]  # three kernels, k1|k2|k3


def test_a_function_reading_the_nsight_stand_in_ships_to_the_child(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # nsight-python's examples 08, 09, 11: ``import nsight`` is nsight-lab's stand-in
    # module, which the function's globals (shipped by value) hold.
    monkeypatch.setitem(sys.modules, "nsight", None)  # restored after the test
    install_nsight_shim(replace=True)
    notebook: dict[str, Any] = {"__name__": "__main__"}
    source = f"""
        import nsight
        import numpy as np

        @nsight.annotate("ones")
        def ones(n):
            return np.ones(n).sum()

        @nsight.analyze.kernel(
            configs=[(64,), (128,)], runs=2, backend="ncu", metrics={METRICS!r},
            verbosity=nsight.VerbosityLevel.SILENT, warmup=0,
        )
        def bench(n):
            with nsight.annotate("zeros"):
                np.zeros(n).sum()
            ones(n)
        """
    exec(textwrap.dedent(source), notebook)  # noqa: S102  (a notebook's cell)
    assert getattr(notebook["nsight"], "__nsight_lab_shim__", False)
    frame = notebook["bench"]().to_dataframe()
    reads = frame[frame["Metric"] == METRICS[0]]
    assert sorted(set(reads["Annotation"])) == ["ones", "zeros"]
    assert (reads["NumRuns"] == 2).all()  # every run's regions came back from ncu
    assert (reads["AvgValue"] == 1000.0).all()
    assert sorted(set(reads["n"])) == [64, 128]


def test_info_collectors_run_in_the_child_with_the_function() -> None:
    parent = os.getpid()
    ticks: list[int] = []

    @nsight.experimental.collect(scope="once")
    def where() -> int:
        return os.getpid()

    @nsight.experimental.collect(scope="config")
    def squared(n: int) -> int:
        return n * n

    @nsight.experimental.collect(scope="run")
    def pid(*_config: Any) -> int:
        return os.getpid()

    @nsight.experimental.collect(scope="run")
    def tick(*_config: Any) -> int:
        ticks.append(1)  # the child's copy of the list: one per config's process
        return len(ticks)

    def region(annotation_name: str, n: int) -> str:
        return f"{annotation_name}-{n}"

    def broken(*_config: Any) -> int:
        raise ZeroDivisionError

    profiled = nsight.analyze.kernel(
        backend="ncu",
        metrics=METRICS,
        verbosity=nsight.VerbosityLevel.SILENT,
        configs=[(64, np.float32), (128, np.int64)],
        runs=3,
        warmup=1,
        info_collectors=[
            where,
            squared,
            pid,
            tick,
            ("region", region, "annotation"),
            ("broken", broken, "run"),
        ],
    )(bench)
    # the child's warning, given here once
    with pytest.warns(RuntimeWarning, match=r"'broken' \(run scope\) raised Zero"):
        frame = profiled().to_dataframe()
    frame = frame[frame["Metric"] == METRICS[0]]
    assert len(frame) == 2
    assert (frame["where"] == parent).all()  # once: in this process, before
    assert (frame["squared_Avg"] == frame["n"] ** 2).all()
    assert (frame["pid_Min"] != parent).all()  # run: in the ncu child
    assert (frame["tick_Min"] == 1).all()  # the warm-up run collected nothing
    assert (frame["tick_Max"] == 3).all()
    assert (frame["region"] == "zeros-" + frame["n"].astype(str)).all()
    assert frame["broken"].isna().all()
    assert ticks == []  # nothing ran here


def test_replay_mode_range_reaches_ncu(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    args_file = tmp_path / "args.json"
    monkeypatch.setenv("FAKE_NCU_ARGS", str(args_file))
    monkeypatch.setenv("FAKE_NCU_KERNELS", "3")  # one range result, not 3 kernels
    frame = _kernel(configs=[(64, np.float32)], runs=2, replay_mode="range")(
        bench
    )().to_dataframe()
    argv = json.loads(args_file.read_text())
    assert argv[argv.index("--replay-mode") + 1] == "range"
    reads = frame[frame["Metric"] == METRICS[0]]
    assert reads["AvgValue"].tolist() == [1000.0]
    assert reads["Kernel"].tolist() == ["stand_in_range"]


def test_one_counter_is_plotted_without_naming_it(tmp_path: Path) -> None:
    # nsight-python's examples 01 and 10: ``metrics=[one counter]`` and a ``plot``
    # that names no metric. Their frame has the counter's rows only: a duration row
    # beside it made plot refuse "multiple metrics".
    png = tmp_path / "counter.png"
    profiled = nsight.analyze.plot(str(png), plot_type="bar")(
        _kernel(configs=[(64, np.float32), (128, np.float32)])(bench)
    )
    frame = profiled().to_dataframe()
    assert frame["Metric"].tolist() == METRICS * 2
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_output_prefix_gets_the_ncu_reports_as_nsight_python_names_them(
    tmp_path: Path,
) -> None:
    prefix = str(tmp_path / "one" / "run_")
    one = _kernel(configs=[(64, np.float32)], output_prefix=prefix)(bench)
    one()
    one()  # each call is one id, as nsight-python's
    names = sorted(p.name for p in (tmp_path / "one").glob("*.ncu-rep"))
    assert names == ["run_ncu-output-bench-0.ncu-rep", "run_ncu-output-bench-1.ncu-rep"]
    assert json.loads((tmp_path / "one" / names[0]).read_text())  # copied whole
    prefix = str(tmp_path / "two" / "run_")
    configs = [(64, np.float32), (128, np.int64)]
    _kernel(configs=configs, output_prefix=prefix)(bench)()
    names = sorted(p.name for p in (tmp_path / "two").glob("*.ncu-rep"))
    assert names == [  # one report per config here, nsight-python's name before it
        "run_ncu-output-bench-0-config_0.ncu-rep",
        "run_ncu-output-bench-0-config_1.ncu-rep",
    ]


def test_the_ncu_tool_keeps_its_report_without_naming_the_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # nsight-python's default tool (NCU, active from the import on) and only
    # output_prefix: the call runs on the ncu path, as nsight-python's would, and
    # its report is kept under nsight-python's name.
    monkeypatch.setenv("FAKE_NCU_DURATION_NS", "500")
    tools.reset()
    assert nsight.get_active_tool() is nsight.Tool.NCU
    prefix = str(tmp_path / "out" / "run_")
    profiled = nsight.analyze.kernel(
        configs=[(64, np.float32)],
        verbosity=nsight.VerbosityLevel.SILENT,
        warmup=0,
        output_prefix=prefix,
    )(bench)
    frame = profiled().to_dataframe()
    assert set(frame["Backend"]) == {"ncu"}
    assert frame["Metric"].tolist() == ["gpu__time_duration.sum"]
    assert frame["AvgValue"].tolist() == [500.0]  # the stand-in ncu's duration
    kept = sorted(p.name for p in (tmp_path / "out").glob("*.ncu-rep"))
    assert kept == ["run_ncu-output-bench-0.ncu-rep"]
    # Without output_prefix the tool leaves the choice to auto (no ncu for a
    # duration), and under use_backend the named backend stays: no report either.
    plain = nsight.analyze.kernel(
        configs=[(64, np.float32)], verbosity=nsight.VerbosityLevel.SILENT, warmup=0
    )(bench)
    assert set(plain().to_dataframe()["Backend"]) != {"ncu"}
    nsight.use_backend("cpu")
    try:
        chosen = nsight.analyze.kernel(
            configs=[(64, np.float32)],
            verbosity=nsight.VerbosityLevel.SILENT,
            warmup=0,
            output_prefix=str(tmp_path / "cpu" / "run_"),
        )(bench)
        assert set(chosen().to_dataframe()["Backend"]) == {"cpu"}
        assert not list(tmp_path.glob("cpu/*.ncu-rep"))
    finally:
        tools.reset()


def test_where_ncu_cannot_run_one_line_says_so_and_durations_come_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NSIGHT_LAB_NCU", str(tmp_path / "none"))  # no ncu there
    tools.reset()
    prefix = str(tmp_path / "out" / "run_")
    profiled = nsight.analyze.kernel(
        configs=[(64, np.float32)],
        verbosity=nsight.VerbosityLevel.SILENT,
        runs=2,
        output_prefix=prefix,
    )(bench)
    with pytest.warns(RuntimeWarning) as caught:
        frame = profiled().to_dataframe()
    lines = [str(w.message) for w in caught]
    assert len(lines) == 1
    assert lines[0].startswith("output_prefix: ncu cannot run here (")
    assert "so no .ncu-rep is kept; the durations come from the cpu backend" in lines[0]
    assert set(frame["Backend"]) == {"cpu"}
    assert frame["Metric"].tolist() == ["gpu__time_duration.sum"]
    assert (frame["NumRuns"] == 2).all()
    assert not list(tmp_path.glob("out/*.ncu-rep"))
    # Shown (INFO), the line is the session's note in the header: no warning too.
    shown = nsight.analyze.kernel(
        configs=[(64, np.float32)], runs=1, output_prefix=prefix
    )(bench)
    session_id = shown().session_id  # filterwarnings=error: a warning would raise
    assert session_id is not None
    with RunStore() as store:
        notes = store.get_session(session_id).notes
    assert [n for n in notes if n.startswith("output_prefix")] == [lines[0]]
