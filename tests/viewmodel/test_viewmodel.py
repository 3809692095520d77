"""The view model: built run by run it equals one built at once, and the frame's rows.

The summary rows and counters come from running statistics (no DataFrame): on the
H200 fixture's sessions they equal :func:`nsight_lab.results.summary_rows` and
:func:`~nsight_lab.results.summary_counters` of the stored results.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nsight_lab.contract.records import RunRecord, SessionInfo, Telemetry
from nsight_lab.contract.registry import times_the_host
from nsight_lab.roofline.peaks import known_peaks
from nsight_lab.store.run_store import RunStore
from nsight_lab.viewmodel import SessionViewModel, build
from nsight_lab.viewmodel.streaming import (
    EXACT_VALUES,
    RELATIVE_ACCURACY,
    QuantileSketch,
    StreamingSummary,
)

FIXTURE = Path("/work/shared/fixtures/h200_block.sqlite")
SESSION = SessionInfo(
    id=1,
    status="running",
    backend="events",
    created_at="2026-12-03T00:00:00+00:00",
    options={"params": {"n": [1, 2]}},
    configs=[{"n": 1}, {"n": 2}],
)


def _record(  # noqa: PLR0913  (one run's values)
    config: int, run: int, region: str, duration: float, counter: float, *, hot: bool
) -> RunRecord:
    return RunRecord(
        session_id=1,
        config_index=config,
        config={"n": config + 1},
        run_index=run,
        annotation=region,
        duration_ns=duration,
        backend="events",
        metrics={"dram__bytes_read.sum": counter, "model__flops": 1e9},
        telemetry=Telemetry(sm_clock_mhz=1980.0 - 100 * hot, throttled=hot),
    )


durations = st.one_of(
    st.floats(min_value=1e3, max_value=1e8), st.just(math.nan), st.just(0.0)
)
runs = st.lists(
    st.tuples(
        st.integers(0, 1),
        st.sampled_from(["a", "b", "mm"]),
        durations,
        st.floats(min_value=0, max_value=1e9),
        st.booleans(),
    ),
    min_size=0,
    max_size=60,
)


def _records(draws: list[tuple[int, str, float, float, bool]]) -> list[RunRecord]:
    return [
        _record(config, run, region, duration, counter, hot=hot)
        for run, (config, region, duration, counter, hot) in enumerate(draws)
    ]


@settings(max_examples=40, deadline=None)
@given(
    draws=runs,
    cuts=st.lists(st.integers(0, 60), max_size=6),
    points=st.sampled_from([5, 2000]),
)
def test_built_run_by_run_equals_built_at_once(draws, cuts, points) -> None:
    # Given: the same records, taken in random batches and all at once
    records = _records(draws)
    bounds = sorted({0, len(records), *(c for c in cuts if c <= len(records))})
    model = SessionViewModel(SESSION, max_points=points)
    for start, end in itertools.pairwise(bounds):
        model.add(records[start:end])

    # When
    whole = build(records, SESSION, max_points=points)

    # Then: the same payload, to the bit
    assert model.runs == whole.runs == len(records)
    assert json.dumps(model.to_json(), sort_keys=True) == json.dumps(
        whole.to_json(), sort_keys=True
    )


def test_a_refresh_costs_the_new_runs_only_and_state_stays_bounded() -> None:
    # Given: a view model that took 20,000 runs of two regions
    model = SessionViewModel(SESSION, max_points=100)
    rng = random.Random(1)  # noqa: S311  (test data)
    for start in range(0, 20_000, 1_000):
        model.add(
            [
                _record(0, i, "ab"[i % 2], rng.uniform(1e4, 2e4), 1.0, hot=False)
                for i in range(start, start + 1_000)
            ]
        )
    before = model.to_json()

    # Then: the window and the traces hold the latest runs only
    assert model.runs == 20_000
    assert all(len(g.window) == 100 for g in model.regions)
    for trace in before["figures"]["duration"]["data"]:
        assert len(trace.get("x") or []) <= 100
    assert [r["Runs"] for r in before["summary"]] == ["10,000", "10,000"]

    # When: nothing new, the payload is the one built before (no work)
    assert model.to_json()["figures"] is before["figures"]


def test_quantiles_are_exact_up_to_the_limit_then_within_the_accuracy() -> None:
    rng = random.Random(7)  # noqa: S311  (test data)
    values = [rng.lognormvariate(10, 1.5) for _ in range(EXACT_VALUES * 5)]
    small, large = QuantileSketch(), QuantileSketch()
    for v in values[:EXACT_VALUES]:
        small.add(v)
    for v in values:
        large.add(v)
    head = sorted(values[:EXACT_VALUES])
    assert small.exact
    assert small.median() == (head[EXACT_VALUES // 2 - 1] + head[EXACT_VALUES // 2]) / 2
    assert not large.exact
    ordered = sorted(values)
    for q in (0.01, 0.25, 0.5, 0.9, 0.99):
        truth = ordered[math.floor(q * (len(values) - 1))]
        assert abs(large.quantile(q) - truth) <= RELATIVE_ACCURACY * truth * 1.0001
    with pytest.raises(ValueError, match="within"):
        large.quantile(1.5)


def test_streaming_summary_matches_the_two_pass_statistics() -> None:
    import numpy as np

    rng = random.Random(3)  # noqa: S311  (test data)
    values = [rng.gauss(1e6, 3e4) for _ in range(5_000)] + [math.nan]
    stats = StreamingSummary()
    for v in values:
        stats.add(v)
    finite = np.array(values[:-1])
    assert stats.n == 5_000
    assert stats.mean == pytest.approx(finite.mean(), rel=1e-12)
    assert stats.std == pytest.approx(finite.std(ddof=1), rel=1e-9)
    assert stats.rsd_pct == pytest.approx(100 * finite.std(ddof=1) / finite.mean())
    assert (stats.min, stats.max) == (finite.min(), finite.max())


@pytest.fixture(scope="module")
def fixture_store(tmp_path_factory):
    if not FIXTURE.is_file():
        pytest.skip(f"the H200 fixture is missing: {FIXTURE}")
    path = tmp_path_factory.mktemp("h200") / "store.sqlite"
    shutil.copy(FIXTURE, path)
    with RunStore(path) as store:
        yield store


@pytest.mark.parametrize("sid", [1, 2, 3, 4, 5, 6])
def test_the_h200_sessions_rows_equal_the_results_frames(fixture_store, sid) -> None:
    from nsight_lab.results import stored_results, summary_counters, summary_rows

    # Given: a session of the H200 fixture, its peaks and its runs
    session = fixture_store.get_session(sid)
    peaks = known_peaks(
        fixture_store, session.device, cpu=times_the_host(session.backend)
    )
    records = fixture_store.runs(sid)
    frame = stored_results(records, session, peaks)

    # When
    view = build(records, session, peaks=peaks).to_json()

    # Then: the frame's rows (session 6's --derive tflops rows included)
    assert view["summary"] == summary_rows(frame)
    counters = summary_counters(frame)
    assert view["counters"] == counters
    if sid == 6:
        assert any("tflops" in r["cells"] for r in view["counters"]["rows"])
    assert list(view["figures"])[:2] == ["duration", "clocks"]
