"""Issue 30, left open: the live clock chart's axes and the traffic chart without peaks.

The clock chart the view model serves while runs stream in (and the widget's live
appends) has the finished chart's floors (±2 % of the clock, ±5 °C), not plotly's
autoscale; a session whose device peaks are unknown (the cpu backend) gets its
DRAM traffic chart from the work model's bytes, labelled as modelled, as its
table's ``Bytes: modelled`` says.
"""

from __future__ import annotations

import dataclasses

from nsight_lab.contract.records import RunRecord
from nsight_lab.figures import clocks_figure
from nsight_lab.figures.live import LiveFigures
from nsight_lab.viewmodel.session import SessionViewModel, build


def _run(i: int, clock: float, temperature: float) -> RunRecord:
    record = RunRecord(
        session_id=1,
        config_index=0,
        config={},
        run_index=i,
        annotation="k",
        duration_ns=1000.0,
        backend="events",
    )
    telemetry = dataclasses.replace(
        record.telemetry, sm_clock_mhz=clock, temperature_c=temperature
    )
    return dataclasses.replace(record, telemetry=telemetry)


def _modelled(i: int, annotation: str, scale: float) -> RunRecord:
    return RunRecord(
        session_id=1,
        config_index=0,
        config={},
        run_index=i,
        annotation=annotation,
        duration_ns=2e4 * scale,
        backend="cpu",
        metrics={
            "model__flops": 1e6 * scale,
            "model__bytes_read": 4e6 * scale,
            "model__bytes_written": 2e6 * scale,
        },
    )


def test_the_live_clock_axes_are_floored_as_runs_stream_in() -> None:
    model = SessionViewModel()
    runs = [_run(i, 1980.0, 40.0 + (i >= 3)) for i in range(6)]
    for k, run in enumerate(runs):
        model.add([run])
        served = model.figures()["clocks"]["layout"]
        final = clocks_figure(runs[: k + 1]).layout
        # Read as the finished chart reads, at every step.
        assert served["yaxis"]["range"] == list(final.yaxis.range)
        assert served["yaxis2"]["range"] == list(final.yaxis2.range)
        assert served["yaxis"]["autorange"] is False
        low, high = served["yaxis"]["range"]
        assert low <= 1980 * 0.98 + 1e-6
        assert high >= 1980 * 1.02 - 1e-6
        assert served["yaxis2"]["range"][1] - served["yaxis2"]["range"][0] >= 10


def test_the_widgets_appends_carry_the_floored_axes() -> None:
    live = LiveFigures(with_config=False)
    first = live.add([_run(0, 1980.0, 40.0)])["clocks"]
    assert first["layout"]["yaxis"] == {"range": [1940.4, 2019.6], "autorange": False}
    assert live.figures["clocks"]["layout"]["yaxis"]["range"] == [1940.4, 2019.6]
    # The same values again: the axes stay, nothing to send.
    assert "layout" not in live.add([_run(1, 1980.0, 40.0)])["clocks"]
    wider = live.add([_run(2, 1700.0, 60.0)])["clocks"]["layout"]
    low, high = wider["yaxis"]["range"]
    assert low < 1700.0
    assert high > 1980.0
    low, high = wider["yaxis2"]["range"]
    assert low < 40.0
    assert high > 60.0


def test_traffic_without_peaks_is_drawn_from_the_modelled_bytes() -> None:
    records = [
        _modelled(i, name, scale)
        for i in range(3)
        for name, scale in (("unfused", 2.0), ("fused", 1.0))
    ]
    view = build(records).to_json()  # no peaks: no roofline
    assert "roofline" not in view["figures"] or not view["figures"]["roofline"]["data"]
    traffic = view["figures"]["traffic"]
    assert "modelled" in traffic["layout"]["title"]["text"]
    bars = [t for t in traffic["data"] if t["type"] == "bar"]
    assert [t["name"] for t in bars] == [
        "bytes read, modelled",
        "bytes written, modelled",
    ]
    assert list(bars[0]["x"]) == [8e6, 4e6]
    assert list(bars[1]["x"]) == [4e6, 2e6]
    assert all(row["Bytes"] == "modelled" for row in view["summary"])


def test_no_traffic_chart_without_any_bytes() -> None:
    records = [_run(i, 1980.0, 40.0) for i in range(3)]
    assert "traffic" not in build(records).to_json()["figures"]
