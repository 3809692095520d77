"""The fixture sessions' charts drawn with matplotlib (no kaleido/Chrome): readable.

Where plotly cannot export a PNG (the H200 GPU machine has no Chrome), the charts
are redrawn by :mod:`nsight_lab.figures.mpl_figure`. Every chart of every session of the
H200 fixture store is drawn that way here, and what was drawn is measured: no two
texts overlap (titles, panel names, axis titles, tick labels, legend entries, bar
labels), the legend covers no panel, and each counters panel's region name sits
just above its own panel.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from nsight_lab.figures import mpl_figure
from nsight_lab.store.run_store import RunStore
from nsight_lab.viewmodel import session_view

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.text import Text

pytest.importorskip("matplotlib", reason="the fallback renderer is matplotlib")
go = pytest.importorskip("plotly.graph_objects", reason="the figures are plotly's")

FIXTURE = Path(__file__).parents[1] / "fixtures" / "h200_block.sqlite"
CHARTS = [
    (sid, name)
    for sid in range(1, 7)
    for name in ("duration", "clocks", "roofline", "traffic", "counters")
    if name != "counters" or sid == 4  # session 4 is the pm one, with series
]


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[int, str], Any]:
    path = tmp_path_factory.mktemp("fixture") / "store.sqlite"
    shutil.copyfile(FIXTURE, path)  # a copy: the fixture is never written to
    out: dict[tuple[int, str], Any] = {}
    with RunStore(path) as store:
        for sid in range(1, 7):
            for name, fig in session_view(store, sid)["figures"].items():
                if fig is not None:
                    out[sid, name] = go.Figure(fig)
    return out


def _drawn_texts(figure: Figure, monkeypatch: pytest.MonkeyPatch) -> list[Text]:
    """The texts matplotlib actually draws (a tick out of view is not drawn)."""
    from matplotlib.text import Text

    drawn: list[Text] = []
    real = Text.draw

    def record(self: Text, renderer: Any) -> None:
        if self.get_visible() and self.get_text().strip() and self.get_alpha() != 0:
            drawn.append(self)
        real(self, renderer)

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    with monkeypatch.context() as patch:
        patch.setattr(Text, "draw", record)
        FigureCanvasAgg(figure).draw()  # the canvas savefig draws the PNG on
    return drawn


@pytest.mark.parametrize(("sid", "name"), CHARTS, ids=[f"s{s}-{n}" for s, n in CHARTS])
def test_fixture_chart_has_no_overlapping_text(
    figures: dict[tuple[int, str], Any],
    monkeypatch: pytest.MonkeyPatch,
    sid: int,
    name: str,
) -> None:
    figure = mpl_figure.draw(figures[sid, name])
    texts = _drawn_texts(figure, monkeypatch)
    assert len(texts) >= 4  # a title and axis titles at least
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]  # the Agg canvas's
    boxes = [(t.get_text(), t.get_window_extent(renderer).padded(-0.5)) for t in texts]
    overlapping = [
        (a, b) for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2)
        if box_a.overlaps(box_b)
    ]  # fmt: skip
    assert overlapping == []
    legends = [*figure.legends, *(ax.get_legend() for ax in figure.axes)]
    for legend in filter(None, legends):
        box = legend.get_window_extent(renderer)
        assert not any(box.overlaps(ax.bbox) for ax in figure.axes), name
    whole = figure.bbox
    for text, box in boxes:  # nothing drawn off the canvas (cut off in the PNG)
        assert whole.x0 - 1 <= box.x0, text
        assert box.x1 <= whole.x1 + 1, text
        assert whole.y0 - 1 <= box.y0, text
        assert box.y1 <= whole.y1 + 1, text


def test_counters_region_names_sit_on_their_panels(
    figures: dict[tuple[int, str], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    fig = figures[4, "counters"]
    names = [
        mpl_figure.plain(note.hovertext or note.text) for note in fig.layout.annotations
    ]
    figure = mpl_figure.draw(fig)
    texts = {t.get_text().strip(): t for t in _drawn_texts(figure, monkeypatch)}
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]  # the Agg canvas's
    panels = [ax for ax in figure.axes if ax.get_title(loc="left")]
    assert len(panels) == len(names) == 12
    for ax in panels:
        region = ax.get_title(loc="left").split(" ", 1)[1]  # after the region's sign
        assert region in names
        box = texts[region].get_window_extent(renderer)
        # over the panel's left part, and no further than a line above its top
        assert ax.bbox.x0 - 1 <= box.x0 < ax.bbox.x0 + ax.bbox.width / 2, region
        assert ax.bbox.y1 - 1 <= box.y0 <= ax.bbox.y1 + 12, region
    # the legend below every panel, the title above every one
    (legend,) = figure.legends
    assert legend.get_window_extent(renderer).y1 <= min(ax.bbox.y0 for ax in panels)
    title = figure.get_suptitle()
    assert title.startswith("Counters over time")
    top = figure._suptitle.get_window_extent(renderer)  # type: ignore[union-attr]  # noqa: SLF001
    assert top.y0 >= max(
        texts[region].get_window_extent(renderer).y1 for region in names
    )


def test_single_panel_legend_stays_inside_where_plotly_has_it_inside() -> None:
    fig = go.Figure(
        [
            go.Scatter(x=[1, 2], y=[1, 2], name="a"),
            go.Scatter(x=[1, 2], y=[2, 1], name="b"),
        ]
    )
    figure = mpl_figure.draw(fig)
    (ax,) = figure.axes
    assert ax.get_legend() is not None  # as before: on the panel, where it covers least
    assert figure.legends == []
