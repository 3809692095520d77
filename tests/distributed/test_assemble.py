"""One run of every rank -> records: span, per-rank values, straggler."""

from __future__ import annotations

import math

import pytest

from nsight_lab.contract.records import Telemetry
from nsight_lab.distributed import metrics as m
from nsight_lab.distributed.assemble import RankRun, assemble, straggler


def _records(runs: list[RankRun]):
    return assemble(
        runs, session_id=7, config_index=0, config={"n": 1}, run_index=3, backend="cpu"
    )


def test_independent_work_the_last_to_end_is_the_straggler():
    # Entered together (10 ns apart), rank 1 ends 5 us after rank 0.
    assert straggler({0: 0, 1: 10}, {0: 1_000, 1: 6_000}) == 1
    assert straggler({0: 10, 1: 0, 2: 5}, {0: 9_000, 1: 2_000, 2: 3_000}) == 0


def test_a_region_ending_in_a_collective_the_last_to_start_is_the_straggler():
    # The ends line up (the collective); rank 2 arrived 4 us late.
    assert straggler({0: 0, 1: 100, 2: 4_000}, {0: 9_000, 1: 9_010, 2: 9_005}) == 2


def test_straggler_ties_go_to_the_lower_rank_and_no_rank_is_refused():
    assert straggler({0: 0, 1: 0}, {0: 5, 1: 5}) == 0
    with pytest.raises(ValueError, match="no rank"):
        straggler({}, {})


def test_span_per_rank_values_and_straggler_of_two_regions():
    t = Telemetry(sm_clock_mhz=1980.0, temperature_c=41.0)
    runs = [
        RankRun(
            rank=1,
            device=1,
            regions={"a": (1_050, 9_050), "b": (10_000, 30_000)},
            telemetry=Telemetry(sm_clock_mhz=1500.0, temperature_c=60.0),
            bytes_sent={"a": 1024.0},
            collectives={"a": 1},
        ),
        RankRun(
            rank=0,
            device=0,
            regions={"a": (1_000, 9_100), "b": (10_010, 12_000)},
            telemetry=t,
            bytes_sent={"a": 1024.0},
            collectives={"a": 1},
        ),
    ]
    a, b = _records(runs)
    assert (a.annotation, b.annotation) == ("a", "b")  # rank 0's order
    # a: first start 1,000 (rank 0), last end 9,100 (rank 0).
    assert a.duration_ns == 8_100
    assert a.metrics[m.SPAN] == 8_100
    assert a.metrics[m.rank_metric(m.DURATION, 0)] == 8_100
    assert a.metrics[m.rank_metric(m.DURATION, 1)] == 8_000
    assert a.metrics[m.rank_metric(m.START, 0)] == 0
    assert a.metrics[m.rank_metric(m.START, 1)] == 50
    assert a.metrics[m.COUNT] == 2
    assert a.metrics[m.COMM_BYTES] == 1024.0
    assert a.metrics[m.COMM_COUNT] == 1
    # b: rank 1 ran 20 us, rank 0 2 us: rank 1 is the straggler.
    assert b.duration_ns == 30_000 - 10_000
    assert b.metrics[m.STRAGGLER] == 1
    assert m.COMM_BYTES not in b.metrics
    assert m.per_rank(b, m.DEVICE) == {0: 0.0, 1: 1.0}
    assert m.per_rank(b, m.SM_CLOCK) == {0: 1980.0, 1: 1500.0}
    assert m.per_rank(b, m.TEMPERATURE) == {0: 41.0, 1: 60.0}
    assert b.telemetry == t  # rank 0's
    assert (b.session_id, b.run_index, b.config) == (7, 3, {"n": 1})


def test_a_region_failed_on_one_rank_has_no_value_there():
    runs = [
        RankRun(rank=0, device=-1, regions={"a": (0, 100)}),
        RankRun(rank=1, device=-1, regions={"a": (0, 900)}, failed=("a",)),
    ]
    (a,) = _records(runs)
    assert math.isnan(a.metrics[m.rank_metric(m.DURATION, 1)])
    assert a.duration_ns == 100  # the span over the ranks that measured it
    assert a.metrics[m.STRAGGLER] == 0
    assert m.device_label(a.metrics[m.rank_metric(m.DEVICE, 0)]) == "cpu"


def test_single_rank_records_are_not_multi_rank():
    (a,) = _records([RankRun(rank=0, device=0, regions={"a": (0, 100)})])
    assert m.is_multi_rank(a)
    assert m.ranks_of(a) == 1
    assert m.device_label(0.0) == "cuda:0"
