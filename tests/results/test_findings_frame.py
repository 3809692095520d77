"""``results.findings()``: a session's findings as DataFrame rows (issue 31).

On a stored session, on a frame that carries its findings, and end to end through
the magic on the real cpu backend, whose findings rest on timing only.
"""

from __future__ import annotations

import math
import textwrap
from typing import TYPE_CHECKING

import pandas as pd
import pytest

from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.errors import CellError
from nsight_lab.results.findings import COLUMNS
from nsight_lab.results.stored import session_results
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from pathlib import Path

    from IPython.core.interactiveshell import InteractiveShell

H100 = "NVIDIA H100 80GB HBM3"


def _records(session_id: int) -> list[RunRecord]:
    spec = {"copy": (180e3, 0.537e9), "tiny": (2.5e3, 2e5)}
    return [
        RunRecord(
            session_id=session_id,
            config_index=0,
            config={},
            run_index=run,
            annotation=name,
            duration_ns=ns,
            backend="events",
            metrics={
                "model__flops": 0.0,
                "model__bytes_read": moved / 2,
                "model__bytes_written": moved / 2,
            },
            telemetry=Telemetry(sm_clock_mhz=1980.0),
        )
        for run in range(6)
        for name, (ns, moved) in spec.items()
    ]


@pytest.fixture
def stored(nsight_home: Path) -> int:
    nsight_home.mkdir(parents=True, exist_ok=True)
    with RunStore() as store:
        session = store.create_session(backend="events", device=H100, runs_planned=6)
        store.add_runs(_records(session.id))
        store.finish_session(session.id, "completed")
        return session.id


def test_a_results_frame_gives_its_sessions_findings(stored: int) -> None:
    with RunStore() as store:
        frame = session_results(store, stored)
    found = frame.findings()
    assert list(found.columns) == list(COLUMNS)
    assert list(found["Rank"]) == list(range(1, len(found) + 1))
    copy = found[found["Region"] == "copy"].iloc[0]
    assert copy["Kind"] == "memory_bound"
    assert copy["Confidence"] == "work model"
    assert copy["GainBasis"].startswith("at most")
    tiny = found[found["Region"] == "tiny"].iloc[0]
    assert tiny["Kind"] == "launch_bound"
    assert math.isnan(tiny["Gain"])  # timing alone bounds nothing
    assert tiny["AnsweredBy"] == "--backend cupti"
    top = frame.findings(top=3)
    assert len(top) <= 3
    assert top["Top"].all()


def test_a_frame_that_carries_its_findings_needs_no_store() -> None:
    frame = pd.DataFrame({"Annotation": ["x"]})
    frame.attrs["findings"] = [
        {"rank": 1, "top": True, "region": "x", "kind": "memory_bound", "gain": 1.2}
    ]
    found = frame.findings()
    assert found["Kind"].tolist() == ["memory_bound"]
    assert found["Gain"].tolist() == [1.2]


def test_a_frame_of_no_session_says_so_in_one_line() -> None:
    with pytest.raises(CellError, match=r"findings\(\) reads one nsight-lab session"):
        pd.DataFrame({"x": [1]}).findings()


def test_the_cpu_backend_finds_only_what_host_timing_can_show(
    ip: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    result = ip.run_cell(
        "%%nsight --backend cpu --runs 5 --warmup 1 --out res --quiet\n"
        + textwrap.dedent(
            """\
            import nsight, torch
            a, b, c = (torch.randn(1 << 16) for _ in range(3))
            with nsight.annotate("unfused"):
                y = a + b * c
            with nsight.annotate("fused"):
                z = torch.addcmul(a, b, c)
            """
        )
    )
    assert result.error_in_exec is None, result.error_in_exec
    found = ip.user_ns["res"].findings()
    assert "host_timer" in set(found["Kind"])
    assert set(found["Family"]) <= {"quality", "coverage", "sweep"}
    assert set(found["Confidence"]) <= {"timing"}
    session_id = int(ip.user_ns["res"]["SessionId"].iloc[0])
    capsys.readouterr()
    ip.run_line_magic("nsight", f"explain {session_id}")
    out = capsys.readouterr().out
    assert f"session {session_id}" in out
    assert "timed on the host" in out
