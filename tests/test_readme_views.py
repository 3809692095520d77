"""Issue 30: the README says what the views show, as they show it.

``SMClockMHz`` became the median over the runs, with ``SMClockMHzMax`` beside
``SMClockMHzMin`` (f6aace8); the cell's output leads with the answer. At
``0ab1fce`` the README listed no ``SMClockMHzMax``, named no statistic for
``SMClockMHz`` and described the static page as bars above the table.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nsight_lab.contract.records import RunRecord, SessionInfo, Telemetry

README = (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")
PROSE = " ".join(README.split())


def test_the_readme_lists_nsight_labs_frame_columns_in_the_frames_order() -> None:
    pytest.importorskip("pandas")
    from nsight_lab.results import to_dataframe

    listed = re.search(r"then nsight-lab's own:\s*`([^`]*)`", README)
    assert listed is not None
    names = [n.strip() for n in listed.group(1).split(",")]
    assert "SMClockMHzMax" in names
    record = RunRecord(
        session_id=1,
        annotation="r",
        config={},
        config_index=0,
        run_index=0,
        duration_ns=1e3,
        backend="events",
        telemetry=Telemetry(sm_clock_mhz=1950.0),
    )
    session = SessionInfo(
        id=1, status="completed", backend="events", created_at="2026-01-01T00:00:00"
    )
    frame = to_dataframe([record], session, [])
    columns = list(frame.columns)
    start = columns.index(names[0])
    assert columns[start : start + len(names)] == names


def test_the_readme_names_the_sm_clock_statistic_and_the_output_order() -> None:
    assert "`SMClockMHz` (the median over the runs" in PROSE
    assert "`SMClockMHzMin`/`SMClockMHzMax` its range" in PROSE
    start = PROSE.index("The page and its text say the answer first")
    page = PROSE[start : start + 700]
    order = (
        "the quality headline",
        "the flags with cause",
        "the summary table and its notes",
        "then the median duration of each region and config as bars",
        "one line on the charts",
    )
    at = [page.index(words) for words in order]
    assert at == sorted(at)
