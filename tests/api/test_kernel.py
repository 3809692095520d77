"""``nsight_lab.api``'s ``analyze.kernel``, parameter by parameter, on the cpu backend.

Real measurements: the functions sum and sort lists; nothing is mocked. Each call is a
store session, checked through the store.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pytest

import nsight_lab as nsight
from nsight_lab.api import tools
from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.options import ThermalSettings
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from pathlib import Path

SILENT = nsight.VerbosityLevel.SILENT


@pytest.fixture(autouse=True)
def _cpu() -> Any:
    nsight.use_backend("cpu")
    yield
    tools.reset()


def work(n: int) -> None:
    with nsight.annotate("sum"):
        sum(range(n))
    with nsight.annotate("sort"):
        sorted(range(n), reverse=True)


def kernel(**kwargs: Any) -> Any:
    kwargs.setdefault("verbosity", SILENT)
    kwargs.setdefault("warmup", 0)
    return nsight.analyze.kernel(**kwargs)


def _session(results: nsight.ProfileResults) -> Any:
    assert results.session_id is not None
    with RunStore() as store:
        return store.get_session(results.session_id), store.runs(results.session_id)


# -- configs ---------------------------------------------------------------------------


def test_bare_decorator_with_call_arguments_is_one_config() -> None:
    results = nsight.analyze.kernel(work)(3000)
    frame = results.to_dataframe()
    assert set(frame["n"]) == {3000}
    assert (frame["NumRuns"] == 1).all()  # nsight-python's default: one run
    session, runs = _session(results)
    assert session.status == "completed"
    assert session.name == "work"
    assert len(runs) == 2  # two regions, one run


def test_configs_at_decoration_at_call_scalars_and_defaults() -> None:
    def two(n: int, reverse: bool = False, *, step: int = 1) -> None:  # noqa: FBT001, FBT002
        with nsight.annotate("sort"):
            sorted(range(0, n, step), reverse=reverse)

    at_decoration = kernel(configs=[(1000,), (2000, True)], runs=2)
    with pytest.raises(nsight.exceptions.ProfilerException, match="same number"):
        at_decoration(two)()
    frame = kernel(configs=[(1000,), (2000,)], runs=2)(two)().to_dataframe()
    assert frame["reverse"].tolist() == [False, False]  # the default filled in
    assert frame["step"].tolist() == [1, 1]  # keyword-only, by its default
    later = kernel(runs=2)(two)(configs=[(500, True, 2), (800, False, 1)])
    assert later.to_dataframe()[["n", "reverse", "step"]].to_numpy().tolist() == [
        [500, True, 2],
        [800, False, 1],
    ]
    single = kernel(configs=[1000, 2000])(work)().to_dataframe()  # scalars: one param
    assert sorted(set(single["n"])) == [1000, 2000]


def test_a_function_without_parameters_needs_no_configs() -> None:
    def none() -> None:
        with nsight.annotate("r"):
            sum(range(100))

    frame = kernel(runs=2)(none)().to_dataframe()
    assert list(frame["Annotation"]) == ["r"]


def test_objects_as_config_values_reach_the_function_and_the_frame() -> None:
    seen: list[Any] = []

    def typed(n: int, dtype: Any) -> None:
        seen.append(dtype)
        with nsight.annotate("r"):
            np.zeros(n, dtype=dtype).sum()

    results = kernel(configs=[(100, np.float32), (100, np.int64)])(typed)()
    frame = results.to_dataframe()
    assert set(seen) == {np.float32, np.int64}  # the objects, not their text
    assert frame["dtype"].tolist() == [np.float32, np.int64]
    session, _ = _session(results)
    assert [c["dtype"] for c in session.configs] == [str(np.float32), str(np.int64)]


def test_keyword_arguments_are_refused_as_nsight_python_does() -> None:
    with pytest.raises(nsight.exceptions.ProfilerException, match="Keyword arguments"):
        kernel()(work)(n=5)


# -- runs, metrics, derive, normalize -----------------------------------------------


def test_runs_and_real_measurements() -> None:
    frame = kernel(configs=[(2000,), (200_000,)], runs=4)(work)().to_dataframe()
    assert (frame["NumRuns"] == 4).all()
    sort = frame[frame["Annotation"] == "sort"].set_index("n")["AvgValue"]
    assert sort[200_000] > sort[2000]  # measured, not made up
    with pytest.raises(ValueError, match="runs must be an integer >= 1"):
        kernel(runs=0)


def test_metrics_beyond_the_duration_need_a_counter_backend() -> None:
    with pytest.raises(ValueError, match="not a Nsight Compute metric name"):
        kernel(metrics=["not a metric"])
    profiled = kernel(metrics=["dram__bytes_read.sum"], configs=[(10,)])(work)
    with pytest.raises(ValueError, match="hardware counters"):
        profiled()


def test_derive_metric_value_tuple_and_dict() -> None:
    def per_item(time_ns: float, n: int) -> float:
        return time_ns / n

    def tflops(time_ns: float, n: int) -> tuple[float, str]:
        return n / time_ns, "items/ns"

    def both(time_ns: float, n: int) -> dict[str, Any]:
        return {"rate": (n / time_ns, "items/ns"), "raw": time_ns}

    with pytest.warns(UserWarning, match="Derived metric 'per_item' does not have"):
        frame = kernel(configs=[(5000,)], runs=2, derive_metric=per_item)(work)()
    rows = frame.to_dataframe().set_index(["Annotation", "Metric"])
    assert math.isnan(rows.loc[("sum", "per_item"), "Unit"])
    assert rows.loc[("sum", "per_item"), "AvgValue"] == pytest.approx(
        rows.loc[("sum", TIME_METRIC), "AvgValue"] / 5000
    )
    units = kernel(configs=[(5000,)], derive_metric=tflops)(work)().to_dataframe()
    assert set(units.loc[units["Metric"] == "tflops", "Unit"]) == {"items/ns"}
    with pytest.warns(UserWarning, match="'raw' does not have"):
        many = kernel(configs=[(5000,)], derive_metric=both)(work)().to_dataframe()
    assert {"rate", "raw"} <= set(many["Metric"])
    lam = kernel(configs=[(100,)], derive_metric=lambda t, n: (t * n, "x"))(work)()
    assert "<lambda>" in set(lam.to_dataframe()["Metric"])


def test_derive_metric_with_the_wrong_parameters_says_so() -> None:
    def wrong(time_ns: float) -> float:
        return time_ns

    profiled = kernel(configs=[(100,)], derive_metric=wrong)(work)
    with pytest.raises(
        ValueError, match=r"derive_metric expects 2 parameters \(1 metric"
    ):
        profiled()


def test_normalize_against_divides_by_the_target() -> None:
    frame = kernel(configs=[(3000,), (6000,)], runs=3, normalize_against="sum")(work)()
    rows = frame.to_dataframe()
    assert (rows["Normalized"] == "sum").all()
    base = rows[rows["Annotation"] == "sum"]
    assert base["MedianValue"].tolist() == pytest.approx([1.0, 1.0])
    assert (rows["NormalizationValue"] > 0).all()
    with pytest.raises(ValueError, match="no region named 'nope'"):
        kernel(configs=[(10,)], normalize_against="nope")(work)()


# -- kernels, controls, thermal -----------------------------------------------------


def test_closed_options_are_checked_at_decoration_with_nsight_pythons_words() -> None:
    with pytest.raises(ValueError, match="Invalid clock_control 'max'"):
        kernel(clock_control="max")
    with pytest.raises(ValueError, match="Invalid cache_control 'some'"):
        kernel(cache_control="some")
    with pytest.raises(ValueError, match="Invalid replay_mode 'app'"):
        kernel(replay_mode="app")
    with pytest.raises(ValueError, match=r"thermal_cont .* must be greater"):
        kernel(thermal_wait=20, thermal_cont=10)
    with pytest.raises(TypeError, match="combine_kernel_metrics must be a callable"):
        kernel(combine_kernel_metrics=3)


def test_kernel_and_thermal_settings_reach_the_options() -> None:
    def add(x: float, y: float) -> float:
        return x + y

    results = kernel(
        configs=[(100,)],
        combine_kernel_metrics=add,
        ignore_kernel_list=["flush_kernel"],
        replay_mode="range",
        clock_control="base",
        cache_control="none",
        thermal_mode="manual",
        thermal_wait=5,
        thermal_cont=15,
        thermal_timeout=60,
        thermal_device=0,
    )(work)()
    session, _ = _session(results)
    options = session.options
    assert options["combine"] == "add"
    assert options["ignore_kernels"] == ["flush_kernel"]
    assert options["replay_mode"] == "range"
    assert options["clock_control"] == "base"
    assert options["cache_control"] == "none"
    assert options["thermal"] == "manual"
    assert options["thermal_settings"] == {
        "wait_c": 5,
        "cont_c": 15,
        "timeout_s": 60,
        "device": 0,
    }
    # The cpu backend says what has no effect on it.
    assert any("--clock-control has no effect" in n for n in session.notes)
    default = _session(kernel(configs=[(100,)])(work)())[0].options
    assert default["combine"] == "single"  # nsight-python's: one kernel per region


def test_thermal_guard_waits_by_the_given_thresholds() -> None:
    from nsight_lab.backends.gpu import thermal_guard
    from nsight_lab.options import ProfileOptions

    readings = iter([4.0, 8.0, 16.0])
    notes: list[str] = []
    options = ProfileOptions(
        thermal="manual", thermal_settings=ThermalSettings(wait_c=5, cont_c=15)
    )
    guard = thermal_guard(options, lambda: next(readings), None, 0, notes)
    assert guard is not None
    guard.sleep = lambda _s: None
    waits: list[float] = []
    guard.wait(lambda headroom, _waited: waits.append(headroom))
    assert waits == [4.0, 8.0]  # paused at 4 <= 5, resumed once 16 >= 15
    assert (
        thermal_guard(ProfileOptions(thermal="off"), lambda: 0.0, None, 0, []) is None
    )
    auto = thermal_guard(ProfileOptions(), lambda: 30.0, None, 0, [])
    assert auto is not None
    assert (auto.wait_at_c, auto.resume_at_c, auto.timeout_s) == (10, 20, 180)
    assert auto.adaptive  # nsight-python's auto: the resume threshold moves
    assert not guard.adaptive  # manual: it stays


def test_kernel_fold_combines_ignores_and_spans() -> None:
    from nsight_lab.backends.cupti import KernelActivity, combine_kernels
    from nsight_lab.kernels import KernelFold

    kernels = [
        KernelActivity("gemm", 100, 300, 1),
        KernelActivity("flush_kernel", 300, 1300, 2),
        KernelActivity("relu", 1400, 1500, 3),
    ]
    assert combine_kernels(kernels, KernelFold()) == 1300
    ignore = frozenset({"flush_kernel"})
    assert combine_kernels(kernels, KernelFold(ignore=ignore)) == 300
    product = KernelFold(combine="mul", function=lambda x, y: x * y, ignore=ignore)
    assert combine_kernels(kernels, product) == 200 * 100
    span = KernelFold(replay_mode="range", ignore=ignore)
    assert combine_kernels(kernels, span) == 1400  # 100 .. 1500


# -- output, verbosity, collectors ----------------------------------------------------


def test_output_csv_writes_nsight_pythons_two_files(tmp_path: Path) -> None:
    prefix = str(tmp_path / "out" / "run1_")
    profiled = kernel(
        configs=[(100,), (200,)], runs=2, output_prefix=prefix, output_csv=True
    )(work)
    profiled()
    profiled()
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == [
        "run1_processed_data-work-0.csv",
        "run1_processed_data-work-1.csv",
        "run1_profiled_data-work-0.csv",
        "run1_profiled_data-work-1.csv",
    ]
    raw = pd.read_csv(tmp_path / "out" / "run1_profiled_data-work-0.csv")
    assert list(raw.columns) == [
        "Annotation", "Value", "Metric", "Kernel", "GPU", "Host", "ComputeClock",
        "MemoryClock", "Unit", "n",
    ]  # fmt: skip
    assert len(raw) == 2 * 2 * 2  # regions x configs x runs
    processed = pd.read_csv(tmp_path / "out" / "run1_processed_data-work-0.csv")
    assert len(processed) == 4
    assert "AvgValue" in processed.columns
    nothing = tmp_path / "none_"
    kernel(configs=[(100,)], output_prefix=str(nothing))(work)()
    assert not list(tmp_path.glob("none_*"))  # output_csv=False writes no CSV


def test_verbosity(capsys: pytest.CaptureFixture[str]) -> None:
    kernel(configs=[(100,)], verbosity=SILENT)(work)()
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == ""
    kernel(configs=[(100,)], verbosity=nsight.VerbosityLevel.INFO)(work)()
    err = capsys.readouterr().err
    assert "nsight-lab work session" in err
    assert "backend cpu" in err
    assert "completed" in err
    # Levels are compared, as nsight-python does: below INFO is silent, DEBUG
    # adds the backend and each config.
    kernel(configs=[(100,)], verbosity=2)(work)()
    assert capsys.readouterr() == ("", "")
    kernel(configs=[(100,), (200,)], verbosity=nsight.VerbosityLevel.DEBUG)(work)()
    out = capsys.readouterr().out
    assert "[nsight-lab] work: backend cpu" in out
    assert "config 1: n=200" in out
    with pytest.raises(ValueError, match="Invalid verbosity 'loud'"):
        kernel(verbosity="loud")  # type: ignore[arg-type]


def test_info_collectors_every_scope() -> None:
    calls: list[tuple[str, Any]] = []

    @nsight.experimental.collect(scope=nsight.CollectionScope.ONCE)
    def version() -> str:
        calls.append(("once", None))
        return "v1"

    @nsight.experimental.collect(scope="config")
    def squared(n: int) -> int:
        calls.append(("config", n))
        return n * n

    @nsight.experimental.collect(scope="run")
    def tick(*config: Any) -> int:
        calls.append(("run", config))
        return len([c for c in calls if c[0] == "run"])

    def region(annotation_name: str, *config: Any) -> str:
        calls.append(("annotation", annotation_name))
        return f"{annotation_name}-{config[0]}"

    frame = kernel(
        configs=[(100,), (200,)],
        runs=3,
        warmup=2,  # warm-up runs collect nothing
        info_collectors=[version, squared, tick, ("region", region, "annotation")],
    )(work)().to_dataframe()
    kinds = [k for k, _ in calls]
    assert kinds.count("once") == 1
    assert kinds.count("config") == 2
    assert kinds.count("run") == 6
    assert kinds.count("annotation") == 12  # 2 regions x 6 measured runs
    assert (frame["version"] == "v1").all()
    assert (frame["squared_Avg"] == frame["n"] ** 2).all()
    assert {"tick_Avg", "tick_Std", "tick_Min", "tick_Max"} <= set(frame.columns)
    assert (frame["tick_Max"] - frame["tick_Min"] == 2).all()  # 3 runs per config
    assert (frame["region"] == frame["Annotation"] + "-" + frame["n"].astype(str)).all()


def test_info_collector_objects_are_taken_as_nsight_python_takes_them() -> None:
    halves = nsight.InfoCollector(
        "half", lambda n: n / 2, nsight.CollectionScope.CONFIG
    )
    frame = kernel(configs=[(100,), (300,)], runs=2, info_collectors=[halves])(work)()
    frame = frame.to_dataframe()
    assert (frame["half_Avg"] == frame["n"] / 2).all()


def test_info_collector_errors() -> None:
    def plain() -> int:
        return 1

    with pytest.raises(ValueError, match=r"missing @nsight\.experimental\.collect"):
        kernel(info_collectors=[plain])
    with pytest.raises(ValueError, match="Invalid collection scope 'always'"):
        nsight.experimental.collect(plain, scope="always")
    marked = nsight.experimental.collect(plain, scope="once")
    with pytest.raises(nsight.exceptions.ProfilerException, match="Duplicate"):
        kernel(info_collectors=[marked, ("plain", plain, "run")])(work)
    with pytest.raises(nsight.exceptions.ProfilerException, match="reserved"):
        kernel(info_collectors=[("GPU", plain, "once")])(work)
    with pytest.raises(nsight.exceptions.ProfilerException, match="parameter"):
        kernel(info_collectors=[("n", plain, "once")])(work)

    def broken(*config: Any) -> int:  # noqa: ARG001  (a collector's signature)
        raise ZeroDivisionError

    with pytest.warns(RuntimeWarning, match="'broken' \\(run scope\\) raised"):
        frame = kernel(
            configs=[(10,)], runs=2, info_collectors=[("broken", broken, "run")]
        )(work)().to_dataframe()
    assert frame["broken"].isna().all()


# -- annotate, return values, plot, tools --------------------------------------------


def test_annotate_ignore_failures_leaves_the_run_out() -> None:
    calls = [0]

    def flaky(n: int) -> None:
        calls[0] += 1
        with nsight.annotate("flaky", ignore_failures=True):
            sum(range(n))
            if calls[0] % 2 == 0:
                msg = "every other run fails"
                raise RuntimeError(msg)
        with nsight.annotate("steady"):
            sum(range(n))

    frame = (
        kernel(configs=[(1000,)], runs=6)(flaky)()
        .to_dataframe()
        .set_index("Annotation")
    )
    assert frame.loc["flaky", "NumRuns"] == 3
    assert frame.loc["steady", "NumRuns"] == 6
    assert frame.loc["flaky", "AvgValue"] > 0

    def strict() -> None:
        with nsight.annotate("x"):
            msg = "fails"
            raise RuntimeError(msg)

    with pytest.raises(RuntimeError, match="fails"):
        strict()  # without ignore_failures it propagates


def test_ignore_failures_outside_regions() -> None:
    with nsight.analyze.ignore_failures():
        msg = "swallowed"
        raise ValueError(msg)


def test_a_returned_value_is_dropped_with_nsight_pythons_warning() -> None:
    def returns(n: int) -> int:
        with nsight.annotate("r"):
            return sum(range(n))

    with pytest.warns(RuntimeWarning, match="returns a value, but the return value"):
        result = kernel(configs=[(10,)])(returns)()
    assert isinstance(result, nsight.ProfileResults)


def test_plot_writes_the_png_and_keeps_the_figure(tmp_path: Path) -> None:
    png = tmp_path / "plot.png"

    @nsight.analyze.plot(
        str(png), title="T", annotate_points=True, show_aggregate="geomean"
    )
    @nsight.analyze.kernel(
        configs=[(1000,), (2000,)], runs=2, verbosity=SILENT, warmup=0
    )
    def bench(n: int) -> None:
        work(n)

    result = bench()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fig = result.figure
    names = {t.name for t in fig.data}
    assert names == {"sum", "sort"}
    assert "Geomean" in list(fig.layout.xaxis.categoryarray)
    assert "(avg: 2 runs)" in fig.layout.yaxis.title.text


def test_plot_chooses_its_metric_as_nsight_python() -> None:
    def rate(t: float, n: int) -> tuple[float, str]:
        return n / t, "1/ns"

    with pytest.raises(ValueError, match="Invalid plot_type 'pie'"):
        nsight.analyze.plot(plot_type="pie")
    profiled = nsight.analyze.plot("")(
        kernel(configs=[(100,)], derive_metric=rate)(work)
    )
    with pytest.raises(ValueError, match="Cannot visualize multiple metrics"):
        profiled()
    missing = nsight.analyze.plot("", metric="nope")(kernel(configs=[(100,)])(work))
    with pytest.raises(ValueError, match="Metric 'nope' not found"):
        missing()


def test_plot_panels_variants_and_a_matplotlib_callback(tmp_path: Path) -> None:
    seen: list[Any] = []

    def styled(fig: Any) -> None:  # nsight-python example 06's kind of callback
        fig.suptitle("matplotlib only")
        fig.set_figwidth(7.5)
        fig.get_axes()[0].grid(visible=True, alpha=0.3)
        seen.append(fig)

    @nsight.analyze.plot(
        str(tmp_path / "p.png"),
        col_panels=["mode"],
        variant_fields=["step"],
        variant_annotations=["sum"],
        plot_type="bar",
        plot_callback=styled,
    )
    @nsight.analyze.kernel(
        configs=[(100, "a", 1), (100, "b", 2), (200, "a", 1)],
        verbosity=SILENT,
        warmup=0,
    )
    def grid(n: int, mode: str, step: int) -> None:  # noqa: ARG001  (a panel field)
        with nsight.annotate("sum"):
            sum(range(0, n, step))

    result = grid()
    # nsight-python's callbacks take a matplotlib figure: it got the same figure
    # drawn with matplotlib, and the PNG is that drawing as it styled it.
    (drawn,) = seen
    assert drawn._suptitle.get_text() == "matplotlib only"  # noqa: SLF001
    assert drawn.get_figwidth() == 7.5
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    names = {t.name for t in result.figure.data}
    assert names == {"sum step=1", "sum step=2"}
    assert len({t.xaxis for t in result.figure.data}) == 2  # one panel per mode


def test_tools_choose_the_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    nsight.use_backend(None)
    # As nsight-python: NCU is active from the import on, cannot be switched for
    # CUPTI, and stays active through deactivate() with a warning.
    assert nsight.get_active_tool() is nsight.Tool.NCU
    assert nsight.Tool.NCU == "ncu"  # a str enum
    nsight.activate(nsight.Tool.NCU)  # the active tool again: nothing happens
    with pytest.raises(RuntimeError, match="is already active; cannot switch"):
        nsight.activate(nsight.Tool.CUPTI)
    with pytest.warns(RuntimeWarning, match="cannot be deactivated"):
        nsight.deactivate()
    assert nsight.get_active_tool() is nsight.Tool.NCU
    with pytest.raises(ValueError, match=r"tool must be a nsight\.Tool member"):
        nsight.activate("cupti")  # type: ignore[arg-type]
    # With NSPY_NCU_INIT_AT_IMPORT=0 no tool is active until one is chosen.
    monkeypatch.setenv("NSPY_NCU_INIT_AT_IMPORT", "0")
    tools.reset()
    assert nsight.get_active_tool() is None
    nsight.activate(nsight.Tool.CUPTI)
    assert nsight.get_active_tool() is nsight.Tool.CUPTI
    from nsight_lab.api.tools import default_backend

    assert default_backend() == "cupti"
    nsight.deactivate()
    assert nsight.get_active_tool() is None
    assert default_backend() == "auto"
    nsight.use_backend("cpu")
    assert default_backend() == "cpu"
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        nsight.use_backend("gpu")
    explicit = kernel(configs=[(10,)], backend="cpu")(work)()
    assert set(explicit.to_dataframe()["Backend"]) == {"cpu"}


def test_a_failing_function_keeps_its_session() -> None:
    def fails(n: int) -> None:
        with nsight.annotate("r"):
            sum(range(n))
        if n > 100:
            msg = "second config"
            raise KeyError(msg)

    with pytest.raises(KeyError):
        kernel(configs=[(10,), (1000,)], runs=2)(fails)()
    with RunStore() as store:
        (session,) = store.list_sessions(limit=1)
        assert session.status == "failed"
        assert len(store.runs(session.id)) == 2  # the first config's runs stand


def test_warnings_point_at_the_callers_code() -> None:
    def per_item(t: float, n: int) -> float:
        return t / n

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel(configs=[(10,)], derive_metric=per_item)(work)()
    assert caught
    assert all(w.filename == __file__ for w in caught)


def test_a_plotly_callback_styles_the_plotly_figure(tmp_path: Path) -> None:
    @nsight.analyze.plot(
        str(tmp_path / "p.png"),
        plot_callback=lambda fig: fig.update_layout(title_text="plotly styled"),
    )
    @nsight.analyze.kernel(configs=[(100,), (200,)], verbosity=SILENT, warmup=0)
    def bench(n: int) -> None:
        with nsight.annotate("sum"):
            sum(range(n))

    assert bench().figure.layout.title.text == "plotly styled"


def test_plot_size_labels_x_keys_and_printed_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    @nsight.analyze.plot(
        str(tmp_path / "p.png"),
        ylabel="my label",
        plot_width=10,
        plot_height=7,
        x_keys=["n"],
        print_data=True,
    )
    @nsight.analyze.kernel(configs=[(100, "a"), (200, "a")], verbosity=SILENT, warmup=0)
    def bench(n: int, mode: str) -> None:  # noqa: ARG001  (a config field)
        with nsight.annotate("sum"):
            sum(range(n))

    fig = bench().figure
    # nsight-python's figsize in inches of 100 px (at least 8 x 6).
    assert (fig.layout.width, fig.layout.height) == (1000, 700)
    assert fig.layout.yaxis.title.text == "my label (avg: 1 runs)"  # as nsight-python
    (trace,) = fig.data
    assert [str(x) for x in trace.x] == ["n=100", "n=200"]  # mode is not on the axis
    out = capsys.readouterr().out
    assert "Aggregated Data (Average value and Number of Runs):" in out
    assert "gpu__time_duration.sum" in out


def test_region_rules_raise_nsight_pythons_valueerror_in_every_call() -> None:
    # nsight-python's tests catch the error inside the function, in every call: the
    # untimed modelling pass (the first warm-up's stand-in) checks the rules too.
    caught: list[str] = []

    @nsight.analyze.kernel(configs=[(8,)], runs=2, verbosity=SILENT)
    def nested(n: int) -> None:
        with nsight.annotate("outer"):
            try:
                with nsight.annotate("inner"):
                    sum(range(n))
            except ValueError as exc:
                caught.append(str(exc))
        try:
            with nsight.annotate("outer"):
                pass
        except ValueError as exc:
            caught.append(str(exc))

    nested()
    assert len(caught) == 2 * 4  # modelling pass, 1 warm-up, 2 runs; both errors
    assert caught[0].startswith("Nested annotations are not supported: region 'inner'")
    assert caught[1].startswith("Annotation name 'outer' has already been used")
