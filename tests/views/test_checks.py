"""Issue 28 items 3 and 4 in every view: a number that cannot be true is flagged.

One session of the issue's shapes (a cupti backward at 68934 % of roof whose 2 µs
of kernels sit in 8 ms on the host; a launch-bound step whose spread follows the
host; a healthy matmul), and what each view makes of it: the view model's JSON (the
sidebar's and the bundle's source), the results frame's columns, ``nsight-lab
show``'s text, the static page and the roofline chart.
"""

from __future__ import annotations

from typing import Any

import pytest

from nsight_lab.contract import shape
from nsight_lab.contract.records import RunRecord, SessionInfo
from nsight_lab.results import to_dataframe
from nsight_lab.results.frame_summary import summary_rows
from nsight_lab.roofline.placement import peaks_for
from nsight_lab.store.run_store import RunStore
from nsight_lab.viewmodel import build
from nsight_lab.views.fallback import static_bundle
from nsight_lab.views.show import session_text

DEVICE = "NVIDIA H100 80GB HBM3"
PEAKS = peaks_for(DEVICE)
assert PEAKS is not None
BACKWARD_NS = 2083.0
HOSTS = (10e6, 14e6, 8e6, 12e6, 16e6, 9e6)


def _shape(busy: float, span: float, host: float, **more: float) -> dict[str, float]:
    return {
        shape.BUSY_NS: busy,
        shape.SPAN_NS: span,
        shape.HOST_NS: host,
        shape.LAUNCHES: 40.0,
        shape.STREAMS: more.get("streams", 1.0),
        shape.THREADS: 1.0,
        shape.FOREIGN: more.get("foreign", 0.0),
        shape.DUPLICATES: 0.0,
    }


def records(session_id: int = 1) -> list[RunRecord]:
    assert PEAKS is not None
    moved = 689.34 * PEAKS.dram_bytes_per_s * BACKWARD_NS * 1e-9  # 68934 % of DRAM
    out: list[RunRecord] = []
    for i, host in enumerate(HOSTS):
        common: dict[str, Any] = {
            "session_id": session_id,
            "config_index": 0,
            "config": {},
            "run_index": i,
            "backend": "cupti",
        }
        out.append(
            RunRecord(
                annotation="backward",
                duration_ns=BACKWARD_NS,
                metrics={
                    "model__flops": moved * 0.1,
                    "model__bytes_read": moved,
                    "model__bytes_written": 0.0,
                    **_shape(BACKWARD_NS, 2500.0, 8e6, foreign=12.0),
                },
                **common,
            )
        )
        out.append(  # launch-bound: the span (and the duration) follow the host
            RunRecord(
                annotation="step",
                duration_ns=host * 0.9,
                metrics=_shape(3.3e6, host * 0.9, host, streams=2.0),
                **common,
            )
        )
        out.append(
            RunRecord(
                annotation="matmul",
                duration_ns=9.5e6 + i,
                metrics=_shape(9.5e6, 9.8e6, 1e7),
                **common,
            )
        )
    return out


def session(session_id: int = 1) -> SessionInfo:
    return SessionInfo(
        id=session_id,
        status="completed",
        backend="cupti",
        created_at="2026-12-07T00:00:00+00:00",
        device=DEVICE,
    )


@pytest.fixture
def view() -> dict[str, Any]:
    return build(records(), session(), peaks=PEAKS).to_json()


def _row(rows: list[dict[str, str]], region: str) -> dict[str, str]:
    return next(r for r in rows if r["Region"] == region)


def test_the_view_model_flags_the_backward_and_notes_the_launch_bound_step(view):
    backward = _row(view["summary"], "backward")
    assert backward["% of roof"] == "68934 %"
    # The table names the kinds; each flag's sentence is said once, in the checks.
    assert backward["Flag"] == "past the roof; GPU work elsewhere"
    assert [c["text"] for c in view["checks"] if c["region"] == "backward"][:2] == [
        "68934 % of roof cannot be true",
        "its kernels cover 0.03 % of its 8.000 ms on the host",
    ]
    assert backward["GPU busy"] == "0.03 %"
    step = _row(view["summary"], "step")
    assert step["GPU busy"] == "30 % launch-bound"
    assert step["Flag"] == "\u2013"
    matmul = _row(view["summary"], "matmul")
    assert (matmul["GPU busy"], matmul["Flag"]) == ("95 %", "\u2013")
    kinds = [(c["region"], c["kind"]) for c in view["checks"]]
    assert kinds == [
        ("backward", "over_roof"),
        ("backward", "low_coverage"),
        ("step", "launch_bound"),
    ]
    note = view["checks"][2]["text"]
    assert (
        note == "launch-bound: GPU busy 30 % of the span; the spread follows the host"
    )
    for check in view["checks"][:2]:
        assert check["cause"]
        assert check["action"]


def test_shape_metrics_are_no_counter_rows_anywhere(view):
    assert not any(
        "region__" in cell for row in view["counters"]["rows"] for cell in row["cells"]
    )
    frame = to_dataframe(records(), session(), [], peaks=PEAKS)
    assert not frame["Metric"].str.startswith("region__").any()


def test_the_frame_has_the_flag_columns_and_its_summary_equals_the_view_models(view):
    frame = to_dataframe(records(), session(), [], peaks=PEAKS).set_index("Annotation")
    assert frame.loc["backward", "Flag"].startswith("68934 % of roof cannot be true")
    assert "misses kernels" in frame.loc["backward", "FlagCause"]
    assert "--backend events" in frame.loc["backward", "FlagAction"]
    assert frame.loc["backward", "GPUBusyPct"] == pytest.approx(BACKWARD_NS / 8e6 * 100)
    assert frame.loc["step", "Note"].startswith("launch-bound: GPU busy 30 %")
    assert frame.loc["matmul", "Flag"] == ""
    assert frame.loc["matmul", "Note"] == ""
    frame = to_dataframe(records(), session(), [], peaks=PEAKS)
    assert summary_rows(frame) == view["summary"]


def test_show_prints_the_flags_with_cause_and_action() -> None:
    with RunStore() as store:
        stored = store.create_session(backend="cupti", name="train", device=DEVICE)
        store.add_runs(records(stored.id))
        store.finish_session(stored.id, "completed")
        text = session_text(store, stored.id, width=120)
    lines = text.splitlines()
    at = lines.index("! backward: 68934 % of roof cannot be true")
    assert lines[at + 1].startswith("  cause: its duration misses kernels")
    assert lines[at + 2].startswith("  do: ")
    assert "! backward: its kernels cover 0.03 % of its 8.000 ms on the host" in lines
    note = "launch-bound: GPU busy 30 % of the span; the spread follows the host"
    assert f"note step: {note}" in lines
    assert not any("matmul:" in line for line in lines)


def test_the_static_page_lists_the_flags_in_red_above_the_table(view):
    # Issue 30: the answer first -- the flags above the table, the notes under it
    page = static_bundle(
        session_id=1,
        status="completed",
        progress={"text": "6 / 6 runs"},
        message="",
        summary=view["summary"],
        checks=view["checks"],
    )
    html = page["text/html"]
    assert '<ul class="jp-nsightLab-Static-checks">' in html
    flag = html.index("68934 % of roof cannot be true")
    assert flag < html.index("Static-summary") < html.index("step: launch-bound")
    assert (
        '<b style="color:#d62728">\u26a0 backward: 68934 % of roof cannot be true</b>'
        in html
    )
    assert "<br>cause: its duration misses kernels" in html
    assert "step: launch-bound: GPU busy 30 %" in html
    assert "! backward: 68934 % of roof cannot be true" in page["text/plain"]


def test_the_roofline_marks_the_flagged_region_red_and_open_with_a_hover(view):
    traces = {
        t.get("meta", {}).get("annotation"): t
        for t in view["figures"]["roofline"]["data"]
        if t.get("meta")
    }
    flagged = traces["backward"]
    assert flagged["name"].endswith("(cannot be true)")
    assert flagged["marker"]["line"]["color"] == "#d62728"
    assert flagged["marker"]["symbol"].endswith("-open")
    hover = "".join(flagged["customdata"][0])  # the flags are one of its fields
    assert "\u26a0 68934 % of roof cannot be true" in hover
    assert "cause: " in hover
    assert "do: " in hover
    assert "cannot be true" not in traces.get("matmul", {}).get("name", "")
