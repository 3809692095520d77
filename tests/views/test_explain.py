"""``nsight-lab explain ID [--json]`` and ``%nsight explain`` (views/explain.py)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from nsight_lab.cli import EXIT_USAGE, main
from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from pathlib import Path

    from IPython.core.interactiveshell import InteractiveShell

HOSTILE = "\x1b[2Jred\u202e"


@pytest.fixture
def session_id(nsight_home: Path) -> int:
    nsight_home.mkdir(parents=True, exist_ok=True)
    with RunStore() as store:
        session = store.create_session(
            backend="events", device="NVIDIA H100 80GB HBM3", runs_planned=5
        )
        store.add_runs(
            [
                RunRecord(
                    session_id=session.id,
                    config_index=0,
                    config={},
                    run_index=run,
                    annotation=name,
                    duration_ns=ns,
                    backend="events",
                    metrics={
                        "model__flops": 0.0,
                        "model__bytes_read": 0.27e9,
                        "model__bytes_written": 0.27e9,
                    },
                    telemetry=Telemetry(sm_clock_mhz=1980.0),
                )
                for run in range(5)
                for name, ns in (("copy", 180e3), (HOSTILE, 2e3))
            ]
        )
        store.finish_session(session.id, "completed")
        return session.id


def test_explain_prints_every_finding_with_its_evidence(
    session_id: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explain", str(session_id)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"session {session_id}: events on NVIDIA H100 80GB HBM3")
    assert "*1. copy: DRAM-bound at 90 % of the roof: only fewer bytes help" in out
    assert "evidence: memory 3.000 TB/s = 90 % of 3.350 TB/s (datasheet)" in out
    assert "gain: at most 1.12\u00d7 if it reached the DRAM roof" in out
    assert "basis: work model" in out
    assert "\x1b" not in out
    assert "\u202e" not in out


def test_explain_json_is_the_sidebars_shape(
    session_id: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explain", str(session_id), "--json"]) == 0
    out = capsys.readouterr().out
    assert out.isascii()
    data = json.loads(out)
    assert data["session_id"] == session_id
    assert data["backend"] == "events"
    kinds = [f["kind"] for f in data["findings"]]
    assert kinds[0] == "memory_bound"
    assert "launch_bound" in kinds
    assert data["findings"][0]["rank"] == 1


def test_explain_of_no_session_is_one_line(
    nsight_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nsight_home.mkdir(parents=True, exist_ok=True)
    assert main(["explain", "99"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert main(["explain", "zero"]) == EXIT_USAGE
    assert "explain: argument session_id" in capsys.readouterr().err


def test_the_line_magic_explains_too(
    ip: InteractiveShell, session_id: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ip.run_line_magic("nsight", f"explain {session_id}") is None
    assert "only fewer bytes help" in capsys.readouterr().out
