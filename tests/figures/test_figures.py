from __future__ import annotations

import dataclasses
import json
import re

import pytest

from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.figures import (
    CHART_ORDER,
    PALETTE,
    LiveFigures,
    StaticExportError,
    clocks_figure,
    duration_figure,
    figure_json,
    figures_to_json,
    ordered_charts,
    printable,
    roofline_figure,
    traffic_figure,
    write_html,
    write_png,
)
from nsight_lab.figures.common import WHOLE_RUNS
from nsight_lab.roofline.counters import DRAM_READ, DRAM_WRITE
from nsight_lab.roofline.placement import peaks_for, place, place_records
from nsight_lab.stats import running_mean_ci

EVIL = "<img src=x onerror=alert(1)>"
FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
H200 = peaks_for("NVIDIA H200")
DURATIONS = [101.0, 99.5, 100.2, 103.1, 98.7, 100.9]  # µs


def _tel(run: int) -> Telemetry:
    throttled = run == 3
    return Telemetry(
        sm_clock_mhz=1100.0 if throttled else 1980.0,
        temperature_c=40.0 + run,
        throttled=throttled,
        clock_event_reasons=("hw thermal slowdown",) if throttled else (),
    )


def _records(configs=(0,)) -> list[RunRecord]:
    n = 1 << 20
    out = []
    for ci in configs:
        for run, us in enumerate(DURATIONS):
            common = {
                "session_id": 1,
                "config_index": ci,
                "config": {"n": 1024 << ci},
                "run_index": run,
                "backend": "events",
                "telemetry": _tel(run),
            }
            out.append(
                RunRecord(
                    annotation=EVIL,
                    duration_ns=us * 1e3 * 1.5,
                    metrics={
                        "model__flops": 2.0 * n,
                        "model__bytes_read": 16.0 * n,
                        "model__bytes_written": 8.0 * n,
                    },
                    **common,
                )
            )
            out.append(
                RunRecord(
                    annotation="addcmul",
                    duration_ns=us * 1e3,
                    metrics={
                        "model__flops": 2.0 * n,
                        "model__bytes_read": 12.0 * n,
                        "model__bytes_written": 4.0 * n,
                        DRAM_READ: 12.0 * n,
                        DRAM_WRITE: 4.0 * n,
                        FFMA: 1.0 * n,
                    },
                    **common,
                )
            )
    return out


def _walk(node, path=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, f"{path}[{i}]")
    elif isinstance(node, str):
        yield path, node


def test_duration_figure_traces_band_and_throttle_marks():
    fig = duration_figure(_records())
    data = fig.to_plotly_json()["data"]
    assert len(data) == 6  # (band low, band high, points) per region
    lower, upper, points = data[3], data[4], data[5]
    assert points["name"] == "addcmul"
    assert "fill" not in lower
    assert upper["fill"] == "tonexty"  # filled down to the lower edge just before
    assert lower["showlegend"] is upper["showlegend"] is False
    assert list(points["x"]) == list(range(6))
    assert list(points["y"]) == pytest.approx(DURATIONS)
    low, high = running_mean_ci(DURATIONS)
    # The band from MIN_BAND_RUNS (5) runs on, never below zero.
    assert list(lower["y"]) == pytest.approx(low[4:])
    assert list(upper["y"]) == pytest.approx(high[4:])
    assert list(lower["x"]) == list(upper["x"]) == [4, 5]
    assert min(lower["y"]) > 0
    # The second region's marker is a square; a throttled run's an open square.
    symbols = ["square"] * 3 + ["square-open"] + ["square"] * 2
    assert list(points["marker"]["symbol"]) == symbols
    assert points["customdata"][3][1] == "throttled: hw thermal slowdown"
    assert points["customdata"][0][1] == ""
    assert points["marker"]["color"] == PALETTE[1]
    assert fig.layout.paper_bgcolor == fig.layout.plot_bgcolor == "rgba(0, 0, 0, 0)"
    assert fig.layout.font.color is None


def test_the_duration_axis_explains_open_markers_only_where_a_run_was_throttled():
    # A session with a throttled run: the title says what its open marker means
    title = duration_figure(_records()).layout.yaxis.title.text
    assert title == "duration (µs, log); open: throttled"
    # A cpu session reads no clocks: nothing is ever drawn open, nothing explained
    calm = [dataclasses.replace(r, telemetry=Telemetry()) for r in _records()]
    assert duration_figure(calm).layout.yaxis.title.text == "duration (µs, log)"


def test_duration_figure_labels_configs_and_thins_points():
    fig = duration_figure(_records(configs=(0, 1)), max_points=3)
    names = [t.name for t in fig.data if t.showlegend is not False]
    assert names == [
        "&lt;img src=x onerror=alert(1)&gt; [n=1024]",
        "addcmul [n=1024]",
        "&lt;img src=x onerror=alert(1)&gt; [n=2048]",
        "addcmul [n=2048]",
    ]
    assert list(fig.data[2].x) == [0, 2, 5]  # first and last run kept


def test_clocks_figure_two_axes_in_run_order():
    records = _records(configs=(0, 1))
    fig = clocks_figure(records)
    assert [t.name for t in fig.data] == ["SM clock", "temperature"]
    sm, temp = fig.data
    assert list(sm.x) == list(range(12))  # 6 runs x 2 configs, one point per run
    assert sm.y[3] == 1100.0
    assert temp.yaxis == "y2"
    # Two panels, clock above temperature: neither line can hide the other.
    assert fig.layout.yaxis2.overlaying is None
    assert fig.layout.yaxis2.domain[1] < fig.layout.yaxis.domain[0]
    assert sm.marker.symbol[3] == "x"
    assert sm.customdata[9][0] == "n=2048, run 3"
    assert sm.customdata[9][1] == "throttled: hw thermal slowdown"


def test_roofline_figure_roofs_ridges_and_points():
    assert H200 is not None
    placements = place_records(_records(), H200, {"addcmul": "torch.bfloat16"})
    fig = roofline_figure(placements, H200)
    assert fig.layout.xaxis.type == "log"
    assert fig.layout.yaxis.type == "log"
    names = [t.name for t in fig.data]
    assert names[:4] == [
        "DRAM 4.8 TB/s",
        "fp32 67 TFLOP/s",
        "bf16 989.5 TFLOP/s",
        "ridge points",
    ]
    assert fig.data[3].showlegend is False
    # Each compute roof labelled at its right end.
    assert [a.text for a in fig.layout.annotations] == ["fp32", "bf16"]
    memory, fp32, bf16, ridges = fig.data[:4]
    # The memory roof ends where the highest compute roof starts: at its ridge.
    assert memory.x[-1] == pytest.approx(989.5e12 / 4.8e12)
    assert memory.y[-1] == pytest.approx(989.5)
    slope = (memory.y[1] - memory.y[0]) / (memory.x[1] - memory.x[0])
    assert slope == pytest.approx(4.8)  # TB/s: TFLOP/s per FLOP/byte
    assert fp32.x[0] == pytest.approx(67 / 4.8)
    assert list(fp32.y) == pytest.approx([67.0, 67.0])
    assert 4.8 * fp32.x[0] == pytest.approx(fp32.y[0])  # roofs meet at the ridge
    assert list(bf16.y) == pytest.approx([989.5, 989.5])
    assert list(ridges.customdata) == ["fp32", "bf16"]
    regions = [t for t in fig.data[4:] if t.meta is not None]
    # Region 0's circle, open (modelled); region 1's square, filled (measured).
    assert [t.marker.symbol for t in regions] == ["circle-open", "square"]
    evil, fused = regions
    assert evil.name == "&lt;img src=x onerror=alert(1)&gt; (modelled)"
    assert fused.name == "addcmul (measured)"
    p = placements[1]
    custom = fused.customdata[0]
    # The two share a place and are drawn apart; the hover keeps the true values.
    assert custom[12] == f"{p.intensity:.3g}"
    assert custom[13] == f"{p.achieved_flops_per_s / 1e12:.4g}"
    assert (fused.x[0], fused.y[0]) != (evil.x[0], evil.y[0])
    assert custom[4] == f"{p.pct_of_roof:.3g}"
    assert custom[5] == "memory"
    assert custom[6] == "FLOPs measured, bytes measured"
    for word in ("FLOPs", "bytes", "intensity", "TFLOP/s", "% of roof"):
        assert word in fused.hovertemplate


def test_roofline_figure_notes_regions_off_log_axes():
    assert H200 is not None
    p = place(
        "copy", flops=0, bytes_read=1e6, bytes_written=1e6, duration_ns=1e3, peaks=H200
    )
    fig = roofline_figure([p], H200)
    assert len(fig.data) == 4  # memory roof, fp32 roof, ridge points, copy's entry
    # Named in the legend, not in a note under the plot (it hit the axis title).
    assert fig.data[3].name == "copy (no FLOPs: not on log axes)"
    assert list(fig.data[3].x) == [None]
    assert [a.text for a in fig.layout.annotations] == ["fp32"]


def test_traffic_figure_stacked_with_time_and_ratio():
    assert H200 is not None
    placements = place_records(_records(), H200)
    fig = traffic_figure(placements)
    assert fig.layout.barmode == "stack"
    read, written, rate = fig.data
    assert (read.type, written.type, rate.type) == ("bar", "bar", "scatter")
    assert read.orientation == written.orientation == "h"
    # Names on the y axis, each with its region's sign, first region on top.
    assert [row.split(" <span")[0] for row in read.y] == [
        "&lt;img src=x onerror=alert(1)&gt;",
        "addcmul",
    ]
    assert read.customdata[0][0] == "&lt;img src=x onerror=alert(1)&gt;"
    assert fig.layout.yaxis.autorange == "reversed"
    n = 1 << 20
    assert list(read.x) == [16.0 * n, 12.0 * n]
    assert list(written.x) == [8.0 * n, 4.0 * n]
    # Each region's DRAM bandwidth printed at its bar's end, room kept for it.
    assert list(rate.x) == [24.0 * n, 16.0 * n]
    bandwidth = [p.achieved_bytes_per_s for p in placements]
    assert list(rate.text) == [f"{b / 1e9:.3g} GB/s" for b in bandwidth]
    assert rate.cliponaxis is False
    assert fig.layout.xaxis.range[1] >= 1.4 * 24.0 * n
    assert [c[2] for c in rate.customdata] == [
        f"{1.5 * 100.55:.4g}",
        f"{100.55:.4g}",
    ]  # median µs, in the hover
    assert "1.5&times; bytes" in fig.layout.title.text
    assert "1.5&times; time" in fig.layout.title.text
    # Bytes from two sources: each bar's in its hover, none in the legend.
    assert {p.bytes_source for p in placements} == {"measured", "modelled"}
    assert read.name == "bytes read"
    assert "%{customdata[0]}" in read.hovertemplate
    one = [dataclasses.replace(p, bytes_source="measured") for p in placements]
    assert traffic_figure(one).data[0].name == "bytes read, measured"


def test_annotation_names_are_data_never_markup():
    assert H200 is not None
    records = _records(configs=(0, 1))
    figures = figures_to_json(records, H200)
    assert set(figures) == {"duration", "clocks", "roofline", "traffic"}
    raw_paths = []
    for name, fig in figures.items():
        for path, text in _walk(fig):
            if "hovertemplate" in path or "texttemplate" in path:
                assert "onerror" not in text, (name, path)
                assert "<img" not in text, (name, path)
            if EVIL in text:
                raw_paths.append(path)
                assert re.search(r"\.meta(\[\d+\])?\.annotation$", path), (name, path)
            if "onerror" in text and EVIL not in text:
                assert "&lt;img" in text, (name, path)  # shown as text
    assert raw_paths  # kept, unescaped, as data for the front end


def test_figure_json_is_strict_json():
    assert H200 is not None
    placements = [
        place(
            "regs",
            flops=1e9,
            bytes_read=0,
            bytes_written=0,
            duration_ns=1e3,
            peaks=H200,
        ),
        *place_records(_records(), H200),
    ]
    for fig in (
        duration_figure(_records()),
        clocks_figure(_records()),
        roofline_figure(placements, H200),
        traffic_figure(placements),
    ):
        data = figure_json(fig)
        text = json.dumps(data, allow_nan=False)
        assert json.loads(text) == data
        assert data["layout"]["paper_bgcolor"] == "rgba(0, 0, 0, 0)"


def test_figures_to_json_without_peaks_has_run_figures_only():
    figures = figures_to_json(_records())
    assert list(figures) == ["duration", "clocks"]


def test_figures_come_in_the_one_chart_order():
    assert H200 is not None
    figures = figures_to_json(_records(configs=(0, 1)), H200)
    # Every chart but "counters", which needs PM-sampled timelines (the pm backend),
    # and the per-rank ones, which need records measured in several ranks.
    not_drawn = {"counters", "ranks", "rank_clocks"}
    assert list(figures) == [c for c in CHART_ORDER if c not in not_drawn]
    assert ordered_charts(["zeta", "traffic", "alpha", "duration"]) == [
        "duration",
        "traffic",
        "alpha",
        "zeta",
    ]


def test_clocks_figure_thins_runs_at_their_true_positions():
    records = _records(configs=(0, 1))
    runs = len({(r.config_index, r.run_index) for r in records})
    fig = figure_json(clocks_figure(records, max_points=4))
    for trace in fig["data"]:
        assert len(trace["x"]) == 4
        assert trace["x"][0] == 0
        assert trace["x"][-1] == runs - 1


def test_write_html_is_self_contained(tmp_path):
    path = write_html(duration_figure(_records()), tmp_path / "d.html")
    page = path.read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]+src=", page)
    assert "Plotly.newPlot" in page
    assert EVIL not in page  # escaped inside the inline JSON too


def test_write_png_writes_a_png(tmp_path):
    fig = duration_figure(_records())
    try:
        path = write_png(fig, tmp_path / "d.png", width=400, height=300, scale=1)
    except StaticExportError as exc:
        pytest.skip(f"static export unavailable here: {exc}")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = (
        int.from_bytes(data[16:20], "big"),
        int.from_bytes(data[20:24], "big"),
    )
    assert (width, height) == (400, 300)


def test_roofline_symbol_for_mixed_sources():
    assert H200 is not None
    p = place(
        "mixed",
        flops=1e9,
        bytes_read=1e8,
        bytes_written=0,
        duration_ns=1e6,
        peaks=H200,
        flops_source="modelled",
        bytes_source="measured",
    )
    fig = roofline_figure([p], H200)
    assert fig.data[-1].marker.symbol == "circle-open"
    assert fig.data[-1].name == "mixed (bytes measured)"


def test_write_png_failure_is_one_clear_error(tmp_path, monkeypatch):
    import plotly.graph_objects as go

    def fail(*_args, **_kwargs):
        msg = "Kaleido requires Google Chrome to be installed."
        raise RuntimeError(msg)

    monkeypatch.setattr(go.Figure, "to_image", fail)
    with pytest.raises(
        StaticExportError, match=r"cannot write .* as PNG \(tried 2 times\): Kaleido"
    ):
        write_png(duration_figure(_records()), tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_write_png_tries_a_failed_browser_once_more(tmp_path, monkeypatch):
    """kaleido's page called before its scripts loaded (seen on 2 loaded cores)."""
    import plotly.graph_objects as go

    calls = []
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 16

    def flaky(*_args, **_kwargs):
        calls.append(1)
        if len(calls) == 1:
            msg = "{'description': 'ReferenceError: kaleido_scopes is not defined'}"
            raise RuntimeError(msg)
        return png

    monkeypatch.setattr(go.Figure, "to_image", flaky)
    path = write_png(duration_figure(_records()), tmp_path / "x.png")
    assert path.read_bytes() == png
    assert len(calls) == 2


def test_write_png_does_not_retry_a_rejected_figure(tmp_path, monkeypatch):
    import plotly.graph_objects as go

    class KaleidoError(Exception):  # kaleido's own name: plotly.js rejected the figure
        pass

    calls = []

    def reject(*_args, **_kwargs):
        calls.append(1)
        msg = "Invalid value of type 'builtins.str' for property 'x'"
        raise KaleidoError(msg)

    monkeypatch.setattr(go.Figure, "to_image", reject)
    with pytest.raises(
        StaticExportError, match=r"as PNG: KaleidoError: Invalid"
    ) as err:
        write_png(duration_figure(_records()), tmp_path / "x.png")
    assert err.value.unavailable is False
    assert len(calls) == 1
    assert not (tmp_path / "x.png").exists()


# -- live figures: appended run by run, equal to the figures built at once ------------
def _apply_like_plotly(figure, appends):
    """What the widget's front end does with LiveFigures.add's appends."""
    figure["data"].extend(appends["traces"])
    for axis, update in appends.get("layout", {}).items():  # mergeLayout (mount.ts)
        figure["layout"][axis] = {**figure["layout"].get(axis, {}), **update}

    for op in appends["extend"]:
        for k, index in enumerate(op["indices"]):
            for path, columns in op["data"].items():
                node = figure["data"][index]
                *parents, leaf = path.split(".")
                for part in parents:
                    node = node.setdefault(part, {})
                node[leaf] = (node.get(leaf) or []) + columns[k]
                if appends["max_points"] is not None:
                    node[leaf] = node[leaf][-appends["max_points"] :]


def _unset(layout):
    """``layout`` as plotly reads it: an axis key set to null is unset."""
    return {
        key: {k: v for k, v in value.items() if v is not None}
        if isinstance(value, dict)
        else value
        for key, value in layout.items()
    }


def test_live_figures_appended_run_by_run_equal_the_full_figures():
    records = _records(configs=(0, 1))
    live = LiveFigures(with_config=True)
    front = json.loads(json.dumps(live.figures))  # the widget's first draw
    for k in range(0, len(records), 3):  # batches of 3 records, as runs finish
        appends = live.add(records[k : k + 3])
        json.dumps(appends, allow_nan=False)  # goes over the wire as it is
        for name, change in appends.items():
            _apply_like_plotly(front[name], change)
    full = {
        "duration": figure_json(duration_figure(records)),
        "clocks": figure_json(clocks_figure(records)),
    }
    # The full duration chart's log axis has the runs' range and whole-number
    # ticks; the live one's range grows with them (plotly's log ticks at 1, 2, 5).
    for key in ("range", "tickvals", "ticktext"):
        del full["duration"]["layout"]["yaxis"][key]
    full["duration"]["layout"]["yaxis"]["dtick"] = "D2"
    del full["duration"]["layout"]["xaxis"]["dtick"]  # 6 runs: each ticked
    # The clock chart's 12 runs are plotly's to tick, live too once past 10.
    assert "dtick" not in full["clocks"]["layout"]["xaxis"]
    # The clock chart's axes have the full one's floors at every step (the appends
    # carry them): no autorange while runs come.
    for name in ("duration", "clocks"):
        for got in (live.figures[name], front[name]):
            assert _unset(got["layout"]) == full[name]["layout"]
            assert len(got["data"]) == len(full[name]["data"])
            for trace, want in zip(got["data"], full[name]["data"], strict=True):
                assert set(trace) == set(want)
                for key in want:
                    if key == "y":
                        assert trace[key] == pytest.approx(want[key], nan_ok=True)
                    else:
                        assert trace[key] == want[key], (name, key)
    assert live.points == sum(len(t["x"]) for f in full.values() for t in f["data"])
    assert live.add([]) == {}
    # A record seen again (same run) adds no clock point.
    assert "clocks" not in live.add(records[-1:])


def test_live_charts_tick_whole_runs_until_there_are_many():
    """Issue 30: the live clock chart's first runs read 0, 0.5, 1, 1.5, 2 along x,
    and the live duration axis labelled every digit (1k 900 800 ... 60 50)."""
    base = _records()[0]
    records = [dataclasses.replace(base, run_index=i) for i in range(12)]
    live = LiveFigures(with_config=False)
    assert live.figures["clocks"]["layout"]["xaxis"]["dtick"] == 1
    assert live.figures["duration"]["layout"]["yaxis"]["dtick"] == "D2"
    changes = [live.add([r]) for r in records]
    # Past WHOLE_RUNS runs, plotly's ticks again, said once.
    for name in ("clocks",):
        released = [
            k
            for k, change in enumerate(changes)
            if change.get(name, {}).get("layout", {}).get("xaxis") == {"dtick": None}
        ]
        assert released == [WHOLE_RUNS], name
        assert live.figures[name]["layout"]["xaxis"]["dtick"] is None
    assert "dtick" not in figure_json(clocks_figure(records))["layout"]["xaxis"]


def test_no_telemetry_draws_no_clock_traces_live_or_at_once():
    """The cpu backend reads no clocks: no empty axes, the views say why instead."""
    bare = [
        RunRecord(**{**r.__dict__, "telemetry": Telemetry()})
        for r in _records(configs=(0, 1))
    ]
    assert list(clocks_figure(bare).data) == []
    live = LiveFigures(with_config=True)
    assert all("clocks" not in live.add([r]) for r in bare)
    assert live.figures["clocks"]["data"] == []
    assert figures_to_json(bare)["clocks"]["data"] == []


def test_clock_traces_appear_with_the_first_reading_and_match_the_full_figure():
    """Runs without a reading before the first one with it (NVML opened late)."""
    records = _records(configs=(0, 1))
    mixed = [
        RunRecord(**{**r.__dict__, "telemetry": Telemetry()}) if i < 4 else r
        for i, r in enumerate(records)
    ]
    live = LiveFigures(with_config=True)
    front = json.loads(json.dumps(live.figures))
    for record in mixed:
        for name, change in live.add([record]).items():
            _apply_like_plotly(front[name], change)
    full = figure_json(clocks_figure(mixed))
    assert [t["name"] for t in front["clocks"]["data"]] == ["SM clock", "temperature"]
    got = front["clocks"]["data"][0]
    # Runs before the first reading are left out live (nothing to draw yet); every
    # run from the first reading on is at its true position, as in the full figure.
    first = full["data"][0]["x"].index(got["x"][0])
    assert got["x"] == full["data"][0]["x"][first:]
    assert got["y"] == full["data"][0]["y"][first:]


def test_live_figures_keep_the_latest_points_per_trace():
    records = [r for r in _records() if r.annotation == "addcmul"]
    live = LiveFigures(with_config=False, max_points=4)
    for record in records:
        appends = live.add([record])
        assert appends["duration"]["max_points"] == 4
    points = live.figures["duration"]["data"][2]
    assert points["x"] == [2, 3, 4, 5]
    assert points["marker"]["symbol"] == ["circle", "circle-open", "circle", "circle"]
    assert live.figures["clocks"]["data"][0]["x"] == [2, 3, 4, 5]


def test_control_characters_and_lone_surrogates_are_made_visible():
    assert printable("a\x00b\u202e\ud800\tc") == "a\\x00b\\u202e\\ud800\tc"
    bad = "a\x00b<script>\ud800"
    records = [
        RunRecord(
            session_id=1,
            config_index=0,
            config={},
            run_index=run,
            annotation=bad,
            duration_ns=1e3 + run,
            backend="cpu",
        )
        for run in range(3)
    ]
    figure = figure_json(duration_figure(records))
    text = json.dumps(figure, ensure_ascii=False)
    text.encode("utf-8")  # no lone surrogate left: it can go over the wire
    names = [t["name"] for t in figure["data"]]
    assert not any("\x00" in n or "<script>" in n for n in names)
    assert figure["data"][2]["name"] == "a\\x00b&lt;script&gt;\\ud800"
    assert figure["data"][2]["meta"]["annotation"] == "a\x00b<script>\\ud800"
