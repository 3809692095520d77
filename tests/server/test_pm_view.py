"""A PM-sampled session over REST: Counters over time, live and after the end."""

from __future__ import annotations

import dataclasses
import json

from nsight_lab.store.run_store import RunStore
from tests.backends.pm.test_figure import pm_record


async def test_a_running_pm_session_serves_its_counters_chart(jp_fetch, db_path):
    async def figures(session_id: int) -> dict:
        response = await jp_fetch(
            "nsight-lab", "api", "sessions", str(session_id), params={"figures": "1"}
        )
        return json.loads(response.body)

    with RunStore(db_path) as store:  # the profiling kernel's, open while it runs
        session = store.create_session(backend="pm", configs=[{}], runs_planned=6)
        runs = [pm_record("x*2", i, 120.0 + i) for i in range(3)]
        store.add_runs([dataclasses.replace(r, session_id=session.id) for r in runs])
        # What the sidebar's live view asks for while it runs: the series drawn.
        live = await figures(session.id)
        assert live["session"]["status"] == "running"
        counters = live["figures"]["counters"]
        # One panel a unit (GB/s, %), each titled with the region's sign and name.
        titles = [a["text"] for a in counters["layout"]["annotations"]]
        assert [t.split("</span> ", 1)[1] for t in titles] == ["x*2", "x*2"]
        assert counters["data"][0]["y"][:5] == [3001.0] * 5  # the median run, run 1
        more = [pm_record("x*2", i, 100.0) for i in range(3, 6)]
        store.add_runs([dataclasses.replace(r, session_id=session.id) for r in more])
        store.finish_session(session.id, "completed")
    done = await figures(session.id)
    # Runs 3-5 took 100 µs: the lower middle of six by duration is run 5.
    assert done["figures"]["counters"]["data"][0]["y"][:5] == [3005.0] * 5
