"""Verdicts of a comparison on synthetic sessions with known ratios (compare.py).

Each simulated pair is two sessions' runs as the store holds them (RunRecords of a
GPU backend: the between-session drift of the events backend, 0.9 %), judged by the real
comparison: the false-alarm rate where nothing changed, the detection rate of a
small slowdown, the threshold's edges, and the clock and throttle flags.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from nsight_lab.analysis.compare import (
    CLOCK_TOLERANCE,
    DEFAULT_THRESHOLD,
    Comparison,
    compare_runs,
    metric_label,
    session_verdict,
    verdict,
)
from nsight_lab.contract.records import TIME_METRIC, RunRecord, Telemetry

PAIRS = 1_000
RUNS = 20
RSD = 0.01
BACKEND = "events"  # a GPU backend: timed rows widened by its 0.9 % drift


def _runs(
    values: np.ndarray | list[float],
    *,
    session_id: int = 1,
    clock: float | None = 1980.0,
    throttled: int = 0,
    region: str = "scale",
) -> list[RunRecord]:
    return [
        RunRecord(
            session_id=session_id,
            config_index=0,
            config={"n": 4096},
            run_index=i,
            annotation=region,
            duration_ns=float(v),
            backend=BACKEND,
            telemetry=Telemetry(sm_clock_mhz=clock, throttled=i < throttled),
        )
        for i, v in enumerate(values)
    ]


def _verdicts(ratio: float, seed: int, threshold: float = 0.0) -> list[str | None]:
    """The time row's verdict of :data:`PAIRS` simulated pairs at a true ``ratio``."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(PAIRS):
        a = 50_000.0 * (1 + RSD * rng.standard_normal(RUNS))
        b = 50_000.0 * ratio * (1 + RSD * rng.standard_normal(RUNS))
        (row,) = compare_runs(_runs(a), _runs(b, session_id=2), threshold=threshold)
        out.append(row.verdict)
    return out


def test_false_alarm_rate_at_ratio_one_is_at_most_5_percent() -> None:
    verdicts = _verdicts(1.0, seed=13)
    false_alarms = sum(v in {"slower", "faster"} for v in verdicts) / PAIRS
    print(f"false alarms at ratio 1.0: {false_alarms:.3f} of {PAIRS} pairs")  # noqa: T201
    assert false_alarms <= 0.05
    assert set(verdicts) <= {"no change", "slower", "faster"}


def test_a_3_percent_slowdown_at_rsd_1_percent_is_detected_95_percent() -> None:
    verdicts = _verdicts(1.03, seed=14)
    detected = sum(v == "slower" for v in verdicts) / PAIRS
    print(f"3 % slowdown detected: {detected:.3f} of {PAIRS} pairs")  # noqa: T201
    assert detected >= 0.95
    assert "faster" not in verdicts  # never the wrong way round


def test_a_3_percent_speedup_is_detected_as_faster() -> None:
    verdicts = _verdicts(1 / 1.03, seed=15)
    assert sum(v == "faster" for v in verdicts) / PAIRS >= 0.95


def test_a_threshold_above_the_change_turns_it_into_no_change() -> None:
    # 3 % slower, but only changes beyond 5 % count: (almost) never "slower".
    verdicts = _verdicts(1.03, seed=16, threshold=0.05)
    assert sum(v == "slower" for v in verdicts) / PAIRS <= 0.01


@pytest.mark.parametrize(
    ("ratio", "low", "high", "threshold", "expected"),
    [
        (1.01, 1.001, 1.02, 0.0, "slower"),  # excludes 1
        (1.01, 0.999, 1.02, 0.0, "no change"),  # holds 1
        (1.01, 1.0, 1.02, 0.0, "no change"),  # touches 1: not beyond it
        (1.02, 1.01, 1.03, 0.02, "no change"),  # the change exactly at 1 + t
        (1.0201, 1.01, 1.03, 0.02, "slower"),
        (1.015, 1.01, 1.02, 0.02, "no change"),  # beyond noise, within threshold
        (1.05, 0.99, 1.1, 0.02, "no change"),  # a large change within noise
        (0.98, 0.97, 0.99, 0.02, "no change"),  # exactly at 1 - t
        (0.9799, 0.97, 0.99, 0.02, "faster"),
        (0.7, 0.5, 0.9, 0.0, "faster"),
    ],
)
def test_threshold_edges_of_a_duration(
    ratio: float, low: float, high: float, threshold: float, expected: str
) -> None:
    got = verdict(
        TIME_METRIC,
        "ns",
        low,
        high,
        deterministic=False,
        threshold=threshold,
        ratio=ratio,
    )
    assert got == expected


def test_rates_read_the_other_way_and_counters_higher_or_lower() -> None:
    assert verdict("gbps", "bytes/s", 1.05, 1.1, deterministic=False) == "faster"
    assert verdict("gbps", "bytes/s", 0.9, 0.95, deterministic=False) == "slower"
    assert verdict("dram__bytes.sum", "bytes", 1.05, 1.1, deterministic=False) == (
        "higher"
    )
    assert (
        verdict(
            "dram__bytes.sum", "bytes", 1.05, 1.1, deterministic=False, threshold=0.1
        )
        == "no change"
    )
    assert verdict(TIME_METRIC, "ns", None, None, deterministic=False) is None
    assert verdict(TIME_METRIC, "ns", 1.1, 1.2, deterministic=True) == "deterministic"


@pytest.mark.parametrize("threshold", [-0.01, 1.0, math.nan, math.inf])
def test_a_threshold_outside_0_1_is_refused(threshold: float) -> None:
    with pytest.raises(ValueError, match="threshold"):
        verdict(TIME_METRIC, "ns", 1.1, 1.2, deterministic=False, threshold=threshold)


def test_within_threshold_says_so_in_the_note() -> None:
    rng = np.random.default_rng(3)
    a = 50_000.0 * (1 + 0.001 * rng.standard_normal(RUNS))
    b = 1.03 * 50_000.0 * (1 + 0.001 * rng.standard_normal(RUNS))
    (strict,) = compare_runs(_runs(a), _runs(b, session_id=2), threshold=0.0)
    (loose,) = compare_runs(_runs(a), _runs(b, session_id=2), threshold=0.05)
    assert strict.verdict == "slower"
    assert strict.note == ""
    assert loose.verdict == "no change"
    assert not loose.significant  # the interval excludes 1, the change is small
    assert loose.threshold == 0.05
    assert "within the ±5 % threshold" in loose.note


def _same_code(clock_a: float | None, clock_b: float | None, **kw: int) -> Comparison:
    rng = np.random.default_rng(5)
    a = 50_000.0 * (1 + RSD * rng.standard_normal(RUNS))
    b = 50_000.0 * (1 + RSD * rng.standard_normal(RUNS))
    (row,) = compare_runs(
        _runs(a, clock=clock_a, throttled=kw.get("throttled_a", 0)),
        _runs(b, session_id=2, clock=clock_b, throttled=kw.get("throttled_b", 0)),
    )
    return row


def test_sm_clocks_more_than_2_percent_apart_are_flagged() -> None:
    assert CLOCK_TOLERANCE == 0.02
    apart = _same_code(1980.0, 1930.0)  # -2.5 %
    assert apart.clock_differs
    assert apart.flagged
    assert (apart.sm_clock_mhz_a, apart.sm_clock_mhz_b) == (1980.0, 1930.0)
    # The same time at a 2.5 % lower clock is 2.5 % fewer cycles: which one
    # answers depends on what bounds the kernel, so neither verdict is given.
    assert apart.verdict == "inconclusive: clocks"
    assert apart.measured == "no change"
    assert apart.cycle_ratio == pytest.approx(apart.ratio * 1930.0 / 1980.0)
    assert "per SM cycle 0.97" in apart.note
    assert "a at 1980 MHz" in apart.note
    assert "b at 1930 MHz" in apart.note
    assert "--clock-control base" in apart.note
    assert _same_code(1980.0, 2030.0).clock_differs  # +2.5 %: either way
    close = _same_code(1980.0, 1950.0)  # -1.5 %
    assert not close.clock_differs
    assert not close.flagged
    assert close.note == ""


def test_clocks_not_read_are_not_flagged() -> None:
    row = _same_code(None, None)
    assert (row.sm_clock_mhz_a, row.sm_clock_mhz_b) == (None, None)
    assert not row.flagged


def test_throttled_runs_are_counted_and_flagged() -> None:
    row = _same_code(1980.0, 1980.0, throttled_b=3)
    assert (row.throttled_a, row.throttled_b) == (0, 3)
    assert row.flagged
    assert not row.clock_differs
    assert "throttled: 3 of 20 runs of b" in row.note


def test_the_session_verdict_folds_the_timed_rows() -> None:
    rng = np.random.default_rng(8)

    def noisy(scale: float) -> np.ndarray:
        return scale * 50_000.0 * (1 + 0.002 * rng.standard_normal(RUNS))

    a = _runs(noisy(1.0), region="x") + _runs(noisy(1.0), region="y")
    slower = _runs(noisy(1.10), session_id=2, region="x") + _runs(
        noisy(0.9), session_id=2, region="y", clock=1700.0
    )
    rows = compare_runs(a, slower)
    judged = session_verdict(rows)
    assert [r.verdict for r in rows] == ["slower", "faster"]
    # Any slower timed row is a regression, whatever else got faster.
    assert (judged.verdict, judged.slower, judged.faster, judged.flagged) == (
        "slower", 1, 1, 1,
    )  # fmt: skip
    assert "1 with SM clocks apart" in judged.note
    same = session_verdict(compare_runs(a, a))
    assert (same.verdict, same.unchanged) == ("no change", 2)
    assert session_verdict([]).verdict is None


def test_at_the_default_threshold_a_3_percent_slowdown_is_still_slower() -> None:
    """The practical threshold (2.2 %) keeps the synthetic 3 % slowdown found."""
    assert DEFAULT_THRESHOLD == 0.022
    verdicts = _verdicts(1.03, seed=14, threshold=DEFAULT_THRESHOLD)
    detected = sum(v == "slower" for v in verdicts) / PAIRS
    print(f"3 % slowdown at the default threshold: {detected:.3f}")  # noqa: T201
    assert detected >= 0.95
    # A same-code move of 1 %, beyond the H200's p95, is (almost) never a change.
    moved = _verdicts(1.01, seed=17, threshold=DEFAULT_THRESHOLD)
    assert sum(v != "no change" for v in moved) / PAIRS <= 0.01


def test_throttled_in_one_session_only_is_inconclusive() -> None:
    row = _same_code(1980.0, 1950.0, throttled_b=RUNS)
    assert row.verdict == "inconclusive: clocks"
    assert not row.significant
    assert "throttled in 20 of 20 runs" in row.note
    assert "--clock-control base --thermal auto" in row.note
    # Throttled on both sides alike: judged as measured, flagged.
    both = _same_code(1980.0, 1980.0, throttled_a=RUNS, throttled_b=RUNS)
    assert both.verdict == "no change"
    assert both.flagged


def test_clocks_apart_but_agreeing_per_cycle_keep_their_verdict() -> None:
    rng = np.random.default_rng(21)
    a = 50_000.0 * (1 + 0.002 * rng.standard_normal(RUNS))
    b = 1.10 * 50_000.0 * (1 + 0.002 * rng.standard_normal(RUNS))
    (row,) = compare_runs(_runs(a), _runs(b, session_id=2, clock=1930.0))
    assert row.clock_differs
    assert row.verdict == "slower"  # 10 % slower, 7 % per cycle: both say so
    assert "per SM cycle 1.07" in row.note


def test_labels_say_what_was_timed() -> None:
    assert metric_label(TIME_METRIC, "cpu") == "duration (host timer)"
    assert metric_label(TIME_METRIC, "events") == "duration"
    assert metric_label("dram__bytes_read.sum", "pm") == "dram__bytes_read.sum"


def test_a_time_that_moved_less_than_a_microsecond_is_no_change() -> None:
    """The H200's same-code events sessions: a ~5 µs add moved 19 %, under 1 µs."""
    from nsight_lab.analysis.compare import MIN_TIME_CHANGE_NS, NO_CHANGE, compare_runs
    from tests.server.test_compare import record

    def runs(sid: int, ns: float) -> list:
        return [
            record(sid, "add", ns * v, {"n": 1}, 0)
            for v in (1.0, 1.001, 0.999, 1.002, 0.998, 1.0, 1.001, 0.999)
        ]

    (small,) = compare_runs(runs(1, 4_000.0), runs(2, 4_800.0))
    assert small.ratio > 1.15
    assert small.verdict == NO_CHANGE
    assert "within the 1 µs" in small.note
    (large,) = compare_runs(runs(1, 40_000.0), runs(2, 48_000.0))
    assert large.verdict == "slower"  # the same 20 %, 8 µs: a change
    assert MIN_TIME_CHANGE_NS == 1_000.0
