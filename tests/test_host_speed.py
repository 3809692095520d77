"""The host's speed: the cpu backend's probe, and the comparison's flag (host_speed.py).

The probe is real (the cpu backend times it in these sessions); the flag is judged on
sessions whose probes are given, as NVML's clocks are in test_verdicts.py: the speed
steps it is meant to catch (a virtual CPU whose sibling gets busy) cannot be caused
on purpose here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest

from nsight_lab.analysis.compare import Comparison, compare_runs, session_verdict
from nsight_lab.contract.records import TIME_METRIC, RunRecord
from nsight_lab.host_speed import (
    HOST_TOLERANCE,
    PREFIX,
    PROBE_INTERVAL_NS,
    PROBE_METRIC,
    HostProbe,
    probe_ns,
)
from nsight_lab.results import to_dataframe
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

RUNS = 40


def _runs(
    durations: np.ndarray, probe: float | None, *, session_id: int = 1
) -> list[RunRecord]:
    out = []
    for i, value in enumerate(durations):
        metrics = {"dram__bytes_read.sum": 1e6}
        if probe is not None:
            metrics[PROBE_METRIC] = probe * (1 + 0.01 * ((i % 3) - 1))
        out.append(
            RunRecord(
                session_id=session_id,
                config_index=0,
                config={},
                run_index=i,
                annotation="cell",
                duration_ns=float(value),
                backend="cpu",
                metrics=metrics,
            )
        )
    return out


def _pair(
    probe_a: float | None, probe_b: float | None, slower: float = 1.3
) -> list[Comparison]:
    rng = np.random.default_rng(3)
    a = 230_000.0 * (1 + 0.01 * rng.standard_normal(RUNS))
    b = 230_000.0 * slower * (1 + 0.01 * rng.standard_normal(RUNS))
    return compare_runs(_runs(a, probe_a), _runs(b, probe_b, session_id=2))


def test_a_host_step_flags_the_timed_rows_and_says_whose_the_ratio_may_be() -> None:
    rows = {r.metric: r for r in _pair(49_000.0, 88_000.0)}
    time = rows[TIME_METRIC]
    assert time.verdict == "slower"  # the verdict stands as measured
    assert time.host_differs
    assert time.flagged
    assert (time.host_probe_ns_a, time.host_probe_ns_b) == (49_000.0, 88_000.0)
    assert (
        "host speed differs: a fixed probe took 49.0 µs in a, 88.0 µs in b (+80 %"
        in (time.note)
    )
    # Bytes do not depend on the host's speed: not flagged.
    counted = rows["dram__bytes_read.sum"]
    assert not counted.host_differs
    assert counted.host_probe_ns_a is None
    # The probe qualifies rows; it is never a row itself.
    assert not any(metric.startswith(PREFIX) for metric in rows)
    overall = session_verdict(list(rows.values()))
    assert "1 with host speeds apart" in overall.note
    assert "(the ratio may be the host's)" in overall.note


@pytest.mark.parametrize(
    ("probe_b", "differs"),
    [
        (49_000.0 * (1 + HOST_TOLERANCE * 0.8), False),
        (49_000.0 * (1 + HOST_TOLERANCE * 1.2), True),
    ],
)
def test_the_tolerance_is_the_edge(probe_b: float, differs: bool) -> None:  # noqa: FBT001
    time = _pair(49_000.0, probe_b)[0]
    assert time.host_differs is differs
    assert ("host speed differs" in time.note) is differs


def test_sessions_without_a_probe_are_not_flagged() -> None:
    """GPU backends take no probe, and neither did cpu sessions before it existed."""
    for a, b in ((None, None), (49_000.0, None), (None, 88_000.0)):
        time = _pair(a, b)[0]
        assert not time.host_differs
        assert "host speed" not in time.note


def test_the_probe_is_a_real_timing_that_is_retimed_when_due() -> None:
    first = probe_ns()
    assert 1_000 < first < 100_000_000  # 2000 multiply-adds: microseconds, not 0
    probe = HostProbe()
    value = probe.latest()
    assert probe.latest() == value  # not due again yet: the same timing
    probe._at = (probe._at or 0) - PROBE_INTERVAL_NS  # noqa: SLF001  (as if 0.1 s passed)
    values = {probe.latest() for _ in range(3)}
    assert len(values) == 1  # timed once more, then held again


def test_every_cpu_run_carries_the_probe_and_no_results_row_shows_it(
    ip: InteractiveShell,
) -> None:
    """A real 0.35 s cpu session: every record has the probe, timed 3 times or more."""
    ip.run_cell_magic(
        "nsight",
        "--backend cpu --runs 70 --warmup 0 --quiet --name probed",
        'import nsight, time\nwith nsight.annotate("a"):\n    time.sleep(0.005)\n'
        'with nsight.annotate("b"):\n    x = sum(range(100))',
    )
    with RunStore() as store:
        (session,) = store.list_sessions(limit=10)
        runs = list(store.runs(session.id))
        session = store.get_session(session.id)
    assert {r.annotation for r in runs} == {"a", "b"}
    probes = [r.metrics[PROBE_METRIC] for r in runs]
    assert all(p > 0 for p in probes)
    by_run = {(r.run_index, r.metrics[PROBE_METRIC]) for r in runs}
    assert len(by_run) == 70  # both regions of a run carry the same probe
    assert len(set(probes)) >= 3  # re-timed every 0.1 s of a 0.35 s session
    frame = to_dataframe(runs, session, [])
    assert not frame["Metric"].str.startswith(PREFIX).any()
