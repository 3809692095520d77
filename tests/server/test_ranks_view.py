"""A multi-rank session's view over REST: the per-rank charts and Rank rows."""

from __future__ import annotations

import json

from nsight_lab.contract.records import Telemetry
from nsight_lab.distributed.assemble import RankRun, assemble
from nsight_lab.figures import CHART_ORDER
from nsight_lab.store.run_store import RunStore


def _ranked_session(db_path) -> int:
    with RunStore(db_path) as store:
        session = store.create_session(
            backend="events", configs=[{}], runs_planned=3, options={"ranks": 2}
        )
        records = []
        for run_index in range(3):
            runs = [
                RankRun(
                    rank=r,
                    device=r,
                    regions={"step": (0, 1_000 * (1 + 2 * r))},  # rank 1 is slower
                    telemetry=Telemetry(sm_clock_mhz=1980.0, temperature_c=40.0 + r),
                )
                for r in (0, 1)
            ]
            records += assemble(
                runs,
                session_id=session.id,
                config_index=0,
                config={},
                run_index=run_index,
                backend="events",
            )
        store.add_runs(records)
        store.finish_session(session.id, "completed")
        return session.id


async def test_the_session_view_serves_the_per_rank_charts(jp_fetch, db_path):
    sid = _ranked_session(db_path)
    response = await jp_fetch(
        "nsight-lab", "api", "sessions", str(sid), params={"figures": "1"}
    )
    payload = json.loads(response.body)
    assert payload["chart_order"] == list(CHART_ORDER)
    assert list(payload["figures"]) == ["duration", "ranks", "clocks", "rank_clocks"]
    ranks = payload["figures"]["ranks"]
    names = [trace["name"] for trace in ranks["data"]]
    assert names == ["step span", "step rank 0", "step rank 1", "step straggler"]
    assert ranks["data"][3]["customdata"] == [["step", 1]] * 3  # rank 1, every run
    rows = [(r["Rank"], r["Device"]) for r in payload["summary"]]
    # The served summary is text: "span" for the whole group (rank -1 in the frame).
    assert rows == [("span", "cuda:0,cuda:1"), ("0", "cuda:0"), ("1", "cuda:1")]
