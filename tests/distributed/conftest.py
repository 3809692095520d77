"""Hand-made multi-rank records for the frame and figure tests (as fixtures)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from nsight_lab.contract.records import RunRecord, SessionInfo, Telemetry
from nsight_lab.distributed.assemble import RankRun, assemble

if TYPE_CHECKING:
    from collections.abc import Callable

# (rank 0, rank 1) durations of region "step" per run, in ns; rank 1 is slower.
STEP = [(1_000, 3_000), (1_200, 2_800), (1_100, 3_100), (900, 3_400)]


def two_rank_records(*, telemetry: bool = False, name: str = "step") -> list[RunRecord]:
    records: list[RunRecord] = []
    for run_index, (d0, d1) in enumerate(STEP):
        runs = [
            RankRun(
                rank=r,
                device=r if telemetry else -1,
                regions={name: (100 * r, 100 * r + d)},
                telemetry=(
                    Telemetry(sm_clock_mhz=1900.0 - 100 * r, temperature_c=40.0 + r)
                    if telemetry
                    else Telemetry()
                ),
            )
            for r, d in enumerate((d0, d1))
        ]
        records += assemble(
            runs,
            session_id=1,
            config_index=0,
            config={},
            run_index=run_index,
            backend="events" if telemetry else "cpu",
        )
    return records


def session(backend: str = "cpu") -> SessionInfo:
    return SessionInfo(
        id=1,
        status="completed",
        backend=backend,
        created_at="2026-12-01T00:00:00+00:00",
        device="cpu",
        host="h",
    )


@pytest.fixture
def step() -> list[tuple[int, int]]:
    """(rank 0, rank 1) durations of region "step" per run."""
    return list(STEP)


@pytest.fixture
def ranked() -> Callable[..., list[RunRecord]]:
    """Make two-rank records: ``ranked(telemetry=False, name="step")``."""
    return two_rank_records


@pytest.fixture
def session_info() -> Callable[..., SessionInfo]:
    """Make the session of those records: ``session_info(backend="cpu")``."""
    return session
