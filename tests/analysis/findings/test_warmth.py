"""Cache sensitivity: the same cell timed cold and warm, in two sessions (issue 31).

``--cache-control all`` (the default) flushes the L2 before every run; ``none``
leaves what ran before in it. A region whose cold median is 1.2x its warm one or
more leans on the L2: ``cache_sensitive`` names both sessions and medians, in
``explain``, ``show`` and the sidebar alike; nothing is said across devices,
backends, cells, the same cache mode, or on a handful of runs.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import pytest

from nsight_lab.analysis.findings import region_top, session_findings
from nsight_lab.analysis.findings.warmth import COLD_OVER_WARM
from nsight_lab.contract.records import RunRecord, SessionInfo, Telemetry
from nsight_lab.roofline.placement import peaks_for
from nsight_lab.store.run_store import RunStore
from nsight_lab.viewmodel import ViewModels
from nsight_lab.viewmodel.roofs import cache_counterpart
from nsight_lab.views.explain import explain_json
from nsight_lab.views.show import session_text

if TYPE_CHECKING:
    from pathlib import Path

H100 = "NVIDIA H100 80GB HBM3"
CELL = "import nsight\nwith nsight.annotate('gather'):\n    y = x[idx]\n"


def _session(sid: int, mode: str, **changes: object) -> SessionInfo:
    info = SessionInfo(
        id=sid,
        status="completed",
        backend="cupti",
        created_at="2026-12-07T10:00:00+00:00",
        device=H100,
        cell_source=CELL,
        options={"cache_control": mode},
    )
    return dataclasses.replace(info, **changes)  # type: ignore[arg-type]


def _runs(sid: int, medians: dict[str, float], n: int = 10) -> list[RunRecord]:
    return [
        RunRecord(
            session_id=sid,
            config_index=0,
            config={},
            run_index=i,
            annotation=name,
            duration_ns=ns * (1 + 0.01 * (i % 3 - 1)),
            backend="cupti",
            metrics={},
            telemetry=Telemetry(sm_clock_mhz=1980.0),
        )
        for name, ns in medians.items()
        for i in range(n)
    ]


COLD = {"gather": 300e3, "steady": 100e3}
WARM = {"gather": 150e3, "steady": 95e3}


@pytest.mark.parametrize("here", ["all", "none"])
def test_a_region_twice_as_slow_cold_is_cache_sensitive_either_way(here: str) -> None:
    there = "none" if here == "all" else "all"
    mine, theirs = (COLD, WARM) if here == "all" else (WARM, COLD)
    found = session_findings(
        _runs(1, mine),
        _session(1, here),
        peaks=peaks_for(H100),
        counterpart=(_session(2, there), _runs(2, theirs)),
    )
    sensitive = [f for f in found if f.kind == "cache_sensitive"]
    assert [f.region for f in sensitive] == ["gather"]  # steady: 1.05x, nothing said
    (f,) = sensitive
    assert "2.00\u00d7 slower cold" in f.statement
    cold_id, warm_id = (1, 2) if here == "all" else (2, 1)
    assert f.evidence == (
        f"cold: median 300.0 µs (session {cold_id}, --cache-control all)",
        f"warm: median 150.0 µs (session {warm_id}, --cache-control none)",
    )
    assert f.confidence == "timing"
    assert f.gain is None  # which timing is right depends on the workload
    top = region_top(found, "gather", quality=False)
    assert top is not None
    assert top.kind == "cache_sensitive"


@pytest.mark.parametrize(
    ("what", "other", "runs"),
    [
        ("same mode", _session(2, "all"), 10),
        ("another device", _session(2, "none", device="NVIDIA H200"), 10),
        ("another backend", _session(2, "none", backend="events"), 10),
        ("another cell", _session(2, "none", cell_source=CELL + "y.sum()\n"), 10),
        ("a handful of runs", _session(2, "none"), 3),
    ],
)
def test_nothing_is_said_across_what_does_not_compare(
    what: str, other: SessionInfo, runs: int
) -> None:
    found = session_findings(
        _runs(1, COLD),
        _session(1, "all"),
        counterpart=(other, _runs(2, WARM, n=runs)),
    )
    assert "cache_sensitive" not in [f.kind for f in found], what


def test_just_under_the_ratio_is_not_said() -> None:
    warm = {"gather": COLD["gather"] / (COLD_OVER_WARM * 0.99)}
    found = session_findings(
        _runs(1, COLD),
        _session(1, "all"),
        counterpart=(_session(2, "none"), _runs(2, warm)),
    )
    assert "cache_sensitive" not in [f.kind for f in found]


def _kept(store: RunStore, mode: str, medians: dict[str, float]) -> int:
    info = store.create_session(
        backend="cupti",
        device=H100,
        cell_source=CELL,
        options={"cache_control": mode},
    )
    store.add_runs(
        [dataclasses.replace(r, session_id=info.id) for r in _runs(0, medians)]
    )
    store.finish_session(info.id, "completed")
    return info.id


def test_explain_show_and_the_sidebar_find_the_other_session_in_the_store(
    tmp_path: Path,
) -> None:
    with RunStore(tmp_path / "store.sqlite") as store:
        cold = _kept(store, "all", COLD)
        store.create_session(backend="events", device=H100, cell_source=CELL)
        warm = _kept(store, "none", WARM)
        session = store.get_session(cold)
        other = cache_counterpart(store, session)
        assert other is not None
        assert other[0].id == warm
        assert len(other[1]) == 20
        for sid in (cold, warm):
            said = explain_json(store, sid)["findings"]
            kinds = [f["kind"] for f in said]
            assert kinds.count("cache_sensitive") == 1, sid
            assert ViewModels().view(store, sid)["findings"] == said
        assert "cache-sensitive: 2.00" in session_text(store, cold, width=200)
