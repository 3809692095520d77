"""nsight_lab.contract.records: the wire shape survives JSON text, and says what it
counts."""

from __future__ import annotations

import dataclasses
import json

from nsight_lab.contract.records import (
    SCHEMA_VERSION,
    RunRecord,
    SessionInfo,
    Telemetry,
    record_from_json,
    record_to_json,
    session_to_json,
    telemetry_from_json,
    telemetry_to_json,
)

FULL = RunRecord(
    session_id=7,
    config_index=2,
    config={"n": 1024, "dtype": "fp16", "scale": 0.5, "fused": True, "note": None},
    run_index=-1,  # a warm-up run
    annotation="matmul \u202e é",
    duration_ns=12345.678,
    backend="cupti",
    kernels=("gemm", "relu"),
    metrics={"dram__bytes.sum": 4096.0, "tflops": 1.25},
    telemetry=Telemetry(
        sm_clock_mhz=1980.0,
        mem_clock_mhz=2619.0,
        temperature_c=61.0,
        power_w=512.5,
        clock_event_reasons=("software power cap", "hw slowdown"),
        throttled=True,
    ),
    thermal_wait_s=1.5,
    finished_at="2026-12-01T20:00:00.000001+00:00",
)


def _through_text(data: object) -> dict:
    """``data`` as the server sends it and a reader parses it back."""
    return json.loads(json.dumps(data, allow_nan=False))


def test_a_record_survives_json_text_unchanged():
    assert record_from_json(_through_text(record_to_json(FULL))) == FULL


def test_the_wire_shape_is_plain_json_with_the_schema_version():
    data = record_to_json(FULL)
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["kernels"] == ["gemm", "relu"]
    assert data["telemetry"]["clock_event_reasons"] == [
        "software power cap",
        "hw slowdown",
    ]
    # Copies: changing the wire dict leaves the frozen record as it was.
    data["config"]["n"] = 1
    data["metrics"].clear()
    assert FULL.config["n"] == 1024
    assert FULL.metrics


def test_the_packed_series_stays_in_the_store_and_off_the_wire():
    with_series = dataclasses.replace(FULL, series=b"\x00\x01packed")
    data = record_to_json(with_series)
    assert "series" not in data
    assert record_from_json(_through_text(data)).series is None


def test_a_minimal_record_reads_back_with_the_defaults():
    # What an older or a hand-written payload may carry: no kernels, metrics,
    # telemetry or thermal wait.
    data = {
        "session_id": "3",  # numbers written as text are read as numbers
        "config_index": 0,
        "config": {},
        "run_index": 1,
        "annotation": "a",
        "duration_ns": 10,
        "backend": "cpu",
        "finished_at": "x",
    }
    record = record_from_json(data)
    assert record.session_id == 3
    assert record.duration_ns == 10.0
    assert isinstance(record.duration_ns, float)
    assert (record.kernels, record.metrics, record.thermal_wait_s) == ((), {}, 0.0)
    assert record.telemetry == Telemetry()


def test_telemetry_round_trips_and_an_empty_dict_is_no_reading():
    reading = FULL.telemetry
    assert telemetry_from_json(_through_text(telemetry_to_json(reading))) == reading
    assert telemetry_from_json({}) == Telemetry()


def test_a_session_is_sent_with_per_config_and_total_run_counts():
    session = SessionInfo(
        id=4,
        status="running",
        backend="cpu",
        created_at="2026-12-01T20:00:00+00:00",
        configs=[{"n": 1}, {"n": 2}, {"n": 3}],
        runs_planned=90,
        options={"runs": 30},
        notes=["cpu backend: --cache-control has no effect on host timing"],
    )
    data = _through_text(session_to_json(session))
    assert "runs_planned" not in data  # never by this ambiguous name
    assert (data["runs_per_config"], data["runs_planned_total"]) == (30, 90)
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["configs"] == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert data["notes"] == session.notes


def test_runs_per_config_without_configs_is_the_total():
    session = SessionInfo(id=1, status="failed", backend="cpu", created_at="x")
    assert session.runs_per_config == 0
    assert dataclasses.replace(session, runs_planned=5).runs_per_config == 5
