"""The results DataFrame: work columns without peaks, medians for verdicts."""

from __future__ import annotations

import math
import shutil
import statistics
from pathlib import Path

import pytest

from nsight_lab.cli import reports
from nsight_lab.contract.records import TIME_METRIC, RunRecord, SessionInfo
from nsight_lab.results import session_results, summary_rows, to_dataframe
from nsight_lab.roofline.placement import (
    ROOFLINE_COLUMNS,
    WORK_COLUMNS,
    Peaks,
    peaks_for,
)
from nsight_lab.store.run_store import RunStore
from nsight_lab.text.units import format_number

H200 = peaks_for("NVIDIA H200")
SESSION = SessionInfo(id=1, status="done", backend="cpu", created_at="2026-01-01")
# Memory bound on the H200: 1 FLOP per 12 bytes, far below the ridge.
MODEL = {"model__flops": 1e6, "model__bytes_read": 8e6, "model__bytes_written": 4e6}
# A made-up device whose ridge (10 FLOP/byte) sits between the two regions' intensities.
SMALL = Peaks(
    device="test", flops_per_s={"fp32": 1e12}, dram_bytes_per_s=1e11, source="test"
)


def _rec(annotation: str, run: int, duration_ns: float, metrics: dict) -> RunRecord:
    return RunRecord(
        session_id=1,
        config_index=0,
        config={},
        run_index=run,
        annotation=annotation,
        duration_ns=duration_ns,
        backend="cpu",
        metrics=metrics,
    )


def _time_row(frame, annotation: str):
    rows = frame[(frame["Annotation"] == annotation) & (frame["Metric"] == TIME_METRIC)]
    assert len(rows) == 1
    return rows.iloc[0]


def _durations(*, slow_run: bool) -> list[float]:
    durations = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1000.0, 1002.0, 998.0]
    if slow_run:
        durations[3] *= 100
    return durations


def test_work_columns_are_filled_without_peaks() -> None:
    records = [_rec("r", i, d, MODEL) for i, d in enumerate([1000.0, 3000.0, 2000.0])]
    row = _time_row(to_dataframe(records, SESSION, [], peaks=None), "r")
    assert row["FLOPs"] == 1e6
    assert (row["FLOPsSource"], row["BytesSource"]) == ("modelled", "modelled")
    assert (row["BytesRead"], row["BytesWritten"]) == (8e6, 4e6)
    assert row["ArithmeticIntensity"] == pytest.approx(1e6 / 12e6)
    # Rates over the median duration (2000 ns), not the mean.
    assert row["AchievedTFLOPs"] == pytest.approx(1e6 / 2000e-9 / 1e12)
    assert row["AchievedGBps"] == pytest.approx(12e6 / 2000e-9 / 1e9)
    # Only the roof needs peaks.
    for column in set(ROOFLINE_COLUMNS) - set(WORK_COLUMNS):
        assert row[column] == "" or math.isnan(row[column]), column
    with_peaks = _time_row(to_dataframe(records, SESSION, [], peaks=H200), "r")
    for column in WORK_COLUMNS:
        assert with_peaks[column] == row[column], column
    assert with_peaks["Bound"] == "memory"


def test_no_work_model_leaves_the_work_columns_empty() -> None:
    records = [_rec("r", i, 1000.0, {}) for i in range(3)]
    row = _time_row(to_dataframe(records, SESSION, [], peaks=None), "r")
    assert math.isnan(row["FLOPs"])
    assert row["FLOPsSource"] == ""


def test_one_slow_run_does_not_flip_the_verdict() -> None:
    # Intensity 12 FLOP/byte, just above SMALL's ridge of 10: compute bound.
    work = {"model__flops": 12e4, "model__bytes_read": 1e4, "model__bytes_written": 0}

    def frame(*, slow_run: bool):
        durations = _durations(slow_run=slow_run)
        records = [_rec("r", i, d, work) for i, d in enumerate(durations)]
        return to_dataframe(records, SESSION, [], peaks=SMALL)

    calm, noisy = (
        _time_row(frame(slow_run=False), "r"),
        _time_row(frame(slow_run=True), "r"),
    )
    assert noisy["AvgValue"] > 10 * calm["AvgValue"]  # AvgValue stays the mean
    assert noisy["Bound"] == calm["Bound"] == "compute"
    for row, slow_run in ((calm, False), (noisy, True)):
        median = statistics.median(_durations(slow_run=slow_run))
        assert row["MedianValue"] == pytest.approx(median)
        assert row["PctOfRoof"] == pytest.approx(12e4 / (median * 1e-9) / 1e12 * 100)
    assert noisy["AchievedTFLOPs"] == pytest.approx(calm["AchievedTFLOPs"], rel=0.01)
    assert noisy["PctOfRoof"] == pytest.approx(calm["PctOfRoof"], rel=0.01)


def test_normalization_is_nsight_pythons_with_a_robust_median_beside_it() -> None:
    def frame(*, slow_run: bool):
        records = [
            _rec("ref", i, d, {}) for i, d in enumerate(_durations(slow_run=slow_run))
        ]
        records += [_rec("r", i, 2000.0 + i, {}) for i in range(8)]
        return to_dataframe(records, SESSION, [], normalize_against="ref")

    calm, noisy = frame(slow_run=False), frame(slow_run=True)
    for data, slow_run in ((calm, False), (noisy, True)):
        durations = _durations(slow_run=slow_run)
        r = _time_row(data, "r")
        # nsight-python's: the mean by the target's mean, which is the divisor.
        assert r["AvgValue"] == pytest.approx(2003.5 / statistics.mean(durations))
        assert r["NormalizationValue"] == pytest.approx(statistics.mean(durations))
        # nsight-lab's: the median by the target's median.
        assert r["MedianValue"] == pytest.approx(2003.5 / statistics.median(durations))
        assert r["MedianNormalizationValue"] == pytest.approx(
            statistics.median(durations)
        )
        # The rest as measured, the unit too (nsight-python's frame).
        assert (r["MinValue"], r["MaxValue"], r["Unit"]) == (2000.0, 2007.0, "ns")
        assert r["Normalized"] == "ref"
        assert r["NormalizedColumns"] == "AvgValue,MedianValue"
        assert _time_row(data, "ref")["AvgValue"] == pytest.approx(1.0)
    # One slow run of the target moves nsight-python's ratio, not the median's.
    calm_r, noisy_r = _time_row(calm, "r"), _time_row(noisy, "r")
    assert noisy_r["MedianValue"] == pytest.approx(calm_r["MedianValue"], rel=0.01)
    assert noisy_r["AvgValue"] < calm_r["AvgValue"] * 0.99
    # The summary table shows the median's ratio in "x ref", not nanoseconds.
    (row,) = [s for s in summary_rows(noisy) if s["Region"] == "r"]
    # (a cpu session: its duration is the host's, and its column says so)
    ratio = format_number(noisy_r["MedianValue"])
    assert row["Duration (host timer)"] == f"{ratio}x ref"


FIXTURE = Path(__file__).parent / "fixtures" / "h200_block.sqlite"


def test_a_stored_sessions_frame_on_the_h200_fixture(nsight_home: Path) -> None:
    """results.session_results (results/stored.py) on real H200 sessions.

    The shapes are those the pre-split results.py gave at b0053db; each time row's
    median is the median of the session's stored durations of that region.
    """
    nsight_home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURE, nsight_home / "store.sqlite")
    # 44 columns at b0053db; issue 28 adds GPUBusyPct, Flag, FlagCause, FlagAction
    # and Note (analysis/validity.py); issue 30 SMClockMHzMax.
    shapes = {1: (12, 50), 2: (12, 50), 3: (12, 50), 4: (36, 50), 5: (204, 50)}
    shapes[6] = (16, 51)  # the sweep's parameter column
    assert reports.session_results is session_results  # the CLI reads the same
    with RunStore() as store:
        for sid, shape in shapes.items():
            frame = session_results(store, sid)
            assert frame.shape == shape, sid
            runs = store.runs(sid)
            for row in frame[frame["Metric"] == TIME_METRIC].to_dict("records"):
                ci = int(row["n"]) if "n" in row else None
                durations = [
                    r.duration_ns
                    for r in runs
                    if r.annotation == row["Annotation"]
                    and (ci is None or r.config.get("n") == ci)
                ]
                assert row["MedianValue"] == pytest.approx(
                    statistics.median(durations)
                ), (sid, row["Annotation"])
