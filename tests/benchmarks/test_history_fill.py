"""``benchmarks/history_fill.py`` fills a store as the store's own writer would.

The history benchmark (issue 32) copies one session written through the store's API
with bulk statements. Here a filled store's sessions are written again through the
API (``create_session``, ``add_runs``, ``finish_session``) into a fresh store, and
every table's rows must be the same but for what a new write draws itself (ids,
uuid, times, the writer's pid): so the copies hold what the writer writes,
counters, region lists and run keys included. Both engines.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from nsight_lab.store.run_store import RunStore
from tests.store.test_run_store import raw

if TYPE_CHECKING:
    from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
_DRAWN = {"id", "uuid", "created_at", "finished_at", "pid", "pid_token", "host"}
"""Columns a write draws itself (or from the writing process)."""


@pytest.fixture(scope="module")
def fill() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "history_fill_bench", ROOT / "benchmarks" / "history_fill.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _tables(db: Path | str) -> dict[str, list[tuple[Any, ...]]]:
    """Every table holding sessions' rows, without the drawn columns, in order."""
    tables = ("sessions", "runs", "session_runs", "session_annotations")
    out: dict[str, list[tuple[Any, ...]]] = {}
    with contextlib.closing(raw(db)) as conn:
        for table in tables:
            cur = conn.execute(f"SELECT * FROM {table} WHERE 1 = 0")  # noqa: S608
            cols = [d[0] for d in cur.description]
            keep = [c for c in cols if c not in _DRAWN]
            key = "id" if "id" in cols else ", ".join(keep)
            rows = conn.execute(
                f"SELECT {', '.join(keep)} FROM {table} ORDER BY {key}"  # noqa: S608
            ).fetchall()
            out[table] = [tuple(r) for r in rows]
    return out


def _rewrite(source: Path | str, target: Path | str) -> None:
    """Every session of ``source`` written again through the API into ``target``."""
    with RunStore(source) as src, RunStore(target) as dst:
        for s in reversed(src.list_sessions(limit=None)):
            new = dst.create_session(
                backend=s.backend, backend_reason=s.backend_reason, name=s.name,
                notebook=s.notebook, device=s.device, user=s.user,
                options=s.options, configs=s.configs, runs_planned=s.runs_planned,
                cell_source=s.cell_source, notes=s.notes,
            )  # fmt: skip
            assert new.id == s.id
            records = src.runs(s.id)
            for start in range(0, len(records), 500):  # the writer's batches
                dst.add_runs(records[start : start + 500])
            dst.finish_session(s.id, s.status)


def test_a_filled_store_holds_what_the_writer_writes(
    fill: ModuleType, store_location: Path | str, tmp_path: Path
) -> None:
    db: Any = store_location
    result = fill.fill(str(db), 25, tmp_path)
    assert result["runs"] == 25 * fill.RUNS_PER_SESSION == 2_500
    again = tmp_path / "again.sqlite"
    _rewrite(db, again)
    filled, written = _tables(db), _tables(again)
    assert {t: len(r) for t, r in filled.items()} == {
        "sessions": 25,
        "runs": 2_500,
        "session_runs": 25 * 50,
        "session_annotations": 50,
    }
    for table, rows in written.items():
        assert filled[table] == rows, table
    # The regions vary as the benchmark's filters expect.
    with RunStore(db) as store:
        assert store.count_sessions(annotation=fill.VOCABULARY[3]) == 2  # 3 and 23
        assert store.list_session_page(limit=1).sessions[0].regions == sorted(
            fill.regions_of(24)
        )
