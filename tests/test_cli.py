from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pandas as pd
import pytest

from nsight_lab.cli import main
from nsight_lab.records import RunRecord, Telemetry
from nsight_lab.store import RunStore

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture
def two_sessions() -> list[int]:
    ids = []
    with RunStore() as store:
        for label, scale in (("first", 1.0), ("second", 2.0)):
            session = store.create_session(
                backend="cpu",
                name=label,
                device="dev",
                options={"params": {"n": [1, 2]}},
                configs=[{"n": 1}, {"n": 2}],
            )
            records = [
                RunRecord(
                    session_id=session.id,
                    config_index=ci,
                    config={"n": n},
                    run_index=r,
                    annotation="op",
                    duration_ns=scale * n * 1000.0 + r,
                    backend="cpu",
                    telemetry=Telemetry(sm_clock_mhz=1500.0, temperature_c=50.0),
                )
                for ci, n in enumerate((1, 2))
                for r in range(4)
            ]
            store.add_runs(records)
            store.finish_session(session.id, "completed")
            ids.append(session.id)
    return ids


@pytest.mark.usefixtures("two_sessions")
def test_history_lists_newest_first(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["second", "first"]
    assert [r["runs"] for r in rows] == [8, 8]
    assert main(["history", "--text", "first", "--json"]) == 0
    assert [r["name"] for r in json.loads(capsys.readouterr().out)] == ["first"]


def test_show_summarizes_a_session(
    two_sessions: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", str(two_sessions[1]), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by_n = {r["n"]: r for r in rows}
    assert by_n[1]["AvgValue"] == pytest.approx(2000 + 1.5)
    assert by_n[2]["AvgValue"] == pytest.approx(4000 + 1.5)
    assert by_n[1]["NumRuns"] == 4


def test_export_csv_and_parquet(two_sessions: list[int], tmp_path: Path) -> None:
    csv_path = tmp_path / "runs.csv"
    assert main(["export", *map(str, two_sessions), "-o", str(csv_path)]) == 0
    frame = pd.read_csv(csv_path)
    assert len(frame) == 16
    assert set(frame["session_id"]) == set(two_sessions)
    assert {"duration_ns", "param_n", "sm_clock_mhz", "annotation"} <= set(
        frame.columns
    )
    parquet_path = tmp_path / "results.parquet"
    assert (
        main(
            [
                "export",
                str(two_sessions[0]),
                "--what",
                "results",
                "--format",
                "parquet",
                "-o",
                str(parquet_path),
            ]
        )
        == 0
    )
    results = pd.read_parquet(parquet_path)
    assert list(results["NumRuns"]) == [4, 4]
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left behind


@pytest.mark.usefixtures("two_sessions")
def test_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "999"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nsight-lab: ")
    assert err.count("\n") == 1
    assert "999" in err
    assert main(["export", "1", "--format", "parquet"]) == 2
    assert "-o FILE" in capsys.readouterr().err
    assert main(["history", "--since", "yesterday"]) == 2
    assert "since" in capsys.readouterr().err


def test_doctor_runs_without_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--json"]) == 0
    names = [c["name"] for c in json.loads(capsys.readouterr().out)]
    assert {"GPU", "ncu", "NVML", "CUPTI"} <= set(names)
