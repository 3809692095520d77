"""nsight_lab.contract.progress: the one progress type, line and fraction views show.

The live widget's and the wire's progress lines are in tests/views/test_bundle.py and
tests/test_wire.py; here: the seconds format, the ETA, clamping, the fraction, what
the text leaves out, the JSON shape, and a stored session's progress.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from nsight_lab.contract.progress import (
    Progress,
    ProgressCounter,
    format_seconds,
    make_progress,
    session_progress,
)
from nsight_lab.contract.records import RunRecord, SessionInfo, SessionStatus


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0, "0.0 s"),
        (7.54, "7.5 s"),
        (60.0, "1 min 00 s"),
        (245.4, "4 min 05 s"),
        (3599.0, "59 min 59 s"),
        (3600.0, "1 h 00 min"),
        (3725.0, "1 h 02 min"),
        (-1.0, "?"),
        (math.nan, "?"),
        (math.inf, "?"),
    ],
)
def test_seconds_read_in_the_largest_unit(seconds, text):
    assert format_seconds(seconds) == text


def _running(**changes: object):
    counts: dict = {
        "status": "running",
        "configs_total": 3,
        "runs_per_config": 30,
        "config_index": 1,
        "runs_done_in_config": 0,
        "runs_done_total": 30,
        "elapsed_s": 7.5,
    }
    counts.update(changes)
    return make_progress(**counts)


def test_the_eta_assumes_the_runs_left_take_as_long_as_those_done():
    progress = _running()
    assert progress.runs_planned_total == 90
    assert progress.eta_s == pytest.approx(15.0)  # 7.5 s for 30 runs, 60 left
    assert progress.fraction == pytest.approx(1 / 3)
    assert progress.text == (
        "30 / 90 runs · config 2 / 3 · run 0 / 30 · elapsed 7.5 s · ETA 15.0 s"
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"runs_done_total": 0},  # nothing done yet: no rate
        {"elapsed_s": None},  # the sidebar does not know the elapsed time
        {"elapsed_s": math.inf},
        {"runs_per_config": 0},  # nothing planned
        {"status": "completed"},  # ended
    ],
)
def test_no_eta_without_a_rate_a_plan_or_a_running_profile(changes):
    assert _running(**changes).eta_s is None
    assert "ETA" not in _running(**changes).text


def test_counts_are_clamped_and_the_config_index_kept_in_the_plan():
    progress = _running(
        configs_total=0,
        config_index=5,
        runs_per_config=-3,
        runs_done_in_config=-1,
        runs_done_total=-2,
        elapsed_s=None,
    )
    assert progress.configs_total == 1
    assert progress.config_index == 0
    assert (progress.runs_per_config, progress.runs_planned_total) == (0, 0)
    assert (progress.runs_done_in_config, progress.runs_done_total) == (0, 0)
    assert _running(config_index=-4).config_index == 0
    assert _running(config_index=9).config_index == 2


def test_without_a_plan_the_text_counts_runs_and_the_fraction_is_zero():
    progress = _running(runs_per_config=0, runs_done_total=12, elapsed_s=None)
    assert progress.text == "12 runs · config 2 / 3"
    assert progress.fraction == 0.0


def test_the_fraction_stays_in_0_1_and_is_1_once_completed():
    # --target-rsd may run more than the planned minimum.
    assert _running(runs_done_total=120).fraction == 1.0
    assert _running(status="completed", runs_done_total=10).fraction == 1.0
    assert _running(status="failed", runs_done_total=45).fraction == 0.5


def test_the_json_shape_is_json_safe_and_carries_text_and_fraction():
    data = _running(elapsed_s=math.nan).to_json()
    assert data["elapsed_s"] is None  # NaN is no JSON number
    assert data["eta_s"] is None
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert set(data) == {
        "status",
        "configs_total",
        "config_index",
        "runs_per_config",
        "runs_planned_total",
        "runs_done_in_config",
        "runs_done_total",
        "elapsed_s",
        "eta_s",
        "fraction",
        "text",
    }
    assert data["text"] == _running(elapsed_s=math.nan).text


def _session(status: SessionStatus = "running") -> SessionInfo:
    return SessionInfo(
        id=1,
        status=status,
        backend="cpu",
        created_at="x",
        configs=[{"n": 1}, {"n": 2}, {"n": 3}],
        runs_planned=90,
    )


def test_a_stored_sessions_progress_comes_from_its_newest_run():
    progress = session_progress(_session(), runs_done_total=47, newest=(1, 16))
    assert progress.text == "47 / 90 runs · config 2 / 3 · run 17 / 30"
    assert progress.elapsed_s is None
    assert progress.eta_s is None


def test_a_stored_session_without_runs_is_at_its_first_config():
    progress = session_progress(_session(), runs_done_total=0, newest=None)
    assert progress.text == "0 / 90 runs · config 1 / 3 · run 0 / 30"
    assert progress.fraction == 0.0
    ended = session_progress(_session("completed"), runs_done_total=0, newest=None)
    assert ended.fraction == 1.0


def test_a_progress_is_a_frozen_snapshot_and_its_message_is_not_on_the_wire():
    progress = _running(message="waited 2.0 s for thermal headroom")
    assert progress.message == "waited 2.0 s for thermal headroom"
    with pytest.raises(dataclasses.FrozenInstanceError):
        progress.runs_done_total = 31  # type: ignore[misc]
    assert "message" not in progress.to_json()


def test_the_progress_counter_counts_runs_per_config_and_shows_each_emit():
    shown: list[tuple[Progress, int]] = []
    counter = ProgressCounter(3, 30, lambda p, records: shown.append((p, len(records))))
    counter.runs_done(30)
    counter.start_config(1)
    counter.runs_done()
    counter.runs_done(2)
    counter.message = "waited 2.0 s for thermal headroom"
    counter.emit(
        [
            RunRecord(
                session_id=1,
                config_index=1,
                config={"n": 2},
                run_index=2,
                annotation="cell",
                duration_ns=1.0,
                backend="cpu",
            )
        ]
    )
    progress, records = shown[-1]
    assert (progress.config_index, progress.runs_done_in_config) == (1, 3)
    assert progress.runs_done_total == 33
    assert progress.status == "running"
    assert progress.message == "waited 2.0 s for thermal headroom"
    assert records == 1
    counter.complete()
    counter.emit()
    assert shown[-1][0].status == "completed"
    assert shown[-1][0].fraction == 1.0
    assert len(shown) == 2


def test_a_progress_counter_without_a_hook_emits_nothing_and_keeps_counting():
    counter = ProgressCounter(2, 5, None)
    counter.runs_done(4)
    counter.emit()
    assert counter.progress.text.startswith("4 / 10 runs · config 1 / 2 · run 4 / 5")
