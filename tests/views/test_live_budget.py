"""The live widget on a budget, through the real magic in an IPython shell (cpu).

Issue 8: the widget rebuilt every figure from all records on each update, so a
20-config x 100-run cell took 249.5 s live against 0.25 s quiet. Now updates append
the new points only, at most ten a second and within 5 % of the wall time
(measured), and the final figures are built once.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, ClassVar

from nsight_lab.figures import assemble
from nsight_lab.views import live
from nsight_lab.views.live import UPDATE_BUDGET

if TYPE_CHECKING:
    import pytest
    from IPython.core.interactiveshell import InteractiveShell

CONFIGS = 20
RUNS = 100
# ~1 ms per run: the quiet cell takes ~2.5 s, so the ratio is not dominated by the
# fixed cost of a cell (store, DataFrame) and needs no additive allowance.
BODY = "import time\ntime.sleep(0.001)\n"


class _Recorded(live.WidgetView):
    """The magic's view, kept for the assertions."""

    views: ClassVar[list[_Recorded]] = []

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        _Recorded.views.append(self)


def _cell(ip: InteractiveShell, *, quiet: bool) -> float:
    configs = ",".join(str(64 + i) for i in range(CONFIGS))
    line = f"%%nsight --backend cpu --configs {configs} --runs {RUNS} --warmup 0"
    start = time.perf_counter()
    result = ip.run_cell(f"{line}{' --quiet' if quiet else ''}\n{BODY}")
    wall = time.perf_counter() - start
    assert result.error_in_exec is None
    return wall


def test_live_widget_costs_at_most_half_the_quiet_wall_and_5pct_in_updates(
    ip: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "WidgetView", _Recorded)
    _Recorded.views.clear()
    # Warm up both paths (imports of plotly and of the widget are one-offs per kernel).
    ip.run_cell("%%nsight --backend cpu --runs 3 --warmup 0\nx = 1\n")
    ip.run_cell("%%nsight --backend cpu --runs 3 --warmup 0 --quiet\nx = 1\n")
    quiet, live_walls, shares = [], [], []
    for _ in range(3):  # interleaved, min of each: robust on a loaded 2-core machine
        quiet.append(_cell(ip, quiet=True))
        wall = _cell(ip, quiet=False)
        view = _Recorded.views[-1]
        live_walls.append(wall)
        shares.append(view.update_s / wall)
        # Never far over the budget, whatever the host does: the last draw is
        # always made, and one of 0.2 s on a busy 2-core CI host read 6.7 % of a
        # 3.2 s cell; rebuilding every figure on each update read ~1000x.
        assert view.update_s <= 2 * UPDATE_BUDGET * wall, (view.update_s, wall)
        assert view.drawn >= 3, view.drawn  # ... and still live: updates were drawn
    print(f"live {live_walls} s, quiet {quiet} s, update share {shares}")  # noqa: T201
    # The time budget of live updates, measured: within 5 % of the cell's wall in
    # the least disturbed of the interleaved cells (as for the walls below).
    assert min(shares) <= UPDATE_BUDGET, shares
    assert min(live_walls) <= 1.5 * min(quiet), (live_walls, quiet, shares)

    # The final figures, built once at the end, hold every run.
    view = _Recorded.views[-1]
    figures = view.widget.figures
    points = [t for t in figures["duration"]["data"] if t["mode"] == "lines+markers"]
    assert len(points) == CONFIGS
    assert all(t["x"] == list(range(RUNS)) for t in points)
    assert all(len(t["x"]) == CONFIGS * RUNS for t in figures["clocks"]["data"])
    assert view.widget.status == "completed"
    assert view.widget.progress["runs_done_in_config"] == RUNS
    assert view.widget.progress["runs_done_total"] == CONFIGS * RUNS
    assert view.widget.figures_seq == view._seq >= 2  # noqa: SLF001


def test_no_update_rebuilds_from_every_record(
    ip: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While running, figures are only appended to; the end reads the view model."""
    calls: list[int] = []
    real = assemble.duration_figure

    def counted(records, *args, **kwargs):
        calls.append(len(records))
        return real(records, *args, **kwargs)

    monkeypatch.setattr(assemble, "duration_figure", counted)
    monkeypatch.setattr(live, "MIN_UPDATE_INTERVAL_S", 0.0)
    result = ip.run_cell(
        "%%nsight --backend cpu --configs 1,2 --runs 30 --warmup 0\nx = 1\n"
    )
    assert result.error_in_exec is None
    assert calls == []  # finish() too: no figure built from every record


def test_control_characters_and_markup_in_annotations_give_a_static_view(
    ip: InteractiveShell,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An annotation "a\\x00b<script>" once made kaleido raise out of the display."""
    monkeypatch.setattr(live, "WidgetView", _Recorded)
    _Recorded.views.clear()
    # Compute text/html as a Jupyter kernel does (a terminal shell shows text only).
    formatter = ip.display_formatter
    monkeypatch.setattr(
        formatter, "active_types", [*formatter.active_types, "text/html"]
    )
    result = ip.run_cell(
        "%%nsight --backend cpu --runs 3 --warmup 0\n"
        "import nsight\n"
        'with nsight.annotate("a\\x00b<script>alert(1)</script>"):\n'
        "    x = 1\n"
    )
    out, err = capsys.readouterr()
    assert result.error_in_exec is None
    assert "NsightWidget object at" not in out + err
    assert "Traceback" not in out + err
    view = _Recorded.views[-1]
    assert view.widget.status == "completed"
    data = view.bundle  # the cell's final output (views/bundle.py)
    assert data is not None
    page = data["text/html"]
    assert "<script>" not in page
    assert "\x00" not in page
    assert "\x00" not in data["text/plain"]
    # The median bar of the region, under its escaped name: displayable as it is.
    assert "a\\x00b&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "jp-nsightLab-Static-medians" in page
