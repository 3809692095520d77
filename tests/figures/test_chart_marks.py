"""The charts' data marks can be told apart (issue 30), on the H200 fixture.

Twenty regions get twenty shapes before any repeats; roofline points at one place
are drawn apart (the hover keeps the true values) with markers large enough to
tell apart; the clock and temperature chart never hides one line under the other
and its axes do not blow a constant clock or a 1 °C drift up to the full height;
the traffic chart's legend says what the printed rate is; the kernels of a
per-kernel backend are in each region's hover and in the served kernel table.
What the browser draws of them is checked by ui-tests/tests/readability.spec.ts.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from nsight_lab.contract.records import RunRecord
from nsight_lab.figures import clocks_figure, roofline_figure, traffic_figure
from nsight_lab.figures.theme import REGION_GLYPHS, region_style
from nsight_lab.roofline.placement import peaks_for, place
from nsight_lab.store.run_store import RunStore
from nsight_lab.viewmodel import session_view

FIXTURE = Path(__file__).parents[1] / "fixtures" / "h200_block.sqlite"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("marks") / "store.sqlite"
    shutil.copyfile(FIXTURE, path)
    with RunStore(path) as opened:
        yield opened


@pytest.fixture(scope="module")
def views(store: RunStore) -> dict[int, dict[str, Any]]:
    return {sid: session_view(store, sid) for sid in (1, 3, 5)}


def _regions(fig: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        t
        for t in fig["data"]
        if "meta" in t and "customdata" in t and t["x"] and t["x"][0] is not None
    ]


def test_twenty_regions_get_twenty_shapes_before_any_repeats() -> None:
    styles = [region_style(i) for i in range(20)]
    assert len({s.symbol for s in styles}) == 20
    assert len({REGION_GLYPHS[s.symbol] for s in styles}) == 20
    assert (
        len({(s.colour, s.symbol) for s in (region_style(i) for i in range(400))})
        == 400
    )


@pytest.mark.parametrize("sid", [1, 3, 5])
def test_roofline_points_are_drawn_apart_and_large(
    views: dict[int, dict[str, Any]], sid: int
) -> None:
    fig = views[sid]["figures"]["roofline"]
    layout = fig["layout"]
    spans = [
        layout[axis]["range"][1] - layout[axis]["range"][0]
        for axis in ("xaxis", "yaxis")
    ]
    points = [
        (math.log10(t["x"][0]) / spans[0], math.log10(t["y"][0]) / spans[1])
        for t in _regions(fig)
    ]
    # Any two markers at least 4 % of the plot apart one way or the other: ~14 px
    # in a 350 px plot, the marker's size.
    for i, a in enumerate(points):
        for b in points[:i]:
            assert max(abs(a[0] - b[0]), abs(a[1] - b[1])) >= 0.04, (a, b)
    assert all(t["marker"]["size"] >= 14 for t in _regions(fig))


def test_a_spread_points_hover_gives_its_true_place() -> None:
    peaks = peaks_for("NVIDIA H200")
    assert peaks is not None
    one = place(
        "a",
        flops=2e12,
        bytes_read=1e9,
        bytes_written=1e9,
        duration_ns=2e6,
        dtype="bf16",
        peaks=peaks,
    )
    two = dataclasses.replace(one, annotation="b")
    fig = roofline_figure([one, two], peaks)
    drawn = [t for t in fig.data if t.meta is not None]
    assert len(drawn) == 2
    assert (drawn[0].x[0], drawn[0].y[0]) != (drawn[1].x[0], drawn[1].y[0])
    for t in drawn:
        assert t.customdata[0][12] == f"{one.intensity:.3g}"
        assert t.customdata[0][13] == f"{one.achieved_flops_per_s / 1e12:.4g}"
        assert "%{x" not in t.hovertemplate
        assert "%{y" not in t.hovertemplate


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


def test_a_constant_clock_and_a_1c_drift_do_not_fill_the_height() -> None:
    fig = clocks_figure([_run(i, 1980.0, 40.0 + (i >= 5)) for i in range(10)])
    clock = fig.layout.yaxis.range
    temperature = fig.layout.yaxis2.range
    assert clock[0] <= 1980 * 0.98 + 1e-6
    assert clock[1] >= 1980 * 1.02 - 1e-6
    assert temperature[1] - temperature[0] >= 10
    # Two panels: the clock's above the temperature's, never one over the other.
    assert fig.layout.yaxis.domain[0] > fig.layout.yaxis2.domain[1]
    assert fig.layout.yaxis.tickformat == ",d"
    assert fig.layout.xaxis.anchor == "y2"  # the run axis under both panels


def test_the_served_clock_chart_has_the_floors(
    views: dict[int, dict[str, Any]],
) -> None:
    layout = views[3]["figures"]["clocks"]["layout"]
    low, high = layout["yaxis"]["range"]
    assert (high - low) / ((high + low) / 2) >= 0.04 - 1e-9
    low, high = layout["yaxis2"]["range"]
    assert high - low >= 10
    assert layout["yaxis"]["domain"][0] > layout["yaxis2"]["domain"][1]


def test_the_traffic_legend_says_what_the_printed_rate_is(
    views: dict[int, dict[str, Any]],
) -> None:
    traces = views[1]["figures"]["traffic"]["data"]
    rate = next(t for t in traces if t.get("mode") == "text")
    assert rate["showlegend"] is True
    assert "GB/s" in rate["name"]
    assert "bytes ÷ median time" in rate["name"]
    peaks = peaks_for("NVIDIA H200")
    assert peaks is not None
    p = place(
        "a",
        flops=1e9,
        bytes_read=1e9,
        bytes_written=0,
        duration_ns=1e6,
        dtype="bf16",
        peaks=peaks,
    )
    rates = [t for t in traffic_figure([p]).data if getattr(t, "mode", None) == "text"]
    assert [t.showlegend for t in rates] == [True]


def test_kernel_names_are_in_each_regions_hover_and_table(
    views: dict[int, dict[str, Any]],
) -> None:
    view = views[3]  # cupti
    table = {row["region"]: row["kernels"] for row in view["kernels"]}
    assert len(table) == 12
    assert (
        table["layernorm_1"][0]["short"] == "at::native::vectorized_layer_norm_kernel"
    )
    assert table["qkv_proj"][0]["name"].startswith("nvjet_sm90")
    for trace in _regions(view["figures"]["roofline"]):
        assert "kernel: " in trace["customdata"][0][14], trace["name"]
    read = view["figures"]["traffic"]["data"][0]
    assert all("kernel: " in row[4] for row in read["customdata"])
    # The events backend sees no kernels: no table, no hover line.
    assert views[1]["kernels"] == []


def test_short_kernel_names() -> None:
    from nsight_lab.figures.kernels import short_kernel_name

    assert (
        short_kernel_name(
            "_ZN2at6native29vectorized_elementwise_kernelILi8ENS0_15CUDAFunctor_add"
            "IN3c108BFloat16EEESt5arrayIPcLm3EEEEviT0_T1_"
        )
        == "at::native::vectorized_elementwise_kernel"
    )
    assert short_kernel_name("nvjet_sm90_tst") == "nvjet_sm90_tst"
    assert short_kernel_name("_Z6kernelPf") == "kernel"
    assert len(short_kernel_name("x" * 200)) == 60


def test_a_throttled_region_keeps_its_colour_and_says_so() -> None:
    from nsight_lab.analysis.validity import Flag

    peaks = peaks_for("NVIDIA H200")
    assert peaks is not None
    a = place(
        "a",
        flops=2e12,
        bytes_read=1e9,
        bytes_written=1e9,
        duration_ns=2e6,
        dtype="bf16",
        peaks=peaks,
    )
    b = dataclasses.replace(a, annotation="b")
    throttled = Flag("throttled", "throttled (30 of 30 runs)", "power cap", "lock")
    impossible = Flag("over_roof", "120 % of roof cannot be true", "c", "d")
    fig = roofline_figure(
        [a, b], peaks, flags={("a", 0): [throttled], ("b", 0): [impossible]}
    )
    drawn = {t.meta["annotation"]: t for t in fig.data if t.meta is not None}
    assert drawn["a"].marker.color == region_style(0).colour
    assert drawn["a"].name.endswith("(\u26a0 throttled)")
    assert "throttled (30 of 30 runs)" in drawn["a"].customdata[0][11]
    assert drawn["b"].marker.color == "#d62728"
    assert drawn["b"].name.endswith("(cannot be true)")
