"""A finished session's first view charts a bounded set of runs (issue 29 item 3).

The first ``?figures=1`` view of a stored session took 212 s at 10,000 configs x
100 runs because every run went through the live charts. Now every run is read once
(page by page) for the statistics, and only the latest runs of each config, within
the points budget, are charted: counted here with wrappers, without timing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsight_lab.contract.points import MAX_POINTS
from nsight_lab.contract.records import RunRecord
from nsight_lab.figures import LiveFigures
from nsight_lab.store.run_store import RunStore
from nsight_lab.viewmodel.cache import WINDOW_BUDGET, ViewModels

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    import pytest


def _session(store: RunStore, configs: int, runs: int, *, finish: bool = True) -> int:
    grid: list[dict[str, Any]] = [{"a": i} for i in range(configs)]
    sid = store.create_session(
        backend="cpu",
        name="grid",
        configs=grid,
        runs_planned=configs * runs,
        options={"runs": runs},
    ).id
    store.add_runs(
        [
            RunRecord(
                session_id=sid,
                config_index=ci,
                config=config,
                run_index=r,
                annotation="cell",
                duration_ns=1000.0 + ci + 3 * r,
                backend="cpu",
            )
            for r in range(runs)
            for ci, config in enumerate(grid)
        ]
    )
    if finish:
        store.finish_session(sid, "completed")
    return sid


class _Counted:
    """Wrap LiveFigures.add and RunStore.runs_with_ids: what each was given."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.charted: list[RunRecord] = []
        self.read = 0
        add = LiveFigures.add
        reads = RunStore.runs_with_ids

        def counted_add(live: LiveFigures, records: Sequence[RunRecord]) -> Any:
            self.charted.extend(records)
            return add(live, records)

        def counted_reads(store: RunStore, *args: Any, **kwargs: Any) -> Any:
            pairs = reads(store, *args, **kwargs)
            self.read += len(pairs)
            return pairs

        monkeypatch.setattr(LiveFigures, "add", counted_add)
        monkeypatch.setattr(RunStore, "runs_with_ids", counted_reads)


def test_a_stored_session_charts_its_latest_runs_per_config_within_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configs, runs = 3_000, 20
    per_config = WINDOW_BUDGET // configs  # 6: the window each config keeps
    with RunStore(tmp_path / "s.sqlite") as store:
        sid = _session(store, configs, runs)
        counted = _Counted(monkeypatch)
        view = ViewModels().view(store, sid)
    assert counted.read == configs * runs  # every run read once, for the statistics
    by_config: dict[int, list[int]] = {}
    for record in counted.charted:
        by_config.setdefault(record.config_index, []).append(record.run_index)
    assert all(len(v) <= per_config for v in by_config.values())
    assert all(v == list(range(runs - len(v), runs)) for v in by_config.values())
    # Charted groups stop at the budget: at most one group's points past it.
    assert len(counted.charted) <= MAX_POINTS + per_config
    assert len(by_config) < configs
    meta = view["figures"]["duration"]["layout"]["meta"]
    assert f"of {3 * configs:,} traces" in meta["capped"]  # the whole session's
    assert len(view["summary"]) == configs  # every config's statistics


def test_the_first_view_of_a_stored_session_has_the_same_shape_as_a_live_one(
    tmp_path: Path,
) -> None:
    with RunStore(tmp_path / "s.sqlite") as store:
        done = _session(store, 4, 30)
        live = _session(store, 4, 30, finish=False)
        stored_view = ViewModels().view(store, done)
        live_view = ViewModels().view(store, live)
    assert stored_view.keys() == live_view.keys()
    assert stored_view["figures"].keys() == live_view["figures"].keys()
    for name, figure in stored_view["figures"].items():
        other = live_view["figures"][name]
        assert len(figure["data"]) == len(other["data"]), name
        for mine, theirs in zip(figure["data"], other["data"], strict=True):
            assert mine.keys() == theirs.keys()
            assert len(mine.get("x") or ()) == len(theirs.get("x") or ())
    assert stored_view["summary"] == live_view["summary"]
