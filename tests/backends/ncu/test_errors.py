"""nsight_lab.backends.ncu.errors: reading ncu's output and saying what went wrong.

tests/backends/ncu/test_isolate.py runs the isolated path against the stand-in ``ncu``
(tests/fixtures/fake_ncu.py) for the counter-permission, unknown-metric, cell-failure
and no-kernel errors. Here, line by line: what each output line does to the progress
and the outcome, an ncu that exits without a report, which requested metrics an ncu
error names, metrics absent from the measured runs, and the metric list of
``ncu --query-metrics`` (the stand-in's).
"""

# The module is the isolated path's private half (isolate.py is its public face):
# its helpers are what there is to test.
# ruff: noqa: SLF001

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from nsight_lab.backends.ncu import errors
from nsight_lab.backends.ncu.child import CHILD_PREFIX, NVTX_MISSING
from nsight_lab.backends.ncu.report import KernelRow
from nsight_lab.errors import MeasurementError

if TYPE_CHECKING:
    from nsight_lab.contract.progress import Progress


@pytest.fixture(autouse=True)
def _fresh_metric_lists():
    errors.query_metrics.cache_clear()  # cached per ncu path: each test its own
    yield
    errors.query_metrics.cache_clear()


def _read(*lines: str) -> tuple[errors.Outcome, list[Progress], list[str]]:
    """Read ``lines`` in config 2 of 2 (3 runs each): the outcome, the progress
    snapshots the hook got after the config started, their messages."""
    outcome, seen = errors.Outcome(), []
    counts = errors.Counts(2, 3, lambda progress, _records: seen.append(progress))
    counts.start_config(1)
    seen.clear()
    for line in lines:
        errors.take_line(line, outcome, counts)
    return outcome, seen, [p.message for p in seen]


def test_each_profiled_kernel_is_counted_and_shown():
    outcome, _, shown = _read(
        '==PROF== Profiling "gemm_kernel" - 0: 0%....50%....100% - 9 passes',
        '==PROF== Profiling "relu" - 1: 0%....100% - 9 passes',
    )
    assert outcome.kernels == 2
    assert shown == [
        'config 2: profiling "gemm_kernel" (kernel 1)',
        'config 2: profiling "relu" (kernel 2)',
    ]


def test_measured_runs_are_counted_and_warmup_runs_are_not():
    _, seen, _ = _read(
        f"{CHILD_PREFIX} config 1 run -1 done",  # a warm-up run
        f"{CHILD_PREFIX} config 1 run 0 done",
        f"{CHILD_PREFIX} config 1 run 1 done",
    )
    assert len(seen) == 2  # the progress is shown once per measured run
    last = seen[-1]
    assert (last.config_index, last.runs_done_in_config, last.runs_done_total) == (
        1,
        2,
        2,
    )
    assert last.runs_planned_total == 6


def test_child_errors_warnings_and_ncu_errors_are_kept_apart():
    outcome, seen, shown = _read(
        f"{CHILD_PREFIX} warning: {NVTX_MISSING}",
        "==ERROR== something ncu said",
        f"{CHILD_PREFIX} error: ZeroDivisionError: division by zero",
        "ordinary output of the cell",
    )
    assert outcome.child_warnings == [NVTX_MISSING]
    assert outcome.errors == ["something ncu said"]
    assert outcome.child_error == "ZeroDivisionError: division by zero"
    assert (outcome.kernels, seen, shown) == (0, [], [])


def _failed(returncode: int, *tail: str, errors_seen: tuple[str, ...] = ()):
    outcome = errors.Outcome()
    outcome.returncode = returncode
    outcome.tail.extend(tail)
    outcome.errors.extend(errors_seen)
    return outcome


def test_an_ncu_that_exits_without_a_report_quotes_its_last_words(tmp_path):
    report = tmp_path / "none.ncu-rep"
    outcome = _failed(3, "==PROF== Connected", "Segmentation fault", "", "  ")
    with pytest.raises(MeasurementError) as caught:
        errors.raise_for_failure(outcome, tmp_path / "ncu", ["m.sum"], report)
    message = str(caught.value)
    assert message.startswith("ncu exited with status 3: Segmentation fault; ")
    assert "nsight-lab doctor" in message
    said = _failed(1, "last line", errors_seen=("first error", "the last error"))
    with pytest.raises(MeasurementError, match="status 1: the last error;"):
        errors.raise_for_failure(said, tmp_path / "ncu", ["m.sum"], report)


def test_a_failed_exit_with_a_report_or_a_clean_exit_is_no_failure(tmp_path):
    report = tmp_path / "r.ncu-rep"
    errors.raise_for_failure(_failed(0, "ok"), tmp_path / "ncu", [], report)
    report.write_text("[]", encoding="utf-8")
    errors.raise_for_failure(_failed(9, "partial"), tmp_path / "ncu", [], report)


def test_the_cells_failure_comes_before_the_exit_status(tmp_path):
    outcome = _failed(1, "x")
    outcome.child_error = "KeyError: 'n'"
    with pytest.raises(MeasurementError, match="the cell failed in the ncu child"):
        errors.raise_for_failure(outcome, tmp_path / "ncu", [], tmp_path / "r")


@pytest.mark.parametrize(
    ("error", "named"),
    [
        (
            r"Failed to find metric regex:^dram__bytes_reed\.sum$",
            ["dram__bytes_reed.sum"],
        ),
        ("unknown metric: sm__foo", ["sm__foo.avg"]),  # by its base name
        ("Invalid metric : sm__foobar.sum", ["sm__foobar.sum"]),
        ("no such option --frobnicate", []),
    ],
)
def test_which_requested_metrics_an_ncu_error_names(error, named):
    requested = ["dram__bytes_reed.sum", "sm__foo.avg", "sm__foobar.sum"]
    assert errors._unknown_metrics([error], requested) == named


def test_a_metric_named_by_two_errors_is_listed_once():
    found = errors._unknown_metrics(
        ["unknown metric: sm__foo", "Failed to find metric sm__foo.avg"],
        ["sm__foo.avg"],
    )
    assert found == ["sm__foo.avg"]


def _row(config: int, run: int, **metrics: float) -> KernelRow:
    return KernelRow(
        range_name=f"r [c{config} r{run}]",
        region="r",
        config_index=config,
        run_index=run,
        kernel="k",
        metrics=metrics,
    )


def test_a_metric_only_warmups_or_other_configs_have_is_absent(fake_ncu):
    rows = [
        _row(0, -1, **{"dram__bytes_read.sum": 1.0}),  # warm-up
        _row(1, 0, **{"dram__bytes_read.sum": 1.0}),  # another config
        _row(0, 0, **{"gpu__time_duration.sum": 5.0}),
    ]
    metrics = ["gpu__time_duration.sum", "dram__bytes_read.sum"]
    with pytest.raises(MeasurementError) as caught:
        errors.raise_for_absent_metrics(rows, 0, fake_ncu, metrics)
    message = str(caught.value)
    assert "'dram__bytes_read.sum'" in message
    assert "'gpu__time_duration.sum'" not in message
    assert "ncu 2025.3.1" in message  # the stand-in's version
    errors.raise_for_absent_metrics(rows, 1, fake_ncu, ["dram__bytes_read.sum"])
    errors.raise_for_absent_metrics(rows, 2, fake_ncu, metrics)  # no rows: no verdict


def test_no_rows_names_the_config_and_a_missing_nvtx():
    bare = errors.Outcome()
    assert "(config 0)" in errors.no_rows_message(0, {}, bare)
    assert "(config 1 {'n': 4})" in errors.no_rows_message(1, {"n": 4}, bare)
    assert "pip install nvtx" not in errors.no_rows_message(0, {}, bare)
    warned = errors.Outcome()
    warned.child_warnings.append(NVTX_MISSING)
    assert "pip install nvtx" in errors.no_rows_message(0, {}, warned)


def test_query_metrics_lists_the_base_names_and_nothing_when_ncu_cannot_run(
    fake_ncu, tmp_path
):
    names = errors.query_metrics(str(fake_ncu))
    assert "dram__bytes_read" in names
    assert "gpu__time_duration" in names
    assert all("__" in name and " " not in name for name in names)  # no headers
    assert len(names) == len(set(names))
    assert errors.query_metrics(str(tmp_path / "no-such-ncu")) == ()
