"""The inline widget draws the per-rank chart while a multi-rank profile runs."""

from __future__ import annotations

from nsight_lab.contract.progress import make_progress
from nsight_lab.views.live import WidgetView


def test_the_widget_gets_the_ranks_chart_live_and_at_the_end(ranked):
    records = ranked(telemetry=True)
    view = WidgetView(session_id=1, show=False)
    for k, record in enumerate(records):
        progress = make_progress(
            status="running",
            configs_total=1,
            runs_per_config=len(records),
            config_index=0,
            runs_done_in_config=k + 1,
            runs_done_total=k + 1,
        )
        view.update(progress, [record], force=True)
        # The chart appeared with the first run: the whole figures were re-sent.
        assert "ranks" in view.widget.figures
    data = view.live.figures["ranks"]["data"]
    assert [t["name"] for t in data][:2] == ["step span", "step rank 0"]
    assert data[1]["x"] == list(range(len(records)))
    # Later runs went as appends to that chart (extendTraces in the front end).
    assert "ranks" in view.widget.append["charts"]
    view.finish(records)
    assert {"ranks", "rank_clocks"} <= set(view.widget.figures)
