"""The per-rank charts: traces, the straggler marked, per-GPU clock lines."""

from __future__ import annotations

from nsight_lab.figures import CHART_ORDER, figures_to_json
from nsight_lab.figures.ranks import rank_clocks_figure, ranks_figure


def test_ranks_figure_has_span_each_rank_and_the_straggler(ranked, step):
    fig = ranks_figure(ranked())
    names = [t.name for t in fig.data]
    assert names == ["step span", "step rank 0", "step rank 1", "step straggler"]
    span, r0, r1, star = fig.data
    assert list(r0.x) == list(range(len(step)))
    assert list(r0.y) == [d0 / 1e3 for d0, _ in step]
    assert list(r1.y) == [d1 / 1e3 for _, d1 in step]
    assert list(span.y) == [(100 + d1) / 1e3 for _, d1 in step]
    assert span.line.dash == "dash"
    # Rank 1 is the straggler of every run: a star on its point.
    assert star.mode == "markers"
    assert star.marker.symbol == "star"
    assert list(star.y) == list(r1.y)
    assert [c[1] for c in star.customdata] == [1] * len(step)
    assert r0.line.color != r1.line.color


def test_user_names_are_escaped_in_trace_names(ranked):
    fig = ranks_figure(ranked(name="<b>x</b>"))
    assert all("<b>" not in t.name for t in fig.data)
    assert fig.data[1].meta["annotation"] == "<b>x</b>"


def test_rank_clocks_only_with_telemetry(ranked, step):
    assert rank_clocks_figure(ranked()) is None
    fig = rank_clocks_figure(ranked(telemetry=True))
    assert fig is not None
    by_name = {t.name: t for t in fig.data}
    assert list(by_name["rank 0 (cuda:0) SM clock"].y) == [1900.0] * len(step)
    assert list(by_name["rank 1 (cuda:1) temperature"].y) == [41.0] * len(step)
    assert by_name["rank 1 (cuda:1) temperature"].yaxis == "y2"


def test_figure_set_of_a_multi_rank_session_in_the_chart_order(ranked):
    figures = figures_to_json(ranked(telemetry=True))
    assert list(figures) == ["duration", "ranks", "clocks", "rank_clocks"]
    assert list(figures) == [c for c in CHART_ORDER if c in figures]
    assert "ranks" not in figures_to_json(ranked()[:0])


def test_live_appends_build_the_same_ranks_chart(ranked):
    from nsight_lab.figures import LiveFigures, figure_json

    records = ranked(telemetry=True)
    live = LiveFigures(with_config=False)
    first = live.add(records[:1])
    assert len(first["ranks"]["traces"]) == 4  # span, rank 0, rank 1, straggler
    for k in range(1, len(records)):
        live.add(records[k : k + 1])
    whole = figure_json(ranks_figure(records))
    built = live.figures["ranks"]
    assert [t["name"] for t in built["data"]] == [t["name"] for t in whole["data"]]
    for got, want in zip(built["data"], whole["data"], strict=True):
        assert got["x"] == want["x"]
        assert got["y"] == want["y"]
        assert got["customdata"] == want["customdata"]
    assert built["data"][3]["marker"]["color"] == whole["data"][3]["marker"]["color"]
    assert built["layout"]["title"] == whole["layout"]["title"]


def test_live_figures_of_single_rank_records_have_no_ranks_chart():
    from nsight_lab.contract.records import RunRecord
    from nsight_lab.figures import LiveFigures

    live = LiveFigures(with_config=False)
    record = RunRecord(
        session_id=1,
        config_index=0,
        config={},
        run_index=0,
        annotation="a",
        duration_ns=5.0,
        backend="cpu",
    )
    assert "ranks" not in live.add([record])
    assert "ranks" not in live.figures
