"""nsight_lab.cli.history and results.stored: stored sessions, runs and baselines as
tables (a SQLite store).

The CLI's use of them (newest first, ``show``, ``export``) is in tests/test_cli.py and
the server's downloads in tests/server/test_downloads.py; here: the exact shape of
each table, empty ones included.
"""

from __future__ import annotations

import pytest

from nsight_lab.cli.history import (
    BASELINE_COLUMNS,
    HISTORY_COLUMNS,
    baselines_frame,
    sessions_frame,
)
from nsight_lab.contract.records import TIME_METRIC, RunRecord, Telemetry
from nsight_lab.errors import NotFoundError
from nsight_lab.results.stored import runs_frame, session_results
from nsight_lab.store.run_store import RunStore


def _record(session_id: int, run: int, **changes: object) -> RunRecord:
    fields: dict = {
        "session_id": session_id,
        "config_index": 0,
        "config": {"n": 64, "dtype": "fp16"},
        "run_index": run,
        "annotation": "step",
        "duration_ns": 1000.0 + run,
        "backend": "cupti",
    }
    fields.update(changes)
    return RunRecord(**fields)


@pytest.fixture
def store():
    with RunStore() as opened:
        yield opened


def test_a_run_is_one_flat_row_of_the_export(store):
    session = store.create_session(
        backend="cupti", configs=[{"n": 64, "dtype": "fp16"}]
    )
    store.add_runs(
        [
            _record(
                session.id,
                0,
                kernels=("gemm", "relu"),
                metrics={"dram__bytes.sum": 4096.0},
                telemetry=Telemetry(
                    sm_clock_mhz=1980.0,
                    clock_event_reasons=("software power cap", "hw slowdown"),
                    throttled=True,
                ),
                thermal_wait_s=0.5,
            )
        ]
    )
    [row] = runs_frame(store, [session.id]).to_dict("records")
    assert row["param_n"] == 64
    assert row["param_dtype"] == "fp16"
    assert row["metric"] == TIME_METRIC
    assert row["kernels"] == "gemm;relu"
    assert row["clock_event_reasons"] == "software power cap, hw slowdown"
    assert row["metric_dram__bytes.sum"] == 4096.0
    assert row["sm_clock_mhz"] == 1980.0
    assert row["throttled"]
    assert (row["duration_ns"], row["thermal_wait_s"]) == (1000.0, 0.5)
    # Nested parts are flattened, not carried along.
    assert not {"config", "metrics", "telemetry", "schema_version"} & set(row)


def test_runs_of_several_sessions_come_in_the_order_asked(store):
    first = store.create_session(backend="cpu").id
    second = store.create_session(backend="cpu").id
    store.add_runs([_record(first, r) for r in range(2)])
    store.add_runs([_record(second, r) for r in range(3)])
    frame = runs_frame(store, [second, first])
    assert frame["session_id"].tolist() == [second] * 3 + [first] * 2
    assert frame["run_index"].tolist() == [0, 1, 2, 0, 1]
    assert runs_frame(store, []).empty


def test_sessions_have_the_history_columns_empty_text_and_their_run_counts(store):
    bare = store.create_session(backend="cpu")
    named = store.create_session(
        backend="events", name="tuned", notebook="a.ipynb", device="H200", user="ana"
    )
    store.add_runs([_record(named.id, r) for r in range(4)])
    frame = sessions_frame(store, [named, bare])
    assert list(frame.columns) == list(HISTORY_COLUMNS)
    rows = frame.to_dict("records")
    assert [r["id"] for r in rows] == [named.id, bare.id]  # as given
    assert [r["runs"] for r in rows] == [4, 0]
    assert (rows[0]["name"], rows[0]["device"], rows[0]["user"]) == (
        "tuned",
        "H200",
        "ana",
    )
    assert (rows[1]["name"], rows[1]["notebook"], rows[1]["device"]) == ("", "", "")
    assert rows[1]["status"] == "running"


def test_no_sessions_or_baselines_are_empty_tables_with_their_columns(store):
    assert list(sessions_frame(store, []).columns) == list(HISTORY_COLUMNS)
    assert list(baselines_frame(store).columns) == list(BASELINE_COLUMNS)
    assert baselines_frame(store).empty


def test_a_baseline_row_says_what_its_session_was(store):
    session = store.create_session(backend="cupti", name="before", device="H200")
    store.finish_session(session.id, "completed")
    store.set_baseline("main", session.id)
    [row] = baselines_frame(store).to_dict("records")
    assert row["baseline"] == "main"
    assert row["session"] == session.id
    assert row["set_at"]
    assert (row["name"], row["status"], row["backend"], row["device"]) == (
        "before",
        "completed",
        "cupti",
        "H200",
    )


def test_results_of_a_missing_session_say_so(store):
    with pytest.raises(NotFoundError):
        session_results(store, 999)
