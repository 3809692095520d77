"""``--derive`` rows in the view model's counter table: the results frame's, exactly.

A user function is called once per run, by the results frame; the view model takes
the values it kept (``DeriveSpec.computed``) and never calls user code. The built-in
``tflops``/``gbps`` it computes itself as runs arrive, so a stored session (the
server's view model, with no notebook functions) shows those.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nsight_lab.contract.records import RunRecord, SessionInfo
from nsight_lab.results import (
    DeriveFailures,
    DeriveSpec,
    stored_results,
    summary_counters,
    to_dataframe,
)
from nsight_lab.viewmodel import SessionViewModel, build


def _session(**options: object) -> SessionInfo:
    return SessionInfo(
        id=1,
        status="completed",
        backend="events",
        created_at="2026-12-03T00:00:00+00:00",
        options={"params": {"n": [1, 2]}, **options},
        configs=[{"n": 1}, {"n": 2}],
    )


def _record(config: int, run: int, region: str, duration: float) -> RunRecord:
    return RunRecord(
        session_id=1,
        config_index=config,
        config={"n": config + 1},
        run_index=run,
        annotation=region,
        duration_ns=duration,
        backend="events",
        metrics={
            "dram__bytes_read.sum": 1e6 * (config + 1),
            "model__flops": 2e9 * (config + 1),
            "model__bytes_read": 4e6,
            "model__bytes_written": 2e6,
        },
    )


calls: list[int] = []


def per_n(duration_ns: float, n: int) -> tuple[float, str]:
    """A user derive function with a unit (nsight-python's signature)."""
    calls.append(n)
    return n / duration_ns * 1e9, "items/s"


def two(duration_ns: float, n: int) -> dict[str, float]:
    """A user derive function that returns two metrics, one of them failing."""
    if n == 2 and duration_ns > 3e4:
        msg = "too slow"
        raise ValueError(msg)
    return {"half": duration_ns / 2, "zero": 0.0}


def _spec() -> DeriveSpec:
    return DeriveSpec(
        names=("per_n", "tflops", "two", "gbps"),
        functions={"per_n": per_n, "two": two},
        failures=DeriveFailures(),
    )


def _frame_counters(records, session, spec, target=None):
    frame = to_dataframe(records, session, ["n"], derive=spec, normalize_against=target)
    return frame, summary_counters(frame)


durations = st.one_of(st.floats(min_value=1e3, max_value=1e5), st.just(math.nan))
draws = st.lists(
    st.tuples(st.integers(0, 1), st.sampled_from(["a", "b"]), durations),
    min_size=1,
    max_size=24,
)


@settings(max_examples=10, deadline=None)
@given(
    runs=draws,
    cuts=st.lists(st.integers(0, 40), max_size=5),
    target=st.sampled_from([None, "a"]),
)
def test_derive_rows_equal_the_frames_added_run_by_run_or_at_once(
    runs, cuts, target
) -> None:
    # Given: a session with user and built-in --derive metrics, its runs taken by
    # the view model in batches while they arrive (as the widget does)
    records = [_record(c, i, region, d) for i, (c, region, d) in enumerate(runs)]
    if not any(region == target for _, region, _ in runs):
        target = None  # the frame refuses a target with no runs
    session = _session(
        derive=["per_n", "tflops", "two", "gbps"], normalize_against=target
    )
    spec = _spec()
    model = SessionViewModel(session, derive=spec)
    bounds = sorted({0, len(records), *(c for c in cuts if c <= len(records))})
    for start, end in itertools.pairwise(bounds):
        model.add(records[start:end])

    # When: the results frame computes the derived values (the user functions,
    # once per run), then the view model takes them
    calls.clear()
    _, expected = _frame_counters(records, session, spec, target)
    called = len(calls)
    model.add_derived(records)
    whole = build(records, session, derive=spec)

    # Then: the frame's counter rows, derive rows included, in its order; built
    # run by run == built at once; the user function was not called again
    assert model.to_json()["counters"] == expected
    assert json.dumps(model.to_json(), sort_keys=True) == json.dumps(
        whole.to_json(), sort_keys=True
    )
    assert len(calls) == called
    names = {row["cells"][2] for row in expected["rows"]}
    if target is None:
        assert {"per_n", "tflops", "gbps"} <= names
        assert names & {"half", "two"}


def test_the_derive_rows_read_median_rsd_and_runs_of_the_values() -> None:
    # Given: one region, three runs, a user function with a unit
    records = [_record(0, i, "a", ns) for i, ns in enumerate((1e4, 2e4, 4e4))]
    session = _session(derive=["per_n"])
    spec = DeriveSpec(names=("per_n",), functions={"per_n": per_n})
    to_dataframe(records, session, ["n"], derive=spec)

    # When
    model = build(records, session, derive=spec)

    # Then: 1e9 / 2e4 items/s is the median; 3 runs
    rows = [r["cells"] for r in model.to_json()["counters"]["rows"]]
    assert rows[-1][:3] == ["a", "1", "per_n"]
    assert rows[-1][3].endswith("items/s")
    assert rows[-1][3].startswith("50")
    assert rows[-1][5] == "3"


def test_without_the_frames_values_no_user_derive_row_and_no_call() -> None:
    # Given: runs whose user function the frame has not called (yet)
    records = [_record(0, i, "a", 1e4) for i in range(3)]
    spec = DeriveSpec(names=("per_n", "tflops"), functions={"per_n": per_n})
    calls.clear()

    # When
    model = build(records, _session(), derive=spec)

    # Then: no derive row (the view model never calls user code)
    metrics = {r["cells"][2] for r in model.to_json()["counters"]["rows"]}
    assert "per_n" not in metrics
    assert calls == []


def test_a_stored_session_shows_its_built_in_derive_rows_only() -> None:
    # Given: a stored session that was profiled with --derive per_n,tflops
    records = [_record(c, i, "a", 1e4 * (i + 1)) for c in (0, 1) for i in range(4)]
    session = _session(derive=["per_n", "tflops"])

    # When: the server's view model (no DeriveSpec: the session's options)
    view = build(records, session).to_json()

    # Then: tflops rows, as the stored results frame's; per_n is not stored
    counters = summary_counters(stored_results(records, session, None))
    assert view["counters"] == counters
    metrics = [r["cells"][2] for r in view["counters"]["rows"]]
    assert metrics.count("tflops") == 2
    assert "per_n" not in metrics


@pytest.mark.parametrize("derive", [[], ["gbps"]])
def test_built_in_derive_values_arrive_with_the_runs(derive) -> None:
    # Given: a live view model of a session with or without --derive gbps
    model = SessionViewModel(_session(derive=derive))

    # When: one run arrives
    model.add([_record(0, 0, "a", 1e4)])

    # Then: its gbps row is there at once (6e6 bytes / 10 µs = 600 GB/s)
    rows = [r["cells"] for r in model.to_json()["counters"]["rows"]]
    gbps = [r for r in rows if r[2] == "gbps"]
    assert len(gbps) == len(derive)
    if derive:
        assert gbps[0][3].startswith("600")


def test_the_view_model_with_its_derive_rows_loads_no_pandas() -> None:
    # Given: a fresh interpreter
    probe = (
        "import sys\n"
        "from nsight_lab.viewmodel import build\n"
        "from nsight_lab.results.derive import DeriveSpec\n"
        "build([])\n"
        "print('pandas' in sys.modules)\n"
    )

    # When: it imports the view model and its derive computation
    result = subprocess.run(  # noqa: S603  (our own interpreter, fixed code)
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )

    # Then: no pandas on the server's request path
    assert result.stdout.strip() == "False"
