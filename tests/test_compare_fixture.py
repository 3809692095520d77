"""Comparisons of real H200 sessions (tests/fixtures/h200_block.sqlite, issue 20).

Sessions 1 and 2 ran the same 12-region transformer block with the events backend;
session 2 ran power-capped in all 30 runs (7-9 % slower), session 1 in none. Their
comparison must read "no change" or "inconclusive: clocks", never "slower", and the
CI gate must pass (it fails on the inconclusive rows only with ``--strict``).
Session 4 (pm, DRAM bytes, unthrottled) is the real noise under the synthetic
changes: the same runs 3 % slower must read "slower", DRAM bytes 0.1 % apart
"no change".
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nsight_lab.analysis.baselines import verdict_table
from nsight_lab.analysis.compare import DEFAULT_THRESHOLD, compare_runs, session_verdict
from nsight_lab.cli import EXIT_REGRESSION
from nsight_lab.store.run_store import RunStore

FIXTURE = Path(__file__).parent / "fixtures" / "h200_block.sqlite"
REGIONS = 12


@pytest.fixture
def store_copy(nsight_home: Path) -> Path:
    """The fixture store copied as this test's store (never written itself)."""
    nsight_home.mkdir(parents=True, exist_ok=True)
    target = nsight_home / "store.sqlite"
    shutil.copyfile(FIXTURE, target)
    return target


def _cli(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run(  # noqa: S603  (the installed interpreter, our module)
        [sys.executable, "-m", "nsight_lab.cli", *args],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip


def test_same_code_sessions_read_inconclusive_for_the_clocks(store_copy: Path) -> None:
    assert store_copy.is_file()
    with RunStore() as store:
        table = verdict_table(store, 1, 2)
    timed = [r for r in table.rows if r.timed]
    assert len(timed) == REGIONS
    verdicts = {r.verdict for r in timed}
    assert verdicts <= {"no change", "inconclusive: clocks"}, verdicts
    assert "inconclusive: clocks" in verdicts  # 7-9 % slower, all runs power-capped
    assert not table.regression
    assert table.overall.verdict == "inconclusive: clocks"
    for row in timed:
        assert row.measured in {"slower", "no change"}
        # Both sessions' clocks, and what to do.
        assert "a at 1980 MHz in every run, throttled in 0 of 30 runs" in row.note
        assert "throttled in 30 of 30 runs (software power cap)" in row.note
        assert "--clock-control base --thermal auto" in row.note
    # The work model's counts are the same on both sides: folded, never flagged.
    folded = [r for r in table.rows if r.folded]
    assert len(folded) == len(table.rows) - REGIONS
    assert not any(r.flagged for r in folded)
    assert table.overall.folded == len(folded)
    wire = table.to_json()
    assert wire["threshold"] == DEFAULT_THRESHOLD
    assert wire["tolerances"]["clock"] == 0.02
    assert "±2.2 %" in wire["legend"]
    first = wire["rows"][0]["cells"]
    assert (first["region"], first["metric"], first["change"]) == (
        "layernorm_1", "duration", "+7.8 %",
    )  # fmt: skip
    assert first["median_a"] == "59.62 µs"


def test_cli_gate_passes_the_same_code_and_strict_fails_it(store_copy: Path) -> None:
    assert store_copy.is_file()
    done = _cli("compare", "1", "2", "--fail-on-regression")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("verdict: inconclusive: clocks")
    assert "--clock-control base --thermal auto" in done.stdout
    assert "46 deterministic rows not shown" in done.stdout
    # Every line fits the terminal's 80 columns.
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    strict = _cli("compare", "1", "2", "--fail-on-regression", "--strict")
    assert strict.returncode == EXIT_REGRESSION
    everything = _cli("compare", "1", "2", "--all", columns=200)
    assert "model__bytes_read" in everything.stdout
    assert "deterministic rows not shown" not in everything.stdout


def _scaled(runs: list, factor: float, *, metric: str | None = None) -> list:
    """Session 4's runs again, as session 99: durations (or ``metric``) times factor."""
    out = []
    for r in runs:
        if metric is None:
            out.append(
                dataclasses.replace(
                    r, session_id=99, duration_ns=r.duration_ns * factor
                )
            )
        else:
            metrics = {**r.metrics, metric: r.metrics[metric] * factor}
            out.append(dataclasses.replace(r, session_id=99, metrics=metrics))
    return out


def test_a_3_percent_slowdown_of_real_runs_is_slower(store_copy: Path) -> None:
    assert store_copy.is_file()
    with RunStore() as store:
        runs = store.runs(4)  # pm, unthrottled: the H200's own noise
    steady = {  # the regions whose 10 runs vary by under 1 % (the matmuls)
        r.annotation
        for r in compare_runs(runs, runs)
        if r.timed and r.std_a / r.mean_a < 0.01
    }
    assert len(steady) >= 3
    rows = [r for r in compare_runs(runs, _scaled(runs, 1.03)) if r.timed]
    slower = {r.annotation for r in rows if r.verdict == "slower"}
    assert steady <= slower, [(r.annotation, r.verdict) for r in rows]
    assert {r.verdict for r in rows} <= {"slower", "no change"}  # never "faster"
    assert session_verdict(rows).verdict == "slower"
    faster = [r for r in compare_runs(runs, _scaled(runs, 1 / 1.03)) if r.timed]
    assert steady <= {r.annotation for r in faster if r.verdict == "faster"}
    same = compare_runs(runs, _scaled(runs, 1.0))
    assert {r.verdict for r in same if r.timed} == {"no change"}


def test_dram_bytes_a_tenth_of_a_percent_apart_are_no_change(store_copy: Path) -> None:
    assert store_copy.is_file()
    with RunStore() as store:
        runs = store.runs(4)
    rows = compare_runs(runs, _scaled(runs, 1.001, metric="dram__bytes_read.sum"))
    dram = [r for r in rows if r.metric == "dram__bytes_read.sum"]
    assert len(dram) == REGIONS
    assert {r.verdict for r in dram} <= {"no change", "deterministic"}
    assert not any(r.significant for r in dram)
