"""Whole-session reads stream their runs a page at a time (issue 29 item 3).

``show``, ``compare`` and ``export`` read a session through
:meth:`RunStore.run_pages` and never hold more than a page of records: each test
here reads with pages far smaller than the session, checks no read took more than
a page (and none took the whole list), and that the answer is the one the whole
list gives: the same table, the same medians and intervals, the same file.
``benchmarks/huge_sessions.py`` measures the time and memory at 1,000,000 runs.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any, cast

import pandas as pd
import pytest

from nsight_lab.analysis.baselines import table_of, verdict_table
from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.results.export import RunsTable
from nsight_lab.results.stored import runs_frame
from nsight_lab.store.run_store import RunStore
from nsight_lab.text.safe import frame_to_csv
from nsight_lab.viewmodel.session import build
from nsight_lab.viewmodel.stored import stored_model, window_per_config
from nsight_lab.views.show import session_text

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

PAGE = 7
"""Runs per page in these tests: the sessions hold 10 to 20 pages."""


def _session(store: RunStore, configs: int = 6, runs: int = 9, shift: float = 0) -> int:
    grid = [{"n": 2**i, "dtype": "f32" if i % 2 else "f16"} for i in range(configs)]
    sid = store.create_session(
        backend="cpu",
        name="paged",
        configs=grid,
        runs_planned=configs * runs,
        options={"params": {"n": [c["n"] for c in grid]}, "runs": runs},
    ).id
    store.add_runs(
        [
            RunRecord(
                session_id=sid,
                config_index=ci,
                config=config,
                run_index=r,
                annotation=region,
                duration_ns=1000.0 * (ci + 1) + (r * 37 + ci * 11) % 50 + shift,
                backend="cpu",
                metrics={"host__probe_ns": 500.0 + r, "bytes": float(64 * (r + 1))},
                telemetry=Telemetry(sm_clock_mhz=1400.0 + r, temperature_c=60.0),
            )
            for ci, config in enumerate(grid)
            for r in range(runs)
            for region in ("load", "matmul")
        ]
    )
    store.finish_session(sid, "completed")
    return sid


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore(tmp_path / "store.db") as opened:
        yield opened


@pytest.fixture
def held(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Pages of :data:`PAGE` runs, each page's size recorded; whole lists refused."""
    sizes: list[int] = []
    paged = RunStore.run_pages

    def small_pages(
        self: RunStore, session_id: int, *, page: int = PAGE
    ) -> Iterator[list[RunRecord]]:
        del page
        for records in paged(self, session_id, page=PAGE):
            sizes.append(len(records))
            yield records

    def whole(*_: Any, **__: Any) -> list[RunRecord]:
        msg = "a whole session read at once"
        raise AssertionError(msg)

    monkeypatch.setattr(RunStore, "run_pages", small_pages)
    monkeypatch.setattr(store, "runs", whole)
    return sizes


def test_show_in_pages_prints_the_whole_lists_table(
    store: RunStore, held: list[int]
) -> None:
    sid = _session(store)
    session = store.get_session(sid)
    records = RunStore.runs(store, sid)  # the unpatched read: the reference
    whole = build(records, session, max_points=window_per_config(6)).tables()
    paged = session_text(store, sid, width=200, wide=True)
    assert len(held) > 10
    assert max(held) <= PAGE
    assert stored_model(store, session, figures=False).tables() == whole
    assert "matmul" in paged
    assert f"{len(records) // 2} of" in paged


def test_compare_in_pages_gives_the_full_medians_and_intervals(
    store: RunStore, held: list[int]
) -> None:
    a, b = _session(store), _session(store, shift=40.0)
    streamed = verdict_table(store, a, b).to_json()
    assert held
    assert max(held) <= PAGE
    full = table_of(RunStore.runs(store, a), RunStore.runs(store, b), a=a, b=b)
    assert streamed == full.to_json()
    assert all(r["median_b"] > r["median_a"] for r in streamed["rows"][:1])


def test_export_in_pages_writes_the_unstreamed_file(
    store: RunStore, held: list[int], tmp_path: Path
) -> None:
    a, b = _session(store), _session(store, configs=3)
    expected = runs_frame(cast("RunStore", _Unpatched(store)), [a, b])
    out = io.StringIO()
    RunsTable(store, [a, b], page=PAGE).to_csv(out)
    assert max(held) <= PAGE
    assert out.getvalue() == frame_to_csv(expected)
    path = tmp_path / "runs.parquet"
    RunsTable(store, [a, b], page=PAGE).to_parquet(path)
    # A column of no value is float NaN here, pandas' None unstreamed: both null.
    pd.testing.assert_frame_equal(_nulls(pd.read_parquet(path)), _nulls(expected))


def test_export_of_a_session_without_runs(store: RunStore) -> None:
    sid = store.create_session(backend="cpu", configs=[{}], runs_planned=1).id
    out = io.StringIO()
    RunsTable(store, [sid]).to_csv(out)
    assert out.getvalue() == frame_to_csv(runs_frame(store, [sid]))


def _nulls(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as objects, every missing value ``None`` (NaN or None alike)."""
    out: pd.DataFrame = frame.astype(object).where(frame.notna(), None)
    return out


class _Unpatched:
    """The store with its unpatched whole-list read (the reference export)."""

    def __init__(self, store: RunStore) -> None:
        self.store = store

    def runs(self, session_id: int) -> list[RunRecord]:
        return RunStore.runs(self.store, session_id)
