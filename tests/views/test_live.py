"""WidgetView driven by the real runner on the cpu backend (no mocks)."""

from __future__ import annotations

import json
import math

import pytest

from nsight_lab.backends.cpu import CpuTimerBackend
from nsight_lab.contract.progress import make_progress
from nsight_lab.contract.records import SessionInfo
from nsight_lab.options import parse_options
from nsight_lab.plan import make_plan
from nsight_lab.results import summary_rows, to_dataframe
from nsight_lab.roofline.placement import Peaks, place_records
from nsight_lab.runner import Runner
from nsight_lab.views.live import MIN_UPDATE_INTERVAL_S, WidgetView

torch = pytest.importorskip("torch")

CPU_PEAKS = Peaks(
    device="test cpu",
    flops_per_s={"fp32": 1e11},
    dram_bytes_per_s=2e10,
    source="hand-made for the test",
)


def _body(config):
    n = int(config["n"])
    a = torch.ones(n)
    b = torch.ones(n)
    c = torch.ones(n)
    from nsight_lab.regions import annotate

    with annotate("unfused <b>a+b*c</b>"):
        a + b * c
    with annotate("fused"):
        torch.addcmul(a, b, c)


def _profile(line, *, view_kwargs=None):
    options = parse_options(line)
    plan = make_plan(options, {"cpu": CpuTimerBackend().probe()})
    session = SessionInfo(
        id=7,
        status="running",
        backend="cpu",
        created_at="x",
        options=options.to_json(),
        configs=plan.configs,
    )
    view = WidgetView(session_id=7, show=False, session=session, **(view_kwargs or {}))
    updates = []

    def on_progress(progress, records):
        updates.append(
            (progress.config_index, progress.runs_done_in_config, len(records))
        )
        view.update(progress, records)
        # What the widget holds after each runner step, as a front end would see it.
        widget = view.widget
        snapshots.append(
            {
                "runs_done": widget.progress.get("runs_done_in_config", 0),
                "runs_done_total": widget.progress.get("runs_done_total", 0),
                "config_index": widget.progress.get("config_index", 0),
                "records": len(view.records),
                "append": widget.append.get("seq", 0),
                "figures": sorted(widget.figures),
            }
        )

    snapshots = []
    measurement = CpuTimerBackend().open(options)
    sink_batches = []
    from nsight_lab.roofline.workmodel import count_work

    runner = Runner(
        plan,
        measurement,
        7,
        sink_batches.append,
        on_progress=on_progress,
        model_work=count_work,
    )
    try:
        records = runner.run(_body)
    finally:
        measurement.close()
    return options, plan, view, records, snapshots, updates


def test_widget_follows_the_runner_and_finishes_with_every_chart(monkeypatch):  # noqa: PLR0915
    # Draw every update: the throttle and the budget are tested on their own below.
    monkeypatch.setattr("nsight_lab.views.live.MIN_UPDATE_INTERVAL_S", 0.0)
    options, _plan, view, records, snapshots, _ = _profile(
        "--backend cpu --configs 256,1024 --runs 5 --warmup 1 --derive tflops",
        view_kwargs={"budget": math.inf},
    )
    widget = view.widget
    # Progress: every measured run of both configs, two regions each.
    assert len(records) == 2 * 5 * 2
    progress = widget.progress
    assert progress["configs_total"] == 2
    assert progress["runs_per_config"] == 5
    assert progress["runs_planned_total"] == 10
    assert progress["config_index"] == 1
    assert progress["runs_done_in_config"] == 5
    assert progress["runs_done_total"] == 10
    assert progress["status"] == "completed"
    assert progress["fraction"] == 1.0
    assert progress["eta_s"] is None
    assert progress["text"].startswith("10 / 10 runs · config 2 / 2 · run 5 / 5 · ")
    assert widget.status == "completed"
    totals = [s["runs_done_total"] for s in snapshots]
    assert totals == sorted(totals)
    # The runs arrived one by one: the widget's record count grew with them.
    counts = [s["records"] for s in snapshots]
    assert counts == sorted(counts)
    assert counts[-1] == 20
    assert len(set(counts)) >= 5
    assert {"duration", "clocks"} <= set(snapshots[-1]["figures"])
    # The live figures grew by appends (only the new points each time) ...
    seqs = [s["append"] for s in snapshots]
    assert seqs == sorted(seqs)
    assert seqs[-1] >= 2
    # ... and hold every run: one data trace per (region, config), each with its runs.
    duration = view.live.figures["duration"]
    data = [t for t in duration["data"] if t.get("mode") == "lines+markers"]
    assert {t["meta"]["annotation"] for t in data} == {"unfused <b>a+b*c</b>", "fused"}
    assert len(data) == 4
    assert all(len(t["x"]) == 5 for t in data)
    clocks = view.live.figures["clocks"]
    # The cpu backend reads no telemetry: no traces, so the views say why in words.
    assert clocks["data"] == []
    # No roofline before the end.
    assert "roofline" not in widget.figures

    session = SessionInfo(id=7, status="completed", backend="cpu", created_at="now")
    # As the magic: the results frame computes the --derive values the view takes.
    to_dataframe(records, session, options.param_names, derive=options.derive)
    placements = place_records(records, CPU_PEAKS)
    assert placements
    view.finish(records, CPU_PEAKS)
    assert set(widget.figures) == {"duration", "clocks", "roofline", "traffic"}
    assert widget.status == "completed"
    rows = widget.summary
    # One row per region and config, leading with the answer, as text cells.
    assert {r["Region"] for r in rows} == {"unfused <b>a+b*c</b>", "fused"}
    assert {r["n"] for r in rows} == {"256", "1024"}
    assert all(r["Runs"] == "5" for r in rows)
    assert list(rows[0])[:4] == ["Region", "n", "Duration (host timer)", "RSD"]
    # The traits are JSON as they go over the wire (no NaN, no numpy scalars).
    json.dumps(widget.summary, allow_nan=False)
    json.dumps(widget.figures, allow_nan=False)
    json.dumps(widget.append, allow_nan=False)
    # The final figures, built once from every record, hold every run.
    final = [
        t for t in widget.figures["duration"]["data"] if t["mode"] == "lines+markers"
    ]
    assert sorted(len(t["x"]) for t in final) == [5, 5, 5, 5]
    assert widget.figures_seq >= widget.append["seq"]  # every append is in them


def test_updates_are_throttled_but_no_record_is_lost():
    view = WidgetView(show=False)
    options = parse_options("--backend cpu --runs 50 --warmup 0")
    plan = make_plan(options, {"cpu": CpuTimerBackend().probe()})
    measurement = CpuTimerBackend().open(options)
    drawn = []
    view.widget.observe(lambda change: drawn.append(change["new"]), names="progress")
    runner = Runner(plan, measurement, 1, lambda _batch: None, on_progress=view.update)
    try:
        runner.run(lambda _config: None)
    finally:
        measurement.close()
    # 50 fast runs in far less than 50 * 0.1 s: most updates were skipped ...
    assert len(drawn) < 50
    # ... but the last one (completed) was drawn, and every record is kept.
    assert view.widget.progress["runs_done_total"] == 50
    assert len(view.records) == 50
    assert pytest.approx(0.1) == MIN_UPDATE_INTERVAL_S


def test_live_traces_keep_the_latest_max_points(monkeypatch):
    monkeypatch.setattr("nsight_lab.views.live.MIN_UPDATE_INTERVAL_S", 0.0)
    _, _, view, records, _, _ = _profile(
        "--backend cpu --configs 64 --runs 12 --warmup 0",
        view_kwargs={"max_points": 10, "budget": 1.0},
    )
    assert len(records) == 24
    assert len(view.records) == 24
    data = view.live.figures["duration"]["data"]
    points = [t for t in data if t["mode"] == "lines+markers"]
    assert len(points) == 2
    for trace in points:  # the latest runs appended, 10 at most
        last = trace["x"][-1]
        assert trace["x"] == list(range(max(last - 9, 0), last + 1))
    view.finish(records)  # the final figure: the view model's, the latest 10
    final = view.widget.figures["duration"]["data"]
    for trace in (t for t in final if t["mode"] == "lines+markers"):
        assert trace["x"] == list(range(2, 12))
    # ... while the summary is over every run
    assert [row["Runs"] for row in view.widget.summary] == ["12", "12"]


def test_update_accepts_force_like_progress_display():
    view = WidgetView(show=False, header="session 3 on cpu")
    counts = {
        "status": "running",
        "configs_total": 3,
        "runs_per_config": 4,
        "config_index": 1,
        "elapsed_s": 1.0,
    }
    view.update(make_progress(**counts, runs_done_in_config=2, runs_done_total=6))
    waiting = make_progress(
        **counts,
        runs_done_in_config=3,
        runs_done_total=7,
        message="waiting for the GPU to cool",
    )
    view.update(waiting, force=True)  # within 0.1 s: drawn because forced
    shown = view.widget.progress
    assert shown["runs_done_in_config"] == 3
    assert shown["runs_done_total"] == 7
    assert shown["runs_planned_total"] == 12
    assert shown["text"].startswith("7 / 12 runs · config 2 / 3 · run 3 / 4 · ")
    assert view.widget.message == "session 3 on cpu\nwaiting for the GPU to cool"
    assert shown["eta_s"] is not None
    assert shown["eta_s"] >= 0


def test_failed_session_keeps_its_runs_and_says_why():
    view = WidgetView(show=False)
    options = parse_options("--backend cpu --runs 5 --warmup 0")
    plan = make_plan(options, {"cpu": CpuTimerBackend().probe()})
    measurement = CpuTimerBackend().open(options)
    calls = []

    def body(_config):
        calls.append(1)
        if len(calls) == 3:
            msg = "boom"
            raise RuntimeError(msg)

    runner = Runner(plan, measurement, 1, lambda _batch: None, on_progress=view.update)
    with pytest.raises(RuntimeError):
        runner.run(body)
    measurement.close()
    view.finish(runner.records, status="failed", message="RuntimeError: boom")
    assert view.widget.status == "failed"
    # The runs done are summarised (as the sidebar shows the stored session)
    assert [row["Runs"] for row in view.widget.summary] == ["2"]
    assert len(view.records) == 2
    assert "RuntimeError: boom" in view.widget.message
    assert set(view.widget.figures) == {"duration", "clocks"}


def test_summary_rows_of_an_empty_frame():
    assert summary_rows(None) == []


def test_the_final_page_shows_the_view_models_derive_rows():
    # Given: a profile with a built-in --derive metric
    _, _, view, records, _, _ = _profile(
        "--backend cpu --configs 256 --runs 4 --warmup 0 --derive gbps"
    )

    # When
    view.finish(records)

    # Then: its counter rows (the view model's) are on the static page
    bundle = view.bundle
    assert bundle is not None
    counters = view.model.to_json()["counters"]
    assert [r["cells"][2] for r in counters["rows"]] == ["gbps", "gbps"]
    page = bundle["text/html"]
    assert 'class="jp-nsightLab-Static-counters"' in page
    assert page.count("<td>gbps</td>") == 2
