"""The charts of real H200 sessions (tests/fixtures/h200_block.sqlite), as served.

Twelve regions of a transformer block on events, cupti, pm (with counter series) and
ncu, and a 4-config sweep: every region has a colour and marker of its own, the same
in every chart of its session; measured bytes win over modelled ones and the legends
say so; no chart needs a label that can collide (roof labels stacked, coincident
points named in each other's hover); an ncu session's clock chart says what ncu
lacks. What the sidebar draws of them is checked in the browser by
ui-tests/tests/readability.spec.ts.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest

from nsight_lab.figures import PALETTE, figures_to_json
from nsight_lab.figures.common import log_ticks
from nsight_lab.figures.roofline import (
    MIN_PLOT_PX,
    ROOF_LABEL_PX,
    _roof_label_shifts,
    roofline_figure,
)
from nsight_lab.figures.theme import REGION_GLYPHS, region_style
from nsight_lab.roofline.counters import DRAM_READ, DRAM_WRITE
from nsight_lab.roofline.placement import peaks_for, place
from nsight_lab.store.run_store import RunStore
from nsight_lab.viewmodel import session_view

FIXTURE = Path(__file__).parents[1] / "fixtures" / "h200_block.sqlite"
BLOCK = [
    "layernorm_1",
    "qkv_proj",
    "split_heads",
    "flash_attention",
    "merge_heads",
    "out_proj",
    "residual_1",
    "layernorm_2",
    "mlp_up",
    "gelu",
    "mlp_down",
    "residual_2",
]
GLYPH = re.compile(r'<span style="color:(#[0-9A-Fa-f]{6})">(.)</span>')
SYMBOL_OF_GLYPH = {glyph: symbol for symbol, glyph in REGION_GLYPHS.items()}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("fixture") / "store.sqlite"
    shutil.copyfile(FIXTURE, path)  # a copy: the fixture is never written to
    with RunStore(path) as opened:
        yield opened


@pytest.fixture(scope="module")
def views(store: RunStore) -> dict[int, dict[str, Any]]:
    return {sid: session_view(store, sid) for sid in range(1, 7)}


def _duration_styles(fig: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Region -> (colour, marker) of the duration chart's run points."""
    out = {}
    for trace in fig["data"]:
        if trace.get("mode") == "lines+markers":
            # A throttled run: the region's shape, open.
            symbols = {s.removesuffix("-open") for s in trace["marker"]["symbol"]}
            (symbol,) = symbols
            out[trace["name"]] = (trace["marker"]["color"], symbol)
    return out


def _roofline_styles(fig: dict[str, Any]) -> dict[str, tuple[str, str]]:
    out = {}
    for trace in fig["data"]:
        if "meta" in trace:
            symbol = trace["marker"]["symbol"].removesuffix("-open")
            out[trace["meta"]["annotation"]] = (trace["marker"]["color"], symbol)
    return out


def _glyph_styles(texts: list[str]) -> dict[str, tuple[str, str]]:
    """Region -> (colour, marker) of the coloured signs beside region names."""
    out = {}
    for text in texts:
        match = GLYPH.search(text)
        assert match is not None, text
        name = GLYPH.sub("", text).strip().rstrip("\u200b")
        out[name] = (match.group(1), SYMBOL_OF_GLYPH[match.group(2)])
    return out


@pytest.mark.parametrize("sid", [1, 2, 3, 4, 5])
def test_every_region_has_its_own_colour_and_marker_in_every_chart(
    views: dict[int, dict[str, Any]], sid: int
) -> None:
    figures = views[sid]["figures"]
    duration = _duration_styles(figures["duration"])
    assert list(duration) == BLOCK  # in the order they ran
    assert len(set(duration.values())) == 12  # no two share colour and marker
    assert len({colour for colour, _ in duration.values()}) == 12
    for name, style in duration.items():
        assert style == (
            region_style(BLOCK.index(name)).colour,
            region_style(BLOCK.index(name)).symbol,
        )
    # The same region, the same colour and marker: roofline, traffic, counters.
    roofline = _roofline_styles(figures["roofline"])
    assert set(roofline) == set(BLOCK)
    for name, style in roofline.items():
        assert style == duration[name], name
    rows = figures["traffic"]["data"][0]["y"]
    assert _glyph_styles(rows) == duration
    if "counters" in figures:
        titles = [a["text"] for a in figures["counters"]["layout"]["annotations"]]
        assert _glyph_styles(titles) == duration


def test_the_sweep_gives_each_config_of_each_region_its_own_style(
    views: dict[int, dict[str, Any]],
) -> None:
    figures = views[6]["figures"]
    duration = _duration_styles(figures["duration"])
    assert len(duration) == 8  # 2 regions x 4 configs
    assert len(set(duration.values())) == 8
    assert _glyph_styles(figures["traffic"]["data"][0]["y"]) == duration


def test_twenty_regions_never_share_a_colour_nor_look_alike_with_their_marker() -> None:
    assert len(PALETTE) >= 20
    styles = [region_style(i) for i in range(180)]
    assert len({(s.colour, s.symbol) for s in styles}) == 180
    assert len({s.colour for s in styles[:20]}) == 20
    # Neighbours in run order differ in both colour and shape.
    for a, b in itertools.pairwise(styles[:40]):
        assert a.colour != b.colour
        assert a.symbol != b.symbol


def _luminance(hex_colour: str) -> float:
    def channel(c: int) -> float:
        v = c / 255
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(int(hex_colour[i : i + 2], 16)) for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_every_region_colour_reads_on_light_and_dark_themes() -> None:
    white, dark = _luminance("#FFFFFF"), _luminance("#111111")
    for colour in PALETTE:
        lum = _luminance(colour)
        assert (white + 0.05) / (lum + 0.05) >= 1.9, colour
        assert (lum + 0.05) / (dark + 0.05) >= 2.5, colour


def test_measured_dram_bytes_win_over_modelled_and_the_legends_say_so(
    store: RunStore, views: dict[int, dict[str, Any]]
) -> None:
    # Session 4 (pm): every run has PM-measured DRAM bytes and modelled ones.
    runs = [r for r in store.runs(4) if r.annotation == "qkv_proj"]
    measured = statistics.median(r.metrics[DRAM_READ] for r in runs)
    modelled = runs[0].metrics["model__bytes_read"]
    assert measured > 2 * modelled  # they differ here: 900 MB read, 168 MB modelled
    figures = views[4]["figures"]
    read = figures["traffic"]["data"][0]
    row = [i for i, y in enumerate(read["y"]) if y.startswith("qkv_proj ")]
    assert read["x"][row[0]] == pytest.approx(measured)
    assert read["name"] == "bytes read, measured (PM sampling)"
    written = figures["traffic"]["data"][1]
    assert written["x"][row[0]] == pytest.approx(
        statistics.median(r.metrics[DRAM_WRITE] for r in runs)
    )
    for trace in figures["roofline"]["data"]:
        if "meta" in trace and "customdata" in trace:  # placed (not "no FLOPs")
            assert "(bytes measured)" in trace["name"], trace["name"]
            assert "bytes measured (PM sampling)" in trace["customdata"][0][6]
    # Session 5 (ncu): FLOPs and bytes measured; session 1 (events): modelled.
    names5 = [t["name"] for t in views[5]["figures"]["roofline"]["data"] if "meta" in t]
    assert all(n.endswith("(measured)") for n in names5)
    names1 = [t["name"] for t in views[1]["figures"]["roofline"]["data"] if "meta" in t]
    assert all(n.endswith(("(modelled)", "not on log axes)")) for n in names1)


def test_the_ncu_sessions_clock_chart_says_what_ncu_lacks(
    views: dict[int, dict[str, Any]],
) -> None:
    clocks = views[5]["figures"]["clocks"]
    assert clocks["data"] == []
    missing = clocks["layout"]["meta"]["missing"]
    assert "ncu backend" in missing
    assert "run on an NVIDIA GPU" not in missing
    assert "--backend events" in missing
    # A session that read NVML draws its clocks.
    assert views[1]["figures"]["clocks"]["data"]


def test_durations_are_on_a_log_axis_so_short_regions_are_not_squashed(
    views: dict[int, dict[str, Any]],
) -> None:
    yaxis = views[1]["figures"]["duration"]["layout"]["yaxis"]
    assert yaxis["type"] == "log"
    # 50 µs and 1.4 ms regions, each a fair share of the height: the range is
    # the runs' own (log), not 0 to the largest.
    lo, hi = yaxis["range"]
    assert hi - lo < 2.0  # decades
    assert 10**lo < 50.0
    # The ncu session's two runs: ticked 0 and 1, not 0, 0.2, ... 1.
    assert views[5]["figures"]["duration"]["layout"]["xaxis"]["dtick"] == 1


def _whole_labels(axis: dict[str, Any]) -> None:
    """Every tick labelled with its whole value, at least three of them."""
    values, labels = axis["tickvals"], axis["ticktext"]
    assert len(values) >= 3
    for value, label in zip(values, labels, strict=True):
        scale = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}.get(label[-1], 1.0)
        number = float(label[:-1]) if scale != 1.0 else float(label)
        assert number * scale == pytest.approx(value, rel=0.01), (label, value)


def test_log_axes_have_whole_number_ticks_even_for_one_region() -> None:
    peaks = peaks_for("NVIDIA H200")
    assert peaks is not None
    one = place(
        "matmul",
        flops=2e9,
        bytes_read=6e6,
        bytes_written=2e6,
        duration_ns=40e3,
        peaks=peaks,
        dtype="bf16",
    )
    layout = roofline_figure([one], peaks).to_plotly_json()["layout"]
    _whole_labels(layout["xaxis"])
    _whole_labels(layout["yaxis"])
    # A range inside one decade: 1-2-5 or every digit, labelled whole ("20",
    # "30", never plotly's lone "2 3 ... 8").
    values, labels = log_ticks(18.0, 95.0)
    assert labels == ["20", "50"] or len(values) >= 3
    assert all(len(label) >= 2 for label in labels)


def test_roof_labels_never_overlap_however_close_the_roofs() -> None:
    # Seven roofs, some a factor of 1.3 apart, on a 6-decade axis at its smallest.
    heights = [math.log10(v) for v in (10, 13, 67, 80, 495, 990, 1979)]
    span = 6.0
    shifts = _roof_label_shifts(heights, span)
    for scale in (1.0, 1.5, 3.0):  # the plot as small as allowed, and taller
        placed = sorted(
            h / span * MIN_PLOT_PX * scale + s
            for h, s in zip(heights, shifts, strict=True)
        )
        gaps = [b - a for a, b in itertools.pairwise(placed)]
        assert min(gaps) >= ROOF_LABEL_PX - 1e-9


def test_bf16_and_fp16_share_one_roof_and_one_label(
    views: dict[int, dict[str, Any]],
) -> None:
    layout = views[5]["figures"]["roofline"]["layout"]
    labels = [a["text"] for a in layout["annotations"]]
    assert labels == ["fp32", "bf16, fp16"]


def test_points_at_one_place_name_each_other_in_their_hover(
    views: dict[int, dict[str, Any]],
) -> None:
    # The block's four big matmuls sit together near the bf16 roof.
    regions = [t for t in views[5]["figures"]["roofline"]["data"] if "meta" in t]
    shared = {t["meta"]["annotation"]: t["customdata"][0][10] for t in regions}
    assert "mlp_up" in shared["mlp_down"] or "mlp_down" in shared["mlp_up"]
    together = [t for t in regions if t["customdata"][0][10]]
    # Drawn apart (spread round their place), each at a spot of its own.
    assert len({(t["x"][0], t["y"][0]) for t in together}) == len(together)


def test_counters_are_one_panel_per_region_with_the_dram_roof(
    views: dict[int, dict[str, Any]],
) -> None:
    fig = views[4]["figures"]["counters"]
    layout = fig["layout"]
    titles = [GLYPH.sub("", a["text"]).strip() for a in layout["annotations"]]
    assert titles == BLOCK
    xaxes = [k for k in layout if re.fullmatch(r"xaxis\d*", k)]
    assert len(xaxes) == 12  # its own time axis each
    ranges = {tuple(layout[k]["range"]) for k in layout if k.startswith("yaxis")}
    assert len(ranges) == 1  # one shared y range
    roofs = [t for t in fig["data"] if t["name"].startswith("DRAM roof")]
    assert len(roofs) == 12
    assert roofs[0]["y"] == [4800.0, 4800.0]  # GB/s
    assert layout["height"] >= 4 * 84  # four rows of three panels


def _twenty_regions(store: RunStore) -> list[Any]:
    """The fixture's pm session's runs, made 20 regions (its 12, 8 of them again)."""
    runs = store.runs(4)
    extra = [
        dataclasses.replace(r, annotation=f"{r.annotation}_again")
        for r in runs
        if r.annotation in BLOCK[:8]
    ]
    return runs + extra


def test_twenty_regions_each_get_a_row_a_panel_and_a_marker_of_their_own(
    store: RunStore,
) -> None:
    records = _twenty_regions(store)
    peaks = peaks_for("NVIDIA H200")
    figures = figures_to_json(records, peaks)
    names = BLOCK + [f"{name}_again" for name in BLOCK[:8]]
    duration = _duration_styles(figures["duration"])
    assert list(duration) == names
    assert len(set(duration.values())) == 20
    # Traffic: 20 rows, each its name and sign, the figure tall enough for them.
    rows = figures["traffic"]["data"][0]["y"]
    assert _glyph_styles(rows) == duration
    assert figures["traffic"]["layout"]["height"] >= 20 * 24
    # Roofline: 20 legend entries, 20 distinct markers.
    roofline = _roofline_styles(figures["roofline"])
    assert len(roofline) == 20
    assert len(set(roofline.values())) == 20
    # Counters: 20 panels in rows of three, names cut to fit them.
    layout = figures["counters"]["layout"]
    titles = _glyph_styles([a["text"] for a in layout["annotations"]])
    assert len(titles) == 20
    assert all(len(name) <= 22 for name in titles)
    assert layout["height"] >= 7 * 84
