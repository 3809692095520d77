"""Live view deltas (viewmodel/delta.py): merged appends, layouts, what is kept."""

from __future__ import annotations

import copy
import json
import random
import time

from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.figures import LiveFigures
from nsight_lab.store.run_store import RunStore
from nsight_lab.viewmodel import ViewModels
from nsight_lab.viewmodel.appends import AppendLog, apply_appends, merge_appends
from nsight_lab.viewmodel.delta import ViewLog, apply_delta, parse_version
from nsight_lab.viewmodel.encode import dumps


def _records(start: int, stop: int, regions: int = 3) -> list[RunRecord]:
    out = []
    for i in range(start, stop):
        run, region = divmod(i, regions)
        config = (run // 40) % 2
        out.append(
            RunRecord(
                session_id=1, config_index=config, config={"n": 1 + config},
                run_index=run, annotation=f"r{region}",
                duration_ns=1000.0 * (region + 1) + i % 31 + 700 * (i % 97 == 0),
                backend="events",
                metrics={"dram__bytes_read.sum": 1.0e6 + i % 100},
                telemetry=Telemetry(
                    sm_clock_mhz=1900.0 - i % 60, temperature_c=40.0 + i % 11,
                    throttled=i % 53 == 0,
                ),
            )
        )  # fmt: skip
    return out


def test_merged_appends_equal_the_appends_applied_one_by_one() -> None:
    # Given: live figures fed in random batches, each batch's appends kept
    rng = random.Random(7)  # noqa: S311  (a reproducible stream, not a secret)
    live = LiveFigures(with_config=True, max_points=50)
    start = {name: copy.deepcopy(fig) for name, fig in live.figures.items()}
    batches, done = [], 0
    while done < 900:
        size = rng.randint(1, 120)
        batches.append(live.add(_records(done, done + size)))
        done += size

    # When: every append is applied in turn, and all merged at once
    one_by_one = copy.deepcopy(start)
    for appends in batches:
        for name, change in appends.items():
            apply_appends(one_by_one.setdefault(name, {"data": []}), change)
    merged = merge_appends(batches)
    at_once = copy.deepcopy(start)
    for name, change in merged.items():
        apply_appends(at_once.setdefault(name, {"data": []}), change)

    # Then: the same figures, the live ones; no trace carries more than max_points
    assert at_once == one_by_one
    assert json.loads(dumps(at_once)) == json.loads(dumps(live.figures))
    for op in merged["duration"]["extend"]:
        assert all(len(col) <= 50 for cols in op["data"].values() for col in cols)


def test_a_layout_that_lost_a_key_is_sent_with_its_figure() -> None:
    log = ViewLog(epoch="e1")
    data: list[dict] = []
    figure = {"data": data, "layout": {"yaxis": {"range": [0, 1]}, "title": "t"}}
    log.observe(1, {"figures": {"c": figure}, "summary": []}, {"c": data})
    grown = {"data": data, "layout": {"yaxis": {"range": [0, 2], "type": "log"}}}
    log.appends.record(2, {})
    log.observe(2, {"figures": {"c": grown}, "summary": []}, {"c": data})
    # A key gone (title): merging the layout into the old one would keep it.
    delta = log.delta(1, 2, {"figures": {"c": grown}, "summary": []})
    assert delta == {"charts": {"c": {"figure": grown}}}


def test_a_log_keeps_its_budget_and_says_when_it_cannot_answer() -> None:
    log = AppendLog(budget=400)  # about two versions of 30 records
    live = LiveFigures(with_config=False, max_points=None)
    for version in range(1, 6):
        log.record(version, live.add(_records(version * 30, version * 30 + 30, 1)))
    assert log.since(4, 5) is not None
    assert log.since(0, 5) is None  # dropped: the full view
    assert log.since(6, 5) is None  # a version not reached
    assert parse_version("a1b2:7") == ("a1b2", 7)
    assert parse_version("7") is None
    assert parse_version("x:-1") is None


def test_every_delta_of_a_streaming_session_leads_to_the_fresh_view(tmp_path) -> None:
    # Given: a running session written in random batches while it is viewed
    # (the follower feeds the model as the server's does)
    rng = random.Random(3)  # noqa: S311  (a reproducible stream, not a secret)
    with RunStore(tmp_path / "s.sqlite") as store:
        sid = store.create_session(backend="events", configs=[{"n": 1}, {"n": 2}]).id
        records = [
            RunRecord(**{**r.__dict__, "session_id": sid}) for r in _records(0, 3_000)
        ]
        store.add_runs(records[:30])
        models = ViewModels()
        first = json.loads(dumps(models.view(store, sid)))
        token, view = first.pop("view_version"), first
        done, sizes = 30, []
        # When: the view is refreshed with since after each batch
        while done < len(records):
            size = rng.randint(1, 200)
            store.add_runs(records[done : done + size])
            done += size
            time.sleep(rng.random() * 0.05)
            answer = json.loads(dumps(models.view(store, sid, token)))
            sizes.append(len(dumps(answer)))
            view = apply_delta(view, answer["delta"])
            token = answer["view_version"]
        deadline = time.monotonic() + 20
        while sum(int(r["Runs"]) for r in view["summary"]) < len(records):
            assert time.monotonic() < deadline, "the follower did not publish"
            time.sleep(0.05)  # the follower publishes its view every 0.2 s
            answer = json.loads(dumps(models.view(store, sid, token)))
            view = apply_delta(view, answer["delta"])
            token = answer["view_version"]
        models.close()
        fresh = json.loads(dumps(ViewModels().view(store, sid)))

    # Then: the first view with every delta applied is the fresh full view
    del fresh["view_version"]
    assert view == fresh
    assert max(sizes) < len(dumps(fresh)) / 2
