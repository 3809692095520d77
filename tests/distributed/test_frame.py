"""Per-rank rows of the results DataFrame (and none for single-rank sessions)."""

from __future__ import annotations

import statistics

import pytest

from nsight_lab.contract.records import TIME_METRIC, RunRecord
from nsight_lab.results import summary_rows, to_dataframe
from nsight_lab.results.ranks import SPAN_RANK


def test_one_row_per_rank_after_the_span_row(ranked, session_info, step):
    frame = to_dataframe(ranked(), session_info(), [])
    time_rows = frame[frame["Metric"] == TIME_METRIC]
    assert list(time_rows["Rank"]) == [SPAN_RANK, 0, 1]
    assert list(time_rows["Device"]) == ["cpu", "cpu", "cpu"]
    span, r0, r1 = (time_rows.iloc[i] for i in range(3))
    # Rank 1 started 100 ns after rank 0 and ran longer: span = 100 + its duration.
    assert span["AvgValue"] == pytest.approx(
        statistics.mean(100 + d1 for _, d1 in step)
    )
    assert r0["AvgValue"] == pytest.approx(statistics.mean(d0 for d0, _ in step))
    assert r1["AvgValue"] == pytest.approx(statistics.mean(d1 for _, d1 in step))
    assert r1["MedianValue"] == pytest.approx(statistics.median(d1 for _, d1 in step))
    assert r1["StdDev"] == pytest.approx(statistics.stdev(d1 for _, d1 in step))
    assert r0["NumRuns"] == r1["NumRuns"] == len(step)
    # Every run's span is at least each rank's own duration in it.
    assert span["MinValue"] >= max(r0["MinValue"], r1["MinValue"])
    assert span["MaxValue"] >= max(r0["MaxValue"], r1["MaxValue"])
    # Rank 1 was the straggler of every run.
    assert list(time_rows["StragglerRank"]) == [1, 1, 1]
    assert list(time_rows["StragglerRuns"]) == [len(step), 0, len(step)]
    # Rank and Device come right after the parameters, before AvgValue.
    columns = list(frame.columns)
    assert columns[columns.index("Rank") + 1] == "Device"
    assert columns[columns.index("Device") + 1] == "AvgValue"
    # No per-rank name is a Metric row of its own.
    assert not frame["Metric"].str.startswith("rank__").any()


def test_rank_rows_are_normalized_as_their_span_row(ranked, session_info, step):
    frame = to_dataframe(ranked(), session_info(), [], normalize_against="step")
    time_rows = frame[frame["Metric"] == TIME_METRIC]
    span, _, r1 = (time_rows.iloc[i] for i in range(3))
    span_mean = statistics.mean(100 + d1 for _, d1 in step)
    span_median = statistics.median(100 + d1 for _, d1 in step)
    assert span["AvgValue"] == pytest.approx(1.0)
    assert span["NormalizationValue"] == pytest.approx(span_mean)
    # A rank's mean over the span's mean, its median over the span's median, and
    # its spread as measured (nsight-python's normalization, and nsight-lab's).
    assert r1["AvgValue"] == pytest.approx(
        statistics.mean(d1 for _, d1 in step) / span_mean
    )
    assert r1["MedianValue"] == pytest.approx(
        statistics.median(d1 for _, d1 in step) / span_median
    )
    assert r1["StdDev"] == pytest.approx(statistics.stdev(d1 for _, d1 in step))


def test_per_rank_telemetry_columns_come_from_each_gpu(ranked, session_info):
    frame = to_dataframe(ranked(telemetry=True), session_info("events"), [])
    rows = frame[frame["Rank"] >= 0].set_index("Rank")
    assert rows.loc[0, "SMClockMHz"] == 1900.0
    assert rows.loc[1, "SMClockMHz"] == 1800.0
    assert rows.loc[1, "TemperatureCMax"] == 41.0
    assert list(rows["Device"]) == ["cuda:0", "cuda:1"]
    span = frame[frame["Rank"] == SPAN_RANK].iloc[0]
    assert span["Device"] == "cuda:0,cuda:1"


def test_the_summary_table_shows_rank_and_device(ranked, session_info):
    rows = summary_rows(to_dataframe(ranked(), session_info(), []))
    assert [(r["Rank"], r["Device"]) for r in rows] == [
        ("span", "cpu"),
        ("0", "cpu"),
        ("1", "cpu"),
    ]


def test_a_single_rank_session_keeps_the_nsight_python_frame(session_info):
    record = RunRecord(
        session_id=1,
        config_index=0,
        config={},
        run_index=0,
        annotation="a",
        duration_ns=5.0,
        backend="cpu",
    )
    frame = to_dataframe([record], session_info(), [])
    assert "Rank" not in frame.columns
    assert "Device" not in frame.columns
    assert "StragglerRank" not in frame.columns
