"""Huge grids stay bounded on every read path (issue 29 item 3), without timing.

The list page does not grow with a session's configs, a served figure holds at most
the 2,000-point budget, a view model keeps a bounded window however many configs
share it, and a ``--max-configs`` above the measured maximum is one line naming it.
``benchmarks/huge_sessions.py`` measures the times and memory these bounds give.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from nsight_lab.contract.points import MAX_POINTS
from nsight_lab.contract.records import RunRecord
from nsight_lab.errors import OptionError
from nsight_lab.options.parse import parse_options
from nsight_lab.options.profile import MAX_CONFIGS
from nsight_lab.store.listing import LISTED_CONFIGS, first_configs
from nsight_lab.store.run_store import RunStore
from nsight_lab.viewmodel.cache import WINDOW_BUDGET, ViewModels, capped
from nsight_lab.viewmodel.encode import dumps
from nsight_lab.viewmodel.pages import sessions_page

if TYPE_CHECKING:
    from pathlib import Path


def _session(store: RunStore, configs: int, runs: int = 1) -> int:
    grid = [{"a": i, "b": i * 7} for i in range(configs)]
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
                duration_ns=1000.0 + ci + r,
                backend="cpu",
            )
            for ci, config in enumerate(grid)
            for r in range(runs)
        ]
    )
    store.finish_session(sid, "completed")
    return sid


def _listed(store: RunStore) -> dict[str, Any]:
    page = sessions_page(store, {}, limit=50, offset=0)
    (only,) = page["sessions"]
    return only


def test_the_session_list_page_does_not_grow_with_configs(tmp_path: Path) -> None:
    sizes = {}
    for configs in (30, 5_000):
        with RunStore(tmp_path / f"{configs}.sqlite") as store:
            _session(store, configs)
            body = dumps(sessions_page(store, {}, limit=50, offset=0))
            sizes[configs] = len(body)
            listed = _listed(store)
        assert listed["config_count"] == configs
        assert listed["runs_per_config"] == 1
        assert listed["runs_planned_total"] == configs
        assert listed["configs"] == [
            {"a": i, "b": i * 7} for i in range(LISTED_CONFIGS)
        ]
    # The same fields but a few digits of the counts.
    assert abs(sizes[5_000] - sizes[30]) < 32


def test_a_session_payload_carries_its_first_configs_and_their_count(
    tmp_path: Path,
) -> None:
    from nsight_lab.viewmodel.pages import session_page

    with RunStore(tmp_path / "s.sqlite") as store:
        sid = _session(store, 300, runs=2)
        session = session_page(store, sid, 0, 10, -1)["session"]
    assert session["config_count"] == 300
    assert len(session["configs"]) == LISTED_CONFIGS
    assert session["runs_per_config"] == 2


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("[]", []),
        ('[{"n": 1}, {"n": 2}]', [{"n": 1}, {"n": 2}]),
        ('[{"n": 1}, {"n": 2}, {"n": 3', [{"n": 1}, {"n": 2}]),  # cut in an item
        ('[{"n": 1},', [{"n": 1}]),
        ("", []),
    ],
)
def test_first_configs_reads_the_whole_items_of_a_prefix(
    prefix: str, expected: list[Any]
) -> None:
    assert first_configs(prefix) == expected


def test_first_configs_stops_at_the_count() -> None:
    text = "[" + ", ".join(f'{{"n": {i}}}' for i in range(100)) + "]"
    assert first_configs(text, 3) == [{"n": 0}, {"n": 1}, {"n": 2}]


def _points(figure: dict[str, Any]) -> int:
    return sum(
        max(len(t.get("x") or ()), len(t.get("y") or ())) for t in figure["data"]
    )


def test_capped_keeps_whole_traces_within_the_budget_and_says_so() -> None:
    traces = [{"x": list(range(30)), "y": list(range(30))} for _ in range(200)]
    small = {"data": traces[:2], "layout": {}}
    figures = {
        "big": {"data": traces, "layout": {"meta": {"missing": "x"}}},
        "small": small,
    }
    out = capped(figures, 2_000)
    assert out["small"] is small
    assert _points(out["big"]) <= 2_000
    assert len(out["big"]["data"]) == 2_000 // 30
    meta = out["big"]["layout"]["meta"]
    assert meta["missing"] == "x"
    assert meta["capped"].startswith(
        "the first 66 of 200 traces (1,980 of 6,000 points"
    )
    assert len(figures["big"]["data"]) == 200  # the cached figure is left as it was


def test_a_session_view_of_thousands_of_configs_is_bounded(tmp_path: Path) -> None:
    configs = 4_000
    with RunStore(tmp_path / "s.sqlite") as store:
        sid = _session(store, configs, runs=8)
        models = ViewModels()
        view = models.view(store, sid)
    for name, figure in view["figures"].items():
        assert _points(figure) <= MAX_POINTS, name
    assert "capped" in view["figures"]["duration"]["layout"]["meta"]
    assert len(view["summary"]) == configs  # every config's statistics
    (entry,) = models._entries.values()  # noqa: SLF001  (the model's own window)
    held = sum(len(g.window) for g in entry.model.regions)
    assert held <= WINDOW_BUDGET
    assert all(g.runs == 8 for g in entry.model.regions)  # every run counted


def test_a_max_configs_above_the_measured_maximum_is_one_line() -> None:
    with pytest.raises(OptionError) as caught:
        parse_options(f"--max-configs {MAX_CONFIGS + 1}")
    message = str(caught.value)
    assert "\n" not in message
    assert f"{MAX_CONFIGS:,}" in message
    assert message.startswith("--max-configs")
    parse_options(f"--max-configs {MAX_CONFIGS}")  # the maximum itself is taken
