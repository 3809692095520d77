"""Issue 30 (Python side): every view says one thing, and says it once.

On the H200 fixture (tests/fixtures/h200_block.sqlite, README beside it) and small
synthetic records: one SM clock (median and range) in the table and the
comparison, "runs" as executions in ``history``, no 0 TFLOP/s where no FLOP was
modelled, quality flags first, ``%nsight show`` printed once, a refused region
name stored nowhere, and terminal text that fits ``COLUMNS``. Each test fails at
``0ab1fce``.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from nsight_lab.cli.main import run
from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.store.run_store import RunStore
from nsight_lab.text.units import UNDEFINED, format_quantity

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

FIXTURE = Path(__file__).parents[1] / "fixtures" / "h200_block.sqlite"


@pytest.fixture
def store_copy(nsight_home: Path) -> Path:
    """The fixture store copied as this test's store (never written itself)."""
    nsight_home.mkdir(parents=True, exist_ok=True)
    target = nsight_home / "store.sqlite"
    shutil.copyfile(FIXTURE, target)
    return target


def _cli(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    *argv: str,
    columns: int = 80,
) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    capsys.readouterr()
    assert run(list(argv)) == 0
    return capsys.readouterr().out


def _row(text: str, region: str) -> list[str]:
    header = next(line for line in text.splitlines() if line.startswith("Region"))
    line = next(line for line in text.splitlines() if line.startswith(region + " "))
    starts = [m.start() for m in re.finditer(r"(?<=  )\S|^\S", header)]
    cells = [
        line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)
    ]
    names = [
        header[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)
    ]
    return [f"{n}={c}" for n, c in zip(names, cells, strict=True)]


@pytest.mark.usefixtures("store_copy")
def test_one_sm_clock_median_and_range_in_show_and_compare(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Session 2: 228 runs at 1950 MHz, 132 at 1650: mean 1840, median 1950.
    shown = _cli(capsys, monkeypatch, "show", "2", "--wide", columns=250)
    assert "SM clock=1950 MHz median (1650\u20131950)" in _row(shown, "layernorm_1")
    assert "1840 MHz" not in shown
    compared = _cli(capsys, monkeypatch, "compare", "1", "2", columns=250)
    assert "b at 1950 MHz median (1650\u20131950)" in " ".join(compared.split())
    assert "a at 1980 MHz in every run" in " ".join(compared.split())


@pytest.mark.usefixtures("store_copy")
def test_history_counts_runs_as_executions_fits_columns_local_times(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = json.loads(_cli(capsys, monkeypatch, "history", "--json"))
    runs = {row["id"]: row["runs"] for row in rows}
    assert runs == {1: 30, 2: 30, 3: 30, 4: 10, 5: 2, 6: 80}  # as show's "N of N"
    for columns in (60, 80):
        text = _cli(capsys, monkeypatch, "history", columns=columns)
        assert max(len(line) for line in text.splitlines()) <= columns, text
        assert "T18:46" not in text
        assert "+00:00" not in text
        assert "block-events-b" in text


@pytest.mark.usefixtures("store_copy")
def test_show_abbreviates_counter_names_at_word_boundaries(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    wide = _cli(capsys, monkeypatch, "show", "5", "--wide", columns=250)
    words = {
        w for name in wide.split() if "__" in name for w in re.findall(r"[^_.]+", name)
    }
    text = _cli(capsys, monkeypatch, "show", "5", columns=80)
    cut = [w for w in text.split() if "\u2026" in w]
    assert cut, text
    for name in cut:
        for part in re.findall(r"[^_.\u2026]+", name):
            assert part in words, (name, part)  # no word cut in its middle


@pytest.mark.usefixtures("store_copy")
def test_compare_at_80_columns_keeps_both_medians(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _cli(capsys, monkeypatch, "compare", "1", "2", columns=80)
    header = next(line for line in text.splitlines() if line.startswith("region"))
    assert "median a" in header
    assert "median b" in header
    assert max(len(line) for line in text.splitlines()) <= 80


@pytest.mark.usefixtures("store_copy")
def test_unmodelled_flops_read_undefined_with_a_note_never_0(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _cli(capsys, monkeypatch, "show", "1", "--wide", columns=250)
    assert f"TFLOP/s={UNDEFINED}" in _row(text, "layernorm_1")
    assert "TFLOP/s=0" not in _row(text, "layernorm_1")
    assert "work model counts no FLOPs" in text


def test_a_metric_keeps_its_own_unit() -> None:
    # show 6: the --derive metric tflops read "63.02 GFLOP/s".
    assert format_quantity(0.06302, "TFLOP/s") == "0.06302 TFLOP/s"
    assert format_quantity(4123.0, "GB/s") == "4123 GB/s"


@pytest.mark.usefixtures("store_copy")
def test_quality_flags_lead_the_output_and_mark_the_row(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _cli(capsys, monkeypatch, "show", "2", columns=120)
    first = text.splitlines()[0]
    assert first.startswith("! 12 regions flagged: GPU throttled"), first
    # The row names the flag's kind; its sentence is said once, in the list.
    assert "Flag=GPU throttled" in " ".join(_row(text, "qkv_proj"))
    assert text.count("throttled (30 of 30 runs)") == 1
    assert "--clock-control base --thermal auto" in text


def _busy_host_records() -> list[RunRecord]:
    """The quickstart's ``add`` on a busy host: 6.588 ms median, RSD ~70 %."""
    durations = [6.588e6, 15e3, 9.9e6, 20e3, 7.2e6, 6.1e6, 18e3, 8.8e6]
    probes = [14e3, 60e3, 15e3, 55e3, 40e3, 16e3, 70e3, 15e3]
    return [
        RunRecord(
            session_id=1,
            annotation="add",
            config={},
            config_index=0,
            run_index=i,
            duration_ns=d,
            metrics={"host__probe_time_ns": p},
            backend="cpu",
            telemetry=Telemetry(),
        )
        for i, (d, p) in enumerate(zip(durations, probes, strict=True))
    ]


def test_a_busy_host_flags_the_region_with_cause_and_action() -> None:
    from nsight_lab.analysis.validity import check_region, checks_json

    checks = checks_json([check_region(_busy_host_records())])
    (flag,) = [c for c in checks if c["kind"] == "unsteady"]
    assert "not usable" in flag["text"]
    assert "host was busy" in flag["cause"]
    assert "idle machine" in flag["action"]


def test_percent_show_prints_once(
    store_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from nsight_lab.cli.line import line_command

    assert store_copy.is_file()
    assert line_command("show 2") is None
    out = capsys.readouterr().out
    assert out.count("session 2 block-events-b") == 1, out


def test_a_repeated_region_name_prints_once_and_stores_nothing(
    ip: InteractiveShell, nsight_home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    del nsight_home  # a fresh store for this test
    cell = (
        "import nsight\nfor _ in range(2):\n"
        "    with nsight.annotate('a'):\n        pass\n"
    )
    result = ip.run_cell("%%nsight --backend cpu --runs 2\n" + cell)
    assert result.error_in_exec is not None
    assert "ran twice" in str(result.error_in_exec)
    out = capfd.readouterr()
    assert (out.out + out.err).count("ran twice") <= 1, out
    with RunStore() as store:
        assert store.list_sessions() == []
