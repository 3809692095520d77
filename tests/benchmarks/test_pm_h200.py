"""The parts of ``benchmarks/pm_h200.py`` that need no GPU (issue 19's evidence script).

The H200 runs the script once in a prepared device call; what can break there without a
GPU's fault (the cell's text, the per-region table, the wall summary, the plain ncu
script, the figure) is checked here.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    """benchmarks/pm_h200.py as a module."""
    spec = importlib.util.spec_from_file_location(
        "pm_h200_bench", ROOT / "benchmarks" / "pm_h200.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _record(name: str, us: float, read: float | None, written: float | None) -> Any:
    metrics = {}
    if read is not None:
        metrics["dram__bytes_read.sum"] = read
    if written is not None:
        metrics["dram__bytes_write.sum"] = written
    return SimpleNamespace(annotation=name, duration_ns=us * 1e3, metrics=metrics)


def test_the_cell_is_the_twelve_regions_in_order(bench: ModuleType) -> None:
    text = bench.cell_text(bench.cell_options("pm_dram", 50))
    first, body = text.split("\n", 1)
    assert first == (
        "%%nsight --metrics dram__bytes_read.sum,dram__bytes_write.sum --runs 50 "
        "--quiet --name pm_dram-50"
    )
    tree = ast.parse(body)
    names = [
        node.items[0].context_expr.args[0].value
        for node in tree.body
        if isinstance(node, ast.With)
    ]
    assert names == list(bench.REGIONS)
    assert len(names) == 12
    assert "--backend pm " in bench.cell_options("pm_default", 10)
    assert "--backend" not in bench.cell_options("pm_dram", 10)  # auto picks pm
    assert bench.cell_options("events", 10, smoke=True).startswith("--backend cpu ")


def test_region_stats_take_medians_and_keep_the_spread(bench: ModuleType) -> None:
    records = [
        _record("x2", 120.0, 268e6, 270e6),
        _record("x2", 130.0, 269e6, 268e6),
        _record("x2", 500.0, 280e6, 260e6),
        _record("tiny", 4.0, None, None),
    ]
    stats = bench.region_stats(records)
    assert stats["x2"]["duration_us"] == pytest.approx(130.0)
    assert stats["x2"]["read"] == 269e6
    assert stats["x2"]["written"] == 268e6
    assert stats["x2"]["runs"] == 3
    assert stats["x2"]["read_range"] == [268e6, 280e6]
    assert stats["tiny"]["read"] is None
    assert stats["tiny"]["read_range"] is None
    json.dumps(stats)  # it goes into the results file


def test_compare_regions_judges_long_regions_only(bench: ModuleType) -> None:
    pm = {
        "x2": {"duration_us": 128.0, "read": 268.5e6, "written": 268.4e6},
        "sum": {"duration_us": 68.0, "read": 268e6, "written": 0.0},
        "bmm_fp16": {"duration_us": 160.0, "read": 40e6, "written": 60e6},
        "tiny": {"duration_us": 4.0, "read": None, "written": None},
    }
    ncu = {
        "x2": {"read": 268.4e6, "written": 268.4e6, "ns": 125e3, "kernels": 1},
        "sum": {"read": 268.4e6, "written": 2.5e6, "ns": 68e3, "kernels": 1},
        "bmm_fp16": {"read": 40.1e6, "written": 67.1e6, "ns": 150e3, "kernels": 1},
    }
    got = bench.compare_regions(pm, ncu)
    rows = got["rows"]
    assert got["long_regions"] == ["bmm_fp16", "x2"]
    assert rows["x2"]["read_ok"] is True
    assert rows["x2"]["written_ok"] is True
    assert rows["bmm_fp16"]["written_ratio"] == pytest.approx(60 / 67.1)
    assert rows["bmm_fp16"]["written_ok"] is False
    assert rows["sum"]["long"] is False  # 68 us: outside the bar, still shown
    assert rows["sum"]["written_ratio"] == 0.0
    assert rows["tiny"]["read_ratio"] is None
    assert got["reads_within_1pct"] is True
    assert got["writes_within_3pct"] is False
    assert got["worst_written"] == ["bmm_fp16", pytest.approx(60 / 67.1)]
    table = bench.markdown_table(got, "pm_dram, 50 runs")
    assert "| x2 * | 128.0 | 268.5 | 268.4 | 1.000 |" in table
    assert "| tiny | 4.0 | - | - | - |" in table
    rows_drawn = [line for line in table.splitlines() if line.startswith("|")]
    assert len(rows_drawn) == 2 + len(pm)  # the header, its rule, a row each


def test_without_ncu_nothing_is_judged(bench: ModuleType) -> None:
    got = bench.compare_regions({"x2": {"duration_us": 128.0, "read": 1.0}}, {})
    assert got["rows"]["x2"]["long"] is True  # pm's own time decides
    assert got["reads_within_1pct"] is None
    assert got["worst_read"] is None


def _cell(set_name: str, runs: int, wall: float, **more: Any) -> dict[str, Any]:
    return {"set": set_name, "runs": runs, "wall_s": wall, "ok": True, **more}


def test_wall_summary_marginals_and_bars(bench: ModuleType) -> None:
    cells = [
        _cell("events", 10, 9.0, first=True),  # the process's first cell: left out
        _cell("events", 10, 0.16),
        _cell("events", 10, 0.15),
        _cell("events", 50, 0.55),
        _cell("events", 200, 2.05),
        _cell("pm_dram", 10, 0.40),
        _cell("pm_dram", 50, 0.92),
        _cell("pm_dram", 200, 2.9, ok=False),  # stopped: no wall from it
        _cell("pm_default", 10, 0.60),
        _cell("pm_default", 50, 1.80),
        {"set": "cupti", "runs": 10, "skipped": "over the budget"},
    ]
    got = bench.wall_summary(cells)
    assert got["best_wall_s"]["events"] == {"10": 0.15, "50": 0.55, "200": 2.05}
    marginal = got["marginal_per_run_s"]
    assert marginal["events"] == pytest.approx(0.01)
    assert marginal["pm_dram"] == pytest.approx(0.013)
    assert marginal["pm_default"] == pytest.approx(0.03)
    assert got["marginal_per_run_long_s"] == {"events": pytest.approx(1.9 / 190)}
    assert got["fixed_per_cell_s"]["pm_dram"] == pytest.approx(0.27)
    assert got["over_events_marginal"]["pm_dram"] == pytest.approx(1.3)
    assert got["bars"]["pm_dram"]["met"] is True
    assert got["bars"]["pm_default"]["ratio"] == pytest.approx(3.0)
    assert got["bars"]["pm_default"]["met"] is False
    assert got["over_events_wall"]["pm_dram"]["10"] == pytest.approx(0.40 / 0.15)
    assert "cupti" not in got["best_wall_s"]


def test_the_plain_script_puts_each_region_in_an_nsight_lab_range(
    bench: ModuleType,
) -> None:
    from nsight_lab.backends.ncu.report import parse_range_name

    script = bench.plain_script(bench.TENSORS, runs=3)
    tree = ast.parse(script)
    loops = [node for node in tree.body if isinstance(node, ast.For)]
    assert len(loops) == 1
    ranges = [
        node.items[0].context_expr
        for node in loops[0].body
        if isinstance(node, ast.With)
    ]
    assert len(ranges) == len(bench.REGIONS)
    for call, name in zip(ranges, bench.REGIONS, strict=True):
        assert {k.arg: k.value.value for k in call.keywords} == {"domain": "nsight_lab"}
        label = ast.unparse(call.args[0])  # f'x2 [c0 r{run}]'
        assert parse_range_name(label[2:-1].replace("{run}", "1")) == (name, 0, 1)
    # One warm-up pass before the loop, outside every range (ncu leaves it out).
    before = tree.body[: tree.body.index(loops[0])]
    warm = [ast.unparse(n.value) for n in before if isinstance(n, ast.Assign)]
    expected = [
        ast.unparse(ast.parse(e, mode="eval").body) for e in bench.REGIONS.values()
    ]
    assert warm[-len(expected) :] == expected


def test_ncu_rows_are_summed_per_run_then_the_median_taken(bench: ModuleType) -> None:
    def row(region: str, run: int, read: float, ns: float) -> Any:
        metrics = {
            "dram__bytes_read.sum": read,
            "dram__bytes_write.sum": read / 2,
            "gpu__time_duration.sum": ns,
        }
        return SimpleNamespace(region=region, run_index=run, metrics=metrics)

    rows = [
        row("unfused", 0, 256.0, 60.0),  # two kernels a run
        row("unfused", 0, 256.0, 90.0),
        row("unfused", 1, 250.0, 61.0),
        row("unfused", 1, 250.0, 92.0),
        row("unfused", 2, 300.0, 70.0),
        row("unfused", 2, 300.0, 99.0),
        row("x2", 0, 268.0, 125.0),
    ]
    got = bench.ncu_per_region(rows)
    assert got["unfused"] == {
        "read": 512.0,
        "written": 256.0,
        "ns": 153.0,
        "kernels": 2,
    }
    assert got["x2"]["kernels"] == 1


def test_a_failing_part_is_recorded_and_the_next_runs(
    bench: ModuleType, tmp_path: Path
) -> None:
    b = bench.Bench(tmp_path, budget_s=60.0)

    def broken(_: dict[str, Any]) -> None:
        msg = "no ncu"
        raise RuntimeError(msg)

    ran: list[str] = []
    b.part("broken", broken)
    b.part("fine", lambda entry: entry.update(value=1))
    b.budget_s = -1.0
    late = b.part("late", lambda _: ran.append("late"))
    b.part("cheap", lambda _: ran.append("cheap"), always=True)
    assert ran == ["cheap"]
    assert late["skipped"].startswith("over the")
    saved = json.loads((tmp_path / "pm_h200.json").read_text())
    assert saved["parts"]["broken"]["error"] == "RuntimeError: no ncu"
    assert saved["parts"]["fine"]["value"] == 1
    assert "part_s" in saved["parts"]["fine"]
    assert "part_s" in saved["parts"]["cheap"]
    assert "broken failed" in (tmp_path / "pm_h200.log").read_text()


def test_the_timeline_is_drawn_from_a_pm_session(
    bench: ModuleType,
    tmp_path: Path,
    nsight_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Session 4 of the H200 fixture store: pm, the DRAM pair, runs with series."""
    import nsight_lab.figures

    nsight_home.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "tests/fixtures/h200_block.sqlite", nsight_home / "store.sqlite")

    def no_kaleido(*_: object, **__: object) -> None:
        msg = "kaleido needs Chrome"
        raise nsight_lab.figures.StaticExportError(msg)

    monkeypatch.setattr(nsight_lab.figures, "write_png", no_kaleido)
    b = bench.Bench(tmp_path, budget_s=60.0)
    b.results["cells"] = [
        {"set": "pm_dram", "runs": 10, "session": 4, "runs_with_series": 120},
        {"set": "events", "runs": 10, "session": 1},
    ]
    entry: dict[str, Any] = {}
    bench.timeline(entry, b)
    assert entry["png"] == "matplotlib"
    assert entry["session"] == 4
    png = (tmp_path / "pm_h200_timeline.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    assert entry["png_bytes"] == len(png) > 20_000
    figure = json.loads((tmp_path / "pm_h200_timeline.json").read_text())
    assert len(figure["data"]) >= 12  # a trace per region and metric


def test_summary_names_failed_cells_and_the_largest_pm_run(
    bench: ModuleType, tmp_path: Path
) -> None:
    b = bench.Bench(tmp_path, budget_s=60.0)
    b.results["cells"] = [
        _cell(
            "pm_dram",
            50,
            1.0,
            runs_stored=600,
            status="completed",
            notes=["a"],
            repeat=0,
            samplers=[{"interval_ns": 40_000, "cut": 0}, {"cut": 0}],
        ),
        _cell(
            "pm_dram",
            200,
            2.0,
            ok=False,
            runs_stored=336,
            status="failed",
            error="UsageError: stopped after 28 runs",
            notes=["a", "b"],
        ),
        {"set": "cupti", "runs": 200, "skipped": "over the budget"},
    ]
    got = bench.summary(b)
    assert got["largest_pm_cells"]["pm_dram"]["runs"] == 200
    assert got["largest_pm_cells"]["pm_dram"]["status"] == "failed"
    assert got["failed_cells"] == [
        {
            "set": "pm_dram",
            "runs": 200,
            "error": "UsageError: stopped after 28 runs",
            "session_error": None,
            "status": "failed",
        }
    ]
    assert got["skipped_cells"] == 1
    assert got["pm_notes"] == ["a", "b"]
    assert got["sampler_intervals_us"] == {"pm_dram-50-0": [40.0]}
