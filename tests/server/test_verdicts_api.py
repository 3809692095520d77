"""The server's verdicts (issue 13): the compare threshold, the kept verdict on every
served session (the history's badge) and the verdict table of the session view, on a
real Jupyter server over a real store (both engines).
"""

from __future__ import annotations

import json

import pytest

from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.store.run_store import RunStore

INPUT_ERRORS = {"RequestError", "QueryError", "BaselineError"}
"""What a malformed request is answered with (subclasses of InputError: 400)."""


async def get_json(jp_fetch, *parts, **params):
    response = await jp_fetch(
        "nsight-lab", "api", *parts, params=params, raise_error=False
    )
    return response.code, json.loads(response.body)


async def test_compare_threshold_turns_a_small_change_into_no_change(jp_fetch, filled):
    ids = {"a": filled.base, "b": filled.candidate}
    _, strict = await get_json(jp_fetch, "compare", **ids)
    code, loose = await get_json(jp_fetch, "compare", **ids, threshold="30")
    assert code == 200
    # Without one, the comparison's practical threshold (2.2 %).
    assert (strict["threshold"], loose["threshold"]) == (0.022, 0.3)
    small = [
        r
        for r in loose["rows"]
        if r["metric"] == TIME_METRIC and r["config"]["n"] == 1024
    ]
    (row,) = small
    # About 20 % faster: beyond noise, within the 30 % threshold (no change, so
    # not significant).
    assert row["ratio"] == pytest.approx(0.805, abs=0.001)
    assert row["significant"] is False
    assert row["verdict"] == "no change"
    assert "within the ±30 % threshold" in row["note"]
    assert strict["verdict"]["verdict"] == "faster"
    assert loose["verdict"]["verdict"] == "no change"


@pytest.mark.usefixtures("filled")
@pytest.mark.parametrize(
    ("threshold", "needle"),
    [("abc", "invalid threshold 'abc'"), ("150", "threshold: 150.0 is not a")],
)
async def test_compare_refuses_a_bad_threshold(jp_fetch, threshold, needle):
    code, payload = await get_json(
        jp_fetch, "compare", a="1", b="2", threshold=threshold
    )
    assert code == 400
    assert payload["error"] in INPUT_ERRORS
    assert needle in payload["message"]


async def test_kept_verdicts_are_served_with_sessions_and_the_session_view(
    jp_fetch, filled, db_path
):
    with RunStore(db_path) as store:
        store.set_baseline("main", filled.base)
        store.set_session_verdict(
            filled.candidate, baseline_name="main", baseline_session_id=filled.base,
            verdict="slower", threshold=0.02,
        )  # fmt: skip

    code, page = await get_json(jp_fetch, "sessions")
    assert code == 200
    kept = {s["id"]: s["baseline_verdict"] for s in page["sessions"]}
    assert kept[filled.base] is None
    assert kept[filled.running] is None
    assert kept[filled.candidate] == {
        "baseline": "main",
        "baseline_session_id": filled.base,
        "verdict": "slower",
        "threshold": 0.02,
        "computed_at": kept[filled.candidate]["computed_at"],
    }

    code, view = await get_json(jp_fetch, "sessions", str(filled.candidate), figures=1)
    assert code == 200
    assert view["session"]["baseline_verdict"]["verdict"] == "slower"
    table = view["verdicts"]
    assert (table["a"], table["b"], table["baseline"], table["threshold"]) == (
        filled.base, filled.candidate, "main", 0.02,
    )  # fmt: skip
    assert [r["annotation"] for r in table["rows"]] == ["matmul"] * 3
    # The kept word is the profile's (set by hand here); the table is recomputed
    # from the stored runs with the kept threshold: 20 % faster in matmul n=1024.
    assert table["verdict"]["verdict"] == "faster"

    _, plain = await get_json(jp_fetch, "sessions", str(filled.base), figures=1)
    assert plain["verdicts"] is None
