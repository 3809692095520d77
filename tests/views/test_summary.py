"""The summary table that leads with the answer, on real H200 sessions (issue 20).

tests/fixtures/h200_block.sqlite: session 5 is an ncu roofline set (12 regions x 17
counters, most of them 0), session 6 a 4-config sweep, session 2 an events session
whose 30 runs were all power-capped.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from nsight_lab.results import summary_counters, summary_rows
from nsight_lab.results.stored import session_results
from nsight_lab.store.run_store import RunStore
from nsight_lab.views.show import REGION_COLUMNS, summary_text

FIXTURE = Path(__file__).parents[1] / "fixtures" / "h200_block.sqlite"


@pytest.fixture
def store_copy(nsight_home: Path) -> Path:
    """The fixture store copied as this test's store (never written itself)."""
    nsight_home.mkdir(parents=True, exist_ok=True)
    target = nsight_home / "store.sqlite"
    shutil.copyfile(FIXTURE, target)
    return target


def _show(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run(  # noqa: S603  (the installed interpreter, our module)
        [sys.executable, "-m", "nsight_lab.cli", "show", *args],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip


def test_the_region_table_leads_with_the_answer(store_copy: Path) -> None:
    assert store_copy.is_file()
    with RunStore() as store:
        frame = session_results(store, 5)
    rows = summary_rows(frame)
    assert len(rows) == 12  # one per region, not 12 x 17
    # The ncu backend reads no NVML clock and no region shape, and no number of it
    # passes its roof: those columns, empty in every row, are left out; the others
    # keep their order.
    empty = {"SM clock", "GPU busy", "Flag"}
    assert list(rows[0]) == [c for c in REGION_COLUMNS if c not in empty]
    assert list(REGION_COLUMNS[:9]) == [
        "Region", "Duration", "RSD", "GPU busy", "GB/s", "TFLOP/s", "% of roof",
        "Bound", "Flag",
    ]  # fmt: skip
    mlp_up = next(r for r in rows if r["Region"] == "mlp_up")
    assert (mlp_up["TFLOP/s"], mlp_up["% of roof"], mlp_up["Bound"]) == (
        "810.2", "82 %", "compute",
    )  # fmt: skip
    assert mlp_up["Bytes"] == "measured"
    assert all(isinstance(v, str) for r in rows for v in r.values())
    # RSD as a percentage with sane digits (it read 0.0002023 before).
    assert {r["RSD"] for r in rows} >= {"<0.01 %"}
    counters = summary_counters(frame)
    assert counters["columns"] == ["Region", "Metric", "Median", "RSD", "Runs"]
    assert counters["zero"] == 144  # of 12 x 16 counter rows
    assert len(counters["rows"]) == 192
    read = next(r for r in counters["rows"] if r["cells"][1] == "dram__bytes_read.sum")
    assert read["cells"][2] == "68.00 MB"
    assert not read["zero"]


def test_columns_empty_in_every_row_are_left_out() -> None:
    from nsight_lab.text.units import UNDEFINED as NA
    from nsight_lab.viewmodel.summary_cells import without_empty_columns

    rows = [
        {"Region": "a", "Duration": "1 µs", "GB/s": NA, "Runs": "3"},
        {"Region": "b", "Duration": NA, "GB/s": NA, "Runs": "3"},
    ]
    assert without_empty_columns(rows, {"Region"}) == [
        {"Region": "a", "Duration": "1 µs", "Runs": "3"},
        {"Region": "b", "Duration": NA, "Runs": "3"},
    ]


def test_a_sweep_has_its_parameter_after_the_region(store_copy: Path) -> None:
    assert store_copy.is_file()
    with RunStore() as store:
        rows = summary_rows(session_results(store, 6))
    assert list(rows[0])[:3] == ["Region", "n", "Duration"]
    assert [r["n"] for r in rows if r["Region"] == "matmul"] == [
        "512", "1024", "2048", "4096",
    ]  # fmt: skip


def test_text_fits_the_width_and_folds_zero_counters(store_copy: Path) -> None:
    assert store_copy.is_file()
    with RunStore() as store:
        frame = session_results(store, 5)
    text = summary_text(summary_rows(frame), summary_counters(frame), width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "144 counter rows that read 0 in every run not shown" in text
    assert "(left out to fit 80 columns: FLOPs, Bytes" in text
    wide = summary_text(summary_rows(frame), summary_counters(frame), wide=True)
    assert "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum" in wide
    assert "not shown" not in wide


def test_show_prints_the_table_in_the_terminals_width(store_copy: Path) -> None:
    assert store_copy.is_file()
    done = _show("5")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("session 5 block-ncu-roofline: completed, ncu")
    assert max(len(line) for line in lines) <= 80
    header = next(line for line in lines if line.startswith("Region"))
    assert header.split()[:3] == ["Region", "Duration", "RSD"]
    wide = _show("5", "--wide")
    assert max(len(line) for line in wide.stdout.splitlines()) > 80
    assert "FLOPs" in wide.stdout


def test_show_of_a_failed_session_says_its_status_and_error(store_copy: Path) -> None:
    with sqlite3.connect(store_copy) as conn:  # the copy, never the fixture
        conn.execute(
            "UPDATE sessions SET status = 'failed', error = ? WHERE id = 6",
            ("RuntimeError: CUDA out of memory",),
        )
        conn.execute("DELETE FROM runs WHERE session_id = 6")
    done = _show("6")
    assert done.returncode == 0, done.stderr
    assert "failed" in done.stdout.splitlines()[0]
    assert "error: RuntimeError: CUDA out of memory" in done.stdout
    assert "no runs stored" in done.stdout
    assert "(nothing)" not in done.stdout
