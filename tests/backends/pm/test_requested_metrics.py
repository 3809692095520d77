"""A metric asked for is a row of the results frame, or the cell fails naming it.

On an H100 the tutorial's step 6 (``sm__throughput`` and ``dram__throughput``) gave a
frame with no ``sm__throughput`` row and no word why; the frame now refuses that.
"""

from __future__ import annotations

import pytest

from nsight_lab.contract.records import TIME_METRIC, RunRecord, SessionInfo
from nsight_lab.errors import CellError
from nsight_lab.results import to_dataframe
from tests.backends.pm.catalogs import script

SM, DRAM = script().TUTORIAL_STEP_6
SESSION = SessionInfo(id=1, status="running", backend="pm", created_at="2026-12-07")


def _records(metrics: dict[str, float]) -> list[RunRecord]:
    return [
        RunRecord(
            session_id=1,
            config_index=0,
            config={},
            run_index=run,
            annotation="matmul",
            duration_ns=1000.0 + run,
            backend="pm",
            metrics=dict(metrics),
        )
        for run in range(3)
    ]


def test_a_requested_metric_without_a_value_fails_in_one_line_naming_it() -> None:
    with pytest.raises(CellError) as caught:
        to_dataframe(_records({DRAM: 40.0}), SESSION, [], metrics=[SM, DRAM])
    text = str(caught.value)
    assert "\n" not in text
    assert SM in text
    assert DRAM not in text
    assert "pm backend" in text
    assert "--backend ncu" in text


def test_the_magic_names_what_must_be_there_with_required() -> None:
    with pytest.raises(CellError, match=SM):
        to_dataframe(_records({DRAM: 40.0}), SESSION, [], required=[SM, DRAM])


def test_every_requested_metric_present_gives_its_rows() -> None:
    frame = to_dataframe(
        _records({SM: 70.0, DRAM: 40.0}), SESSION, [], metrics=[TIME_METRIC, SM, DRAM]
    )
    assert set(frame["Metric"]) == {TIME_METRIC, SM, DRAM}


def test_a_stored_session_rebuilt_without_a_request_is_not_refused() -> None:
    """Exports and history rebuild what was stored: nothing asked, nothing refused."""
    frame = to_dataframe(_records({DRAM: 40.0}), SESSION, [])
    assert set(frame["Metric"]) == {TIME_METRIC, DRAM}


def test_no_records_no_refusal() -> None:
    assert to_dataframe([], SESSION, [], metrics=[SM]).empty
