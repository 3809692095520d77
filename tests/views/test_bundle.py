"""The final output of a cell: nsight-lab's MIME type, a static page, text.

A session is profiled for real on the cpu backend (the runner, the work model, the
live view's own ``finish``); the bundle it leaves is checked for its keys, its size,
its escaping and a static page made without kaleido or a browser.
"""

from __future__ import annotations

import html
import json
import re
import sys
from typing import Any

import pytest

from nsight_lab.backends.cpu import CpuTimerBackend
from nsight_lab.contract.records import RunRecord, SessionInfo
from nsight_lab.figures import CHART_ORDER
from nsight_lab.options import parse_options
from nsight_lab.plan import make_plan
from nsight_lab.roofline.placement import Peaks
from nsight_lab.runner import Runner
from nsight_lab.viewmodel import build
from nsight_lab.viewmodel.summary import median_bars
from nsight_lab.views import bundle as bundle_module
from nsight_lab.views.answer import headline
from nsight_lab.views.bundle import BUNDLE_VERSION, MIME_TYPE, final_bundle
from nsight_lab.views.fallback import format_duration, static_bundle
from nsight_lab.views.live import WidgetView

torch = pytest.importorskip("torch")

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
CPU_PEAKS = Peaks(
    device="test cpu",
    flops_per_s={"fp32": 1e11},
    dram_bytes_per_s=2e10,
    source="hand-made for the test",
)
REGIONS = ("unfused <b>a+b*c</b>", "fused", "sum", "matmul")
MAX_BUNDLE_BYTES = 150_000
"""Issue 10: at most this much per profiled cell for 3 configs x 30 runs x 4 regions."""


def _body(config: dict[str, Any]) -> None:
    from nsight_lab.regions import annotate

    n = int(config["n"])
    a, b, c = torch.ones(n), torch.ones(n), torch.ones(n)
    with annotate(REGIONS[0]):
        a + b * c
    with annotate(REGIONS[1]):
        torch.addcmul(a, b, c)
    with annotate(REGIONS[2]):
        a.sum()
    with annotate(REGIONS[3]):
        a @ b


def _profile(line: str, body=_body) -> tuple[WidgetView, list[RunRecord]]:
    """Profile ``body`` with ``line`` through the runner and the live view."""
    from nsight_lab.roofline.workmodel import count_work

    options = parse_options(line)
    plan = make_plan(options, {"cpu": CpuTimerBackend().probe()})
    session = SessionInfo(
        id=11,
        status="completed",
        backend="cpu",
        created_at="x",
        options=options.to_json(),
        configs=plan.configs,
    )
    view = WidgetView(
        session_id=11,
        header="nsight-lab session 11: backend cpu",
        sidebar_link="#nsight-lab/sessions/11",
        show=False,
        session=session,
    )
    measurement = CpuTimerBackend().open(options)
    runner = Runner(
        plan,
        measurement,
        11,
        lambda _batch: None,
        on_progress=view.update,
        model_work=count_work,
    )
    try:
        records = runner.run(body)
    finally:
        measurement.close()
    view.finish(records, CPU_PEAKS)
    return view, records


@pytest.fixture(scope="module")
def profiled() -> tuple[WidgetView, list[RunRecord]]:
    """A 3-config x 30-run session of four regions, profiled for real."""
    return _profile("--backend cpu --configs 64,256,1024 --runs 30 --warmup 1")


def test_the_final_bundle_is_our_type_a_static_page_and_text(profiled):
    view, records = profiled
    bundle = view.bundle
    assert bundle is not None
    assert set(bundle) == {MIME_TYPE, "text/html", "text/plain"}
    assert WIDGET_VIEW not in bundle  # the widget is the in-flight view only
    data = bundle[MIME_TYPE]
    assert set(data) == {
        "version",
        "session_id",
        "status",
        "progress",
        "message",
        "chart_order",
        "figures",
        "summary",
        "summary_columns",
        "sidebar_link",
        "verdicts",
        "findings",
        "headline",
        "checks",
    }
    assert data["verdicts"] is None  # no --baseline
    # The answer first in the lab too: the checks as the view model says them,
    # under the headline ("" when no region is flagged).
    assert data["checks"] == view.model.to_json()["checks"]
    assert data["headline"] == headline(data["checks"])
    assert data["version"] == BUNDLE_VERSION
    assert data["session_id"] == 11
    assert data["status"] == "completed"
    assert data["sidebar_link"] == "#nsight-lab/sessions/11"
    assert data["chart_order"] == list(CHART_ORDER)
    # Peaks and modelled work: the four charts of a cpu session, in the served order.
    assert {"duration", "clocks", "roofline", "traffic"} <= set(data["figures"])
    assert list(data["figures"]) == [c for c in CHART_ORDER if c in data["figures"]]
    assert data["progress"]["text"].startswith("90 / 90 runs · config 3 / 3")
    assert data["progress"]["fraction"] == 1.0
    assert data["message"] == "nsight-lab session 11: backend cpu"
    # The same summary and figures the widget's traits hold (one builder).
    assert data["summary"] == view.widget.summary
    assert {(r["Region"], r["n"]) for r in data["summary"]} == {
        (region, str(n)) for region in REGIONS for n in (64, 256, 1024)
    }
    assert data["figures"].keys() == view.widget.figures.keys()
    # The columns in the served order (a saved notebook sorts the rows' keys).
    assert data["summary_columns"] == list(data["summary"][0])
    assert data["summary_columns"][:3] == ["Region", "n", "Duration (host timer)"]
    assert len(records) == 3 * 30 * 4
    json.dumps(bundle, allow_nan=False)  # strict JSON: what a notebook can hold


def test_a_3x30_session_of_four_regions_is_at_most_150_kb(profiled):
    view, records = profiled
    assert len(records) == 360
    size = len(json.dumps(view.bundle))
    print(f"final bundle of 3 x 30 x 4 = 360 records: {size:,} bytes")  # noqa: T201
    assert size <= MAX_BUNDLE_BYTES, size
    # Every run is in the duration chart: nothing was thinned to get there.
    duration = view.bundle[MIME_TYPE]["figures"]["duration"]["data"]
    points = [t for t in duration if t.get("mode") == "lines+markers"]
    assert sorted(len(t["x"]) for t in points) == [30] * 12


def test_figure_floats_are_rounded_and_nothing_else_changes():
    figure = {
        "data": [
            {
                "x": [0, 1, 2],
                "y": [6.473033333333334, 0.0, None],
                "marker": {"size": [6, 10, 6]},
                "name": "scale [n=128]",
                "visible": True,
            }
        ],
        "layout": {"margin": {"l": 60}, "yaxis": {"range": [-1.23456789e-7, 1e9]}},
    }
    data = final_bundle(
        session_id=1,
        status="completed",
        progress={"text": "3 / 3 runs"},
        message="",
        figures={"duration": figure},
        summary=[{"AvgValue": 6473.033333333334}],
    )[MIME_TYPE]
    rounded = data["figures"]["duration"]
    trace = rounded["data"][0]
    assert trace["y"] == [6.47303, 0.0, None]
    assert trace["x"] == [0, 1, 2]
    assert all(type(x) is int for x in trace["x"])  # whole numbers stay ints
    assert trace["marker"]["size"] == [6, 10, 6]
    assert trace["visible"] is True
    assert rounded["layout"]["yaxis"]["range"] == [-1.23457e-7, 1e9]
    assert data["summary"] == [{"AvgValue": 6473.033333333334}]  # served as it is
    assert figure["data"][0]["y"][0] == 6.473033333333334  # the input is untouched


def test_profile_text_is_escaped_in_the_page_and_kept_as_data_in_our_type():
    hostile = "a\x00b<script>alert(1)</script>\u202e"

    def body(_config: dict[str, Any]) -> None:
        from nsight_lab.regions import annotate

        with annotate(hostile):
            torch.ones(8) * 2

    view, _ = _profile("--backend cpu --runs 3 --warmup 0", body)
    bundle = view.bundle
    page = bundle["text/html"]
    assert "<script>" not in page
    assert "\x00" not in page
    assert "\u202e" not in page
    assert "a\\x00b&lt;script&gt;alert(1)&lt;/script&gt;\\u202e" in page
    assert "\x00" not in bundle["text/plain"]
    # Our type carries the name as data (the renderer sets it as text only); the
    # figures' trace names are plotly text, escaped by figures.py.
    rows = bundle[MIME_TYPE]["summary"]
    assert rows[0]["Region"] == "a\\x00b<script>alert(1)</script>\\u202e"
    names = [t["name"] for t in bundle[MIME_TYPE]["figures"]["duration"]["data"]]
    assert all("<script>" not in name for name in names)


def test_the_static_page_needs_no_kaleido_and_draws_median_bars(profiled, monkeypatch):
    view, records = profiled
    # No kaleido here: importing it fails, and nothing may try.
    monkeypatch.setitem(sys.modules, "kaleido", None)
    data = view.bundle[MIME_TYPE]
    page = static_bundle(
        session_id=11,
        status="completed",
        progress=data["progress"],
        message=data["message"],
        summary=data["summary"],
        bars=median_bars(build(records).regions),
    )["text/html"]
    assert "<img" not in page
    assert "data:image" not in page
    assert "<script" not in page
    assert "<svg" not in page  # sanitizers drop it; the bars are styled <div>s
    # One bar per region and config, the longest BAR_WIDTH_PX wide.
    medians = page.split('class="jp-nsightLab-Static-medians"')[1].split("</table>")[0]
    rows = medians.split("<tr>")[2:]  # after the caption's and the head's rows
    assert len(rows) == 12
    widths = [int(w) for w in re.findall(r"<div style=\"width:(\d+)px", medians)]
    assert len(widths) == 12
    assert max(widths) == 240
    assert min(widths) >= 1
    for region in REGIONS:
        assert html.escape(region) in medians
    assert "n=1024" in medians
    assert "%nsight show 11" in page
    assert "jp-nsightLab-Static-summary" in page


def test_median_bars_show_the_median_of_each_region_and_config():
    def record(annotation: str, ci: int, run: int, ns: float) -> RunRecord:
        return RunRecord(
            session_id=1,
            config_index=ci,
            config={"n": 10**ci},
            run_index=run,
            annotation=annotation,
            duration_ns=ns,
            backend="cpu",
        )

    records = [
        # One slow outlier must not move the median (the mean would be 334 µs).
        *(record("a", 0, i, ns) for i, ns in enumerate((1000.0, 1200.0, 1e6))),
        *(record("a", 1, i, ns) for i, ns in enumerate((2400.0, 2400.0, 2600.0))),
    ]
    page = static_bundle(
        session_id=1,
        status="completed",
        progress={},
        message="",
        summary=[],
        bars=median_bars(build(records).regions),
    )["text/html"]
    assert "1.200 µs" in page
    assert "2.400 µs" in page
    assert 'style="width:120px' in page  # 1.2 of 2.4 µs: half of 240 px
    assert 'style="width:240px;height' in page


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (512.0, "512 ns"),
        (12.5, "12.50 ns"),
        (6473.03, "6.473 µs"),
        (999_960.0, "1.000 ms"),
        (21_560_000.0, "21.56 ms"),
        (1.2e9, "1.200 s"),
        (float("nan"), "\u2013"),
    ],
)
def test_durations_read_in_their_unit(ns, text):
    assert format_duration(ns) == text


def test_a_failing_static_page_is_one_line_and_our_type_stays(monkeypatch):
    def broken(**_kwargs: object) -> dict[str, str]:
        msg = "a\x00b <script>"
        raise ValueError(msg)

    monkeypatch.setattr(bundle_module, "static_bundle", broken)
    bundle = final_bundle(
        session_id=9,
        status="failed",
        progress={},
        message="",
        figures={},
        summary=[],
    )
    assert bundle[MIME_TYPE]["status"] == "failed"
    assert "no static view of this session here: ValueError" in bundle["text/plain"]
    assert "<script>" not in bundle["text/html"]
    assert "\x00" not in bundle["text/html"]


class _Handle:
    def __init__(self, calls: list[tuple[str, Any]]) -> None:
        self.calls = calls

    def update(self, obj: object, **kwargs: object) -> None:
        self.calls.append(("update", obj, kwargs))


def test_finish_puts_the_bundle_in_the_widgets_place_then_closes_it(monkeypatch):
    import IPython.display

    calls: list[tuple[str, Any]] = []

    def display(obj: object, **kwargs: object) -> _Handle:
        calls.append(("display", obj, kwargs))
        return _Handle(calls)

    monkeypatch.setattr(IPython.display, "display", display)
    view = WidgetView(session_id=5)
    from nsight_lab.contract.progress import make_progress

    progress = make_progress(
        status="running",
        configs_total=1,
        runs_per_config=1,
        config_index=0,
        runs_done_in_config=0,
        runs_done_total=0,
    )
    view.update(progress, force=True)
    widget = view.widget
    assert calls == [("display", widget, {"display_id": True})]
    closed_when_updated: list[bool] = []
    real_update = _Handle.update

    def update(handle: _Handle, obj: object, **kwargs: object) -> None:
        closed_when_updated.append(widget.comm is None)
        real_update(handle, obj, **kwargs)

    monkeypatch.setattr(_Handle, "update", update)
    view.finish([], status="interrupted", message="KeyboardInterrupt")
    assert calls[1] == ("update", view.bundle, {"raw": True})
    assert closed_when_updated == [False]  # replaced first, closed after
    assert widget.comm is None
    assert view.bundle[MIME_TYPE]["status"] == "interrupted"
    assert "KeyboardInterrupt" in view.bundle["text/plain"]
    assert widget.status == "interrupted"  # the traits still hold the end state


def test_a_session_that_ends_before_any_update_shows_the_bundle_alone(monkeypatch):
    import IPython.display

    calls: list[tuple[object, dict[str, object]]] = []
    monkeypatch.setattr(
        IPython.display, "display", lambda obj, **kw: calls.append((obj, kw))
    )
    view = WidgetView(session_id=6)
    view.finish([], status="failed", message="RuntimeError: boom")
    assert calls == [(view.bundle, {"raw": True})]  # no widget was ever shown
    assert view.widget.comm is None


def test_summary_values_carry_their_unit_and_no_unit_column():
    rows = [
        {"Annotation": "mm", "AvgValue": 21_560_000.0, "StdDev": 999_960.0,
         "Unit": "ns", "NumRuns": 3},
        {"Annotation": "bw", "AvgValue": 812.3, "Unit": "GB/s", "NumRuns": 3},
    ]  # fmt: skip
    bundle = static_bundle(
        session_id=1, status="completed", progress={}, message="", summary=rows
    )
    page, text = bundle["text/html"], bundle["text/plain"]
    for out in (page, text):
        assert "21.56 ms" in out
        assert "1.000 ms" in out
        assert "812.3 GB/s" in out
        assert "Unit" not in out
        assert "2.156e+07" not in out
    assert '<td class="num">3</td>' in page  # counts stay plain numbers
