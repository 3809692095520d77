"""pm records downstream: the store's series column, BytesSource, the counters chart."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

import pytest

from nsight_lab.backends.pm.series import CounterSeries, pack
from nsight_lab.contract.records import RunRecord, SessionInfo
from nsight_lab.figures import CHART_ORDER, PALETTE, counters_figure, figures_to_json
from nsight_lab.results import to_dataframe
from nsight_lab.roofline.placement import peaks_for, region_work
from nsight_lab.store import migrations
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from pathlib import Path

DRAM = ("dram__bytes_read.sum", "dram__bytes_write.sum")
TENSOR = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"


def series(level: float, n: int = 5) -> bytes:
    return pack(
        CounterSeries(
            metrics=(*DRAM, TENSOR),
            units=("GB/s", "GB/s", "%"),
            t_us=tuple(20.0 * i + 10 for i in range(n)),
            values=((level,) * n, (level / 2,) * n, (12.5,) * n),
        )
    )


def pm_record(annotation: str, run: int, duration_us: float, **kw: Any) -> RunRecord:
    fields: dict[str, Any] = {
        "session_id": 1,
        "config_index": 0,
        "config": {},
        "run_index": run,
        "annotation": annotation,
        "duration_ns": duration_us * 1e3,
        "backend": "pm",
        "metrics": {
            DRAM[0]: 256e6,
            DRAM[1]: 256e6,
            "model__flops": 64e6,
            "model__bytes_read": 250e6,
            "model__bytes_written": 250e6,
        },
        "series": series(3000.0 + run),
    }
    fields.update(kw)
    return RunRecord(**fields)


def _panel_names(layout: Any) -> list[str]:
    """The region names over the panels (their coloured sign stripped)."""
    return [str(a["text"]).split("</span> ", 1)[1] for a in layout["annotations"]]


def test_counters_over_time_draws_the_median_run_of_each_region() -> None:
    records = [
        pm_record("x*2", 0, 130.0),
        pm_record("x*2", 1, 120.0),  # the median of three
        pm_record("x*2", 2, 125.0),
        pm_record("<b>sum</b>", 0, 70.0, series=series(2000.0, 3)),
        pm_record("events-only", 0, 5.0, series=None),
    ]
    fig = counters_figure(records, peaks_for("NVIDIA H200"))
    assert fig is not None
    layout = fig.to_plotly_json()["layout"]
    # One panel per region and unit: GB/s panels first, then %; one trace per
    # metric and region, one legend entry per metric (and the DRAM roof's).
    panels = [t for t in fig.data if t.name != "DRAM roof 4.8 TB/s"]
    assert [(t.name, t.xaxis) for t in panels] == [
        (f"{DRAM[0]} (GB/s)", "x"),
        (f"{DRAM[1]} (GB/s)", "x"),
        (f"{DRAM[0]} (GB/s)", "x2"),
        (f"{DRAM[1]} (GB/s)", "x2"),
        (f"{TENSOR} (%)", "x3"),
        (f"{TENSOR} (%)", "x4"),
    ]
    assert [t.name for t in fig.data if t.showlegend is not False] == [
        f"{DRAM[0]} (GB/s)",
        f"{DRAM[1]} (GB/s)",
        "DRAM roof 4.8 TB/s",
        f"{TENSOR} (%)",
    ]
    # x*2's median run (run 2, 125 µs) on its own time axis, from its start.
    read = panels[0]
    assert list(read.y) == [3002.0] * 5
    assert read.x[0] == 10.0
    assert layout["xaxis"]["range"] == pytest.approx([0, 125.0 * 1.02])
    assert layout["xaxis2"]["range"][1] < 125.0  # sum's own axis: 70 µs
    # Panels of one unit share y (the DRAM roof drawn, 4,800 GB/s, is the top).
    assert layout["yaxis"]["range"] == layout["yaxis2"]["range"]
    assert layout["yaxis"]["range"][1] >= 4800.0
    assert layout["yaxis2"]["matches"] == "y"
    roofs = [t for t in fig.data if t.name == "DRAM roof 4.8 TB/s"]
    assert [list(t.y) for t in roofs] == [[4800.0, 4800.0]] * 2
    # Side by side, the % panels below the GB/s ones.
    assert layout["xaxis"]["domain"][1] < layout["xaxis2"]["domain"][0]
    assert layout["yaxis3"]["domain"][1] < layout["yaxis"]["domain"][0]
    assert _panel_names(layout) == ["x*2", "&lt;b&gt;sum&lt;/b&gt;"] * 2
    assert fig.layout.height > 2 * 84  # grows with its rows


def test_counters_panels_take_each_regions_colour_and_never_share_a_row() -> None:
    names = [f"region_{i:02d}_with_a_long_name" for i in range(12)]
    records = [pm_record(name, 0, 50.0 + 10 * i) for i, name in enumerate(names)]
    fig = counters_figure(records)
    assert fig is not None
    layout = fig.to_plotly_json()["layout"]
    texts = [a["text"] for a in layout["annotations"]]
    # Region i's sign in region i's colour, its name cut to fit three panels a row.
    for i, text in enumerate(texts[:12]):
        assert f"color:{PALETTE[i]}" in text
        assert len(text.split("</span> ", 1)[1]) <= 22
    domains = [layout[f"xaxis{i + 1 if i else ''}"]["domain"] for i in range(12)]
    assert len({round(d[0], 3) for d in domains}) == 3  # three panels a row


def test_no_series_no_chart() -> None:
    assert counters_figure([pm_record("a", 0, 100.0, series=None)]) is None
    figures = figures_to_json([pm_record("a", 0, 100.0, series=None)])
    assert "counters" not in figures


def test_the_counters_chart_is_served_last_in_chart_order() -> None:
    assert CHART_ORDER[-1] == "counters"
    peaks = peaks_for("NVIDIA H200")
    figures = figures_to_json([pm_record("a", i, 100.0) for i in range(3)], peaks)
    assert list(figures) == ["duration", "clocks", "roofline", "traffic", "counters"]
    # The roofline hover says where the bytes came from.
    (region,) = [t for t in figures["roofline"]["data"] if "meta" in t]
    assert "bytes measured (PM sampling)" in region["customdata"][0][6]
    # So do the legends: the roofline's that FLOPs stay modelled, the traffic's
    # that every region's bytes were PM-sampled.
    assert region["name"] == "a (bytes measured)"
    bars = [t["name"] for t in figures["traffic"]["data"] if t["type"] == "bar"]
    assert bars == [
        "bytes read, measured (PM sampling)",
        "bytes written, measured (PM sampling)",
    ]


def test_measured_bytes_say_pm_sampling_and_flops_stay_modelled() -> None:
    records = [pm_record("x*2", i, 120.0 + i) for i in range(3)]
    (work,) = region_work(records)
    assert work.bytes_source == "measured (PM sampling)"
    assert work.flops_source == "modelled"
    assert (work.bytes_read, work.bytes_written) == (256e6, 256e6)
    session = SessionInfo(id=1, status="completed", backend="pm", created_at="now")
    frame = to_dataframe(records, session, [])
    row = frame[frame["Metric"] == "gpu__time_duration.sum"].iloc[0]
    assert (row["BytesSource"], row["FLOPsSource"]) == (
        "measured (PM sampling)",
        "modelled",
    )
    ncu = [pm_record("x*2", i, 120.0, backend="ncu", series=None) for i in range(3)]
    assert region_work(ncu)[0].bytes_source == "measured"


def test_the_store_keeps_each_run_series(tmp_path: Path) -> None:
    with RunStore(tmp_path / "s.sqlite") as store:
        sid = store.create_session(backend="pm").id
        written = [
            pm_record("a", 0, 100.0, session_id=sid),
            pm_record("b", 0, 10.0, session_id=sid, series=None),
        ]
        store.add_runs(written)
        back = store.runs(sid)
    assert [r.series for r in back] == [written[0].series, None]
    assert back[0].metrics[DRAM[0]] == 256e6


def test_a_version_1_store_gains_the_series_column(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    for statement in migrations.STEPS[0]:
        conn.execute(statement)
    conn.execute(
        "INSERT INTO sessions (backend, status, created_at, schema_version)"
        " VALUES ('events', 'completed', '2026-01-01T00:00:00+00:00', 1)"
    )
    conn.execute(
        "INSERT INTO runs (session_id, config_index, config_json, run_index,"
        " annotation, duration_ns, backend, finished_at)"
        " VALUES (1, 0, '{}', 0, 'a', 5.0, 'events', '2026-01-01T00:00:00+00:00')"
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with RunStore(path) as store:
        (run,) = store.runs(1)
    assert run.series is None
    assert run.duration_ns == 5.0


def test_an_unreadable_series_is_left_out_of_the_chart() -> None:
    assert counters_figure([pm_record("a", 0, 1.0, series=b"junk")]) is None


def test_the_live_widget_draws_each_regions_newest_sampled_run() -> None:
    from nsight_lab.contract.progress import make_progress
    from nsight_lab.figures import LiveFigures
    from nsight_lab.views.live import WidgetView

    live = LiveFigures(with_config=False)
    assert "counters" not in live.add([pm_record("events-only", 0, 5.0, series=None)])
    first = live.add([pm_record("x*2", 0, 120.0), pm_record("sum", 0, 70.0)])
    # A timeline is drawn whole from each region's newest run, not extended.
    drawn = first["counters"]["figure"]
    assert _panel_names(drawn["layout"]) == ["x*2", "sum"] * 2
    assert drawn["data"][0]["y"][:5] == [3000.0] * 5
    later = live.add([pm_record("x*2", 1, 125.0)])["counters"]["figure"]
    assert later["data"][0]["y"][:5] == [3001.0] * 5  # x*2's newest run, run 1
    assert live.figures["counters"] == later

    # The inline widget: the chart appears with a whole re-send of the figures, then
    # each update replaces it (an append whose change is the figure).
    view = WidgetView(show=False, budget=1.0)
    for run in range(3):
        progress = make_progress(
            status="running",
            configs_total=1,
            runs_per_config=3,
            config_index=0,
            runs_done_in_config=run + 1,
            runs_done_total=run + 1,
        )
        view.update(progress, [pm_record("x*2", run, 120.0 + run)], force=True)
        assert "counters" in view.widget.figures
    change = view.widget.append["charts"]["counters"]
    assert change["figure"]["data"][0]["y"][:5] == [3002.0] * 5
