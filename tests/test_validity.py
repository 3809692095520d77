"""Issue 28 items 3 and 4: numbers that cannot be true, and launch-bound regions.

The rules of :mod:`nsight_lab.analysis.validity` on the cases the issue met (a
backward at 68934 % of roof, 2 µs of kernels in an 8 ms region, kernel time twice
its span on one stream) and their legitimate neighbours (two streams overlapping, a
healthy region), then properties over generated shapes.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nsight_lab.analysis.validity import (
    COVERAGE_FLOOR,
    LAUNCH_BOUND_BELOW,
    ROOF_TOLERANCE_PCT,
    SPAN_TOLERANCE,
    check_region,
    check_session,
    checks_json,
    checks_lines,
)
from nsight_lab.contract import shape
from nsight_lab.contract.records import RunRecord
from nsight_lab.roofline.placement import peaks_for, place

H100 = peaks_for("NVIDIA H100 80GB HBM3")
assert H100 is not None


def run(  # noqa: PLR0913  (one run's shape, keyword-only)
    duration_ns: float,
    *,
    busy: float | None = None,
    span: float | None = None,
    host: float | None = None,
    streams: int = 1,
    foreign: int = 0,
    duplicates: int = 0,
    name: str = "r",
    index: int = 0,
) -> RunRecord:
    metrics: dict[str, float] = {}
    if busy is not None:
        metrics = {
            shape.BUSY_NS: busy,
            shape.SPAN_NS: span if span is not None else busy,
            shape.HOST_NS: host if host is not None else busy,
            shape.LAUNCHES: 10.0,
            shape.STREAMS: float(streams),
            shape.THREADS: 1.0,
            shape.FOREIGN: float(foreign),
            shape.DUPLICATES: float(duplicates),
        }
    return RunRecord(
        session_id=1,
        config_index=0,
        config={},
        run_index=index,
        annotation=name,
        duration_ns=duration_ns,
        backend="cupti",
        metrics=metrics,
    )


def placed(pct_target: float, duration_ns: float = 2083.0):
    """A memory-bound placement at ``pct_target`` % of the DRAM roof (modelled)."""
    assert H100 is not None
    moved = pct_target / 100 * H100.dram_bytes_per_s * duration_ns * 1e-9
    return place(
        "backward",
        flops=moved * 0.1,
        bytes_read=moved,
        bytes_written=0.0,
        duration_ns=duration_ns,
        peaks=H100,
    )


def kinds(v) -> list[str]:
    return [f.kind for f in v.flags]


# -- the cases ----------------------------------------------------------------


def test_a_region_at_68934_percent_of_roof_is_flagged_with_cause_and_action():
    p = placed(68934.0)
    assert p.pct_of_roof == pytest.approx(68934.0)
    v = check_region([run(2083.0)], p)  # no shape (events-like): the roof check only
    assert kinds(v) == ["over_roof"]
    flag = v.flags[0]
    assert flag.text == "68934 % of roof cannot be true"
    assert "work model" in flag.cause
    assert "--backend ncu" in flag.action
    assert v.busy_pct is None
    assert v.note == ""


def test_a_2us_backward_in_an_8ms_region_is_flagged_low_coverage():
    runs = [
        run(2083.0, busy=2083.0, span=2500.0, host=8e6, foreign=12, index=i)
        for i in range(5)
    ]
    v = check_region(runs, placed(68934.0))
    assert kinds(v) == ["over_roof", "low_coverage"]
    cover = v.flags[1]
    assert cover.text == "its kernels cover 0.03 % of its 8.000 ms on the host"
    assert "other threads" in cover.cause
    assert "--backend events" in cover.action
    # With launches from other threads, the roof's cause is the missing kernels.
    assert "misses kernels" in v.flags[0].cause
    assert v.busy_pct == pytest.approx(2083.0 / 8e6 * 100)
    assert v.note == ""  # the flag says it: no launch-bound note on top


def test_kernel_time_twice_its_span_on_one_stream_is_flagged():
    runs = [run(2050.0, busy=1000.0, span=1000.0, host=1100.0, duplicates=40)]
    v = check_region(runs)
    assert kinds(v) == ["over_span"]
    assert (
        v.flags[0].text == "kernel time 2.05x its GPU span on one stream (1 of 1 runs)"
    )
    assert "40 records twice" in v.flags[0].cause


def test_two_streams_overlapping_are_not_flagged():
    runs = [run(2050.0, busy=1000.0, span=1000.0, host=1100.0, streams=2)]
    v = check_region(runs)
    assert v.flags == ()
    assert v.note == ""


def test_a_launch_bound_region_with_a_high_rsd_says_the_host_sets_the_spread():
    # GPU busy 30 % of the host span (median); the host span varies, the GPU's
    # busy time does not; the duration (the span, as events would time it) follows.
    hosts = [10e6, 14e6, 8e6, 12e6, 16e6, 9e6]
    runs = [
        run(h * 0.9, busy=3.3e6, span=h * 0.9, host=h, streams=2, index=i)
        for i, h in enumerate(hosts)
    ]
    v = check_region(runs)
    assert v.flags == ()
    assert v.note == (
        "launch-bound: GPU busy 30 % of the span; the spread follows the host"
    )
    assert v.busy_text == "30 % launch-bound"
    assert checks_lines(checks_json([v])) == [f"note r: {v.note}"]


def test_a_launch_bound_region_whose_kernels_vary_does_not_blame_the_host():
    busy = [1e6, 3e6, 1e6, 3e6]
    runs = [run(b, busy=b, span=9e6, host=10e6, index=i) for i, b in enumerate(busy)]
    v = check_region(runs)
    assert v.note.startswith("launch-bound: GPU busy")
    assert "host" not in v.note  # a steady host span: the spread is the kernels'


def test_a_steady_launch_bound_region_has_no_spread_clause():
    runs = [run(3e6, busy=3e6, span=9e6, host=10e6, index=i) for i in range(4)]
    assert check_region(runs).note == "launch-bound: GPU busy 30 % of the span"


def events_run(duration_ns: float, enqueue_ns: float, index: int) -> RunRecord:
    r = run(duration_ns, index=index)
    r.metrics[shape.ENQUEUE_NS] = enqueue_ns
    return RunRecord(**{**r.__dict__, "backend": "events"})


def test_events_say_likely_launch_bound_where_the_span_lasts_as_long_as_the_launches():
    # The transformer step's loss under events (issue 28): RSD 69 %, the GPU span
    # following Python's launches run to run.
    spans = [90e3, 300e3, 120e3, 410e3, 95e3, 260e3]
    runs = [events_run(s, s * 0.97, i) for i, s in enumerate(spans)]
    v = check_region(runs)
    assert v.note.startswith("likely launch-bound: the host took 97 % of the GPU span")
    assert "--backend cupti" in v.note
    assert v.note.endswith("; the spread follows the host")
    assert v.busy_pct is None  # events measure no busy share: none is shown


def test_events_of_a_gpu_bound_region_with_a_head_start_say_nothing():
    runs = [events_run(5.5e6, 40e3, i) for i in range(6)]  # launches done in 1 %
    assert check_region(runs).note == ""


def test_a_healthy_region_says_nothing():
    runs = [run(9.5e6 + i, busy=9.5e6, span=9.8e6, host=1e7, index=i) for i in range(5)]
    v = check_region(runs, placed(72.0, 9.5e6))
    assert v.flags == ()
    assert v.note == ""
    assert v.flag_text == ""
    assert v.busy_text == "95 %"
    assert checks_json([v]) == []


def test_session_checks_are_per_region_and_config_and_list_as_lines():
    records = [
        run(2050.0, busy=1000.0, span=1000.0, host=1100.0, name="a"),
        run(9e6, busy=9e6, span=9.5e6, host=1e7, name="b"),
    ]
    checks = check_session(records)
    assert list(checks) == [("a", 0), ("b", 0)]
    lines = checks_lines(checks_json(checks.values()))
    assert lines[0].startswith("! a: kernel time 2.05x")
    assert lines[1].startswith("  cause: ")
    assert lines[2].startswith("  do: ")
    assert len(lines) == 3


# -- properties -----------------------------------------------------------------------

shares = st.floats(min_value=1e-6, max_value=1.0)


@settings(max_examples=200, deadline=None)
@given(pct=st.floats(min_value=0.01, max_value=1e7))
def test_the_roof_flag_is_exactly_past_the_tolerance(pct: float) -> None:
    p = placed(pct)
    v = check_region([run(2083.0)], p)
    assert ("over_roof" in kinds(v)) == (p.pct_of_roof > ROOF_TOLERANCE_PCT)


@settings(max_examples=200, deadline=None)
@given(
    ratio=st.floats(min_value=0.01, max_value=10.0),
    streams=st.integers(min_value=1, max_value=8),
)
def test_only_one_stream_past_the_tolerance_is_over_span(
    ratio: float, streams: int
) -> None:
    span = 1e6
    v = check_region(
        [run(ratio * span, busy=span, span=span, host=span, streams=streams)]
    )
    assert ("over_span" in kinds(v)) == (streams == 1 and ratio > SPAN_TOLERANCE)


@settings(max_examples=300, deadline=None)
@given(share=shares, host=st.floats(min_value=1e3, max_value=1e10))
def test_busy_share_decides_coverage_flag_and_launch_note_apart(
    share: float, host: float
) -> None:
    busy = share * host
    v = check_region([run(busy, busy=busy, span=busy, host=host)])
    assert v.busy_pct == pytest.approx(share * 100)
    low = "low_coverage" in kinds(v)
    assert low == (share < COVERAGE_FLOOR)
    assert bool(v.note) == (COVERAGE_FLOOR <= share < LAUNCH_BOUND_BELOW)
    assert not (low and v.note)  # never both


@settings(max_examples=100, deadline=None)
@given(
    values=st.lists(
        st.tuples(
            st.floats(min_value=0, max_value=1e9) | st.just(math.nan),
            st.floats(min_value=-1, max_value=1e9) | st.just(math.nan),
            st.floats(min_value=-1, max_value=1e9) | st.just(math.nan),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_any_shape_metrics_give_an_answer_never_an_error(values) -> None:
    runs = [
        run(d, busy=b, span=s, host=s * 2, index=i)
        for i, (d, b, s) in enumerate(values)
    ]
    v = check_region(runs)
    assert v.busy_pct is None or math.isfinite(v.busy_pct)
    for entry in checks_json([v], with_config=True):
        assert all(isinstance(x, str) for x in entry.values())
