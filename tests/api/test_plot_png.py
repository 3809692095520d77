"""``analyze.plot``'s PNG where kaleido cannot export: drawn with matplotlib.

kaleido is installed in CI but Chrome may not be; each test makes kaleido fail as it
does without Chrome (``calc_fig_sync`` raising ``ChromeNotFoundError``, which plotly
turns into its RuntimeError), so the fallback runs whatever this machine has. The
PNG files are real (magic bytes, size, pixels read back with PIL); the matplotlib
figure that was saved is caught on its way to ``savefig`` and inspected.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import pytest

import nsight_lab as nsight
from nsight_lab.api import tools
from nsight_lab.figures import StaticExportError, mpl_figure

if TYPE_CHECKING:
    from pathlib import Path

    from matplotlib.figure import Figure

pytest.importorskip("matplotlib", reason="the fallback renderer is matplotlib")
PIL = pytest.importorskip("PIL.Image", reason="PIL reads the PNG back")
SILENT = nsight.VerbosityLevel.SILENT
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def _cpu() -> Any:
    nsight.use_backend("cpu")
    yield
    tools.reset()


@pytest.fixture
def no_chrome(monkeypatch: pytest.MonkeyPatch) -> None:
    """kaleido's export failing as it does on a machine without Chrome."""
    kaleido = pytest.importorskip("kaleido", reason="plotly's exporter")
    from kaleido.errors import ChromeNotFoundError

    def no_browser(*_args: object, **_kwargs: object) -> bytes:
        msg = "no Chrome here"
        raise ChromeNotFoundError(msg)

    monkeypatch.setattr(kaleido, "calc_fig_sync", no_browser)


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    """The matplotlib figures :func:`mpl_figure.write_png` saves, as it saves them."""
    figures: list[Figure] = []
    real = mpl_figure.draw

    def keep(fig: Any) -> Figure:
        figure = real(fig)
        figures.append(figure)
        return figure

    monkeypatch.setattr(mpl_figure, "draw", keep)
    return figures


def work(n: int) -> None:
    with nsight.annotate("sum"):
        sum(range(n))
    with nsight.annotate("sort"):
        sorted(range(n), reverse=True)


def _png(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 10_000  # a drawn chart, not an empty canvas
    with PIL.open(path) as image:
        image.load()
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
        assert colours is not None
        assert len(colours) > 20  # lines, text and anti-aliasing, not one fill
        return image.size


@pytest.fixture(params=["no Chrome", "no kaleido"])
def no_export(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """plotly's PNG export failing both ways a GPU server makes it fail."""
    if request.param == "no Chrome":
        request.getfixturevalue("no_chrome")
    else:  # as plotly decides it: the package is not importable
        import plotly.io._kaleido as plotly_kaleido

        monkeypatch.setattr(plotly_kaleido, "_KALEIDO_AVAILABLE", False)
    return str(request.param)


def test_line_plot_with_aggregates_is_drawn_with_matplotlib(
    tmp_path: Path,
    drawn: list[Figure],
    capsys: pytest.CaptureFixture[str],
    no_export: str,
) -> None:
    png = tmp_path / "line.png"

    @nsight.analyze.plot(
        str(png), title="Sum and sort", annotate_points=True, show_aggregate="avg"
    )
    @nsight.analyze.kernel(
        configs=[(1000,), (2000,), (4000,)], runs=2, verbosity=SILENT, warmup=0
    )
    def bench(n: int) -> None:
        work(n)

    result = bench()
    width, height = _png(png)
    assert width > 800  # 8 in at 100 px, scale 1.5, less the trimmed margins
    assert height > 500
    note = capsys.readouterr().out.strip().splitlines()
    assert len(note) == 1
    assert note[0].startswith(f"[nsight-lab] drew {str(png)!r} with matplotlib")
    why = "Chrome" if no_export == "no Chrome" else "requires the Kaleido package"
    assert why in note[0]  # why plotly's export could not
    (figure,) = drawn
    (ax,) = figure.axes
    # two regions' lines plus the dashed line before the aggregates
    assert len(ax.get_lines()) == 3
    assert ax.get_lines()[2].get_linestyle() == "--"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["sum", "sort"]
    assert ax.get_legend().get_title().get_text() == "Annotation"
    assert len(ax.patches) == 2  # one Avg bar per region
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == ["n=1000", "n=2000", "n=4000", "Avg"]
    assert ax.get_ylabel() == "gpu__time_duration.sum (avg: 2 runs)"
    assert ax.get_ylim()[0] == 0
    assert figure.get_suptitle().startswith("Sum and sort\n")
    values = [t.get_text() for t in ax.texts]
    assert len(values) == 3 * 2 + 2  # annotate_points, and the Avg bars' values
    # the same data as the interactive plotly figure, which stays the figure kept
    sum_trace = next(t for t in result.figure.data if t.name == "sum")
    assert list(ax.get_lines()[0].get_ydata()) == list(sum_trace.y)


@pytest.mark.usefixtures("no_chrome")
def test_subplot_grid_bars_and_variants(tmp_path: Path, drawn: list[Figure]) -> None:
    png = tmp_path / "grid.png"

    @nsight.analyze.plot(
        str(png),
        row_panels=["mode"],
        col_panels=["step"],
        plot_type="bar",
        variant_fields=["reverse"],
        variant_annotations=["sort"],
    )
    @nsight.analyze.kernel(
        configs=[
            (n, mode, step, reverse)
            for n in (200, 400)
            for mode in ("a", "b")
            for step in (1, 2)
            for reverse in (False, True)
        ],
        verbosity=SILENT,
        warmup=0,
    )
    def grid(n: int, mode: str, step: int, reverse: bool) -> None:  # noqa: FBT001, ARG001
        with nsight.annotate("sort"):
            sorted(range(0, n, step), reverse=reverse)

    grid()
    _png(png)
    (figure,) = drawn
    assert len(figure.axes) == 4
    rows = {round(ax.get_position().y0, 2) for ax in figure.axes}
    cols = {round(ax.get_position().x0, 2) for ax in figure.axes}
    assert (len(rows), len(cols)) == (2, 2)
    titles = sorted(ax.get_title() for ax in figure.axes)
    assert titles == [
        "mode=a\nstep=1", "mode=a\nstep=2", "mode=b\nstep=1", "mode=b\nstep=2"
    ]  # fmt: skip
    for ax in figure.axes:
        # two variants (reverse=False/True) x two sizes, grouped side by side
        assert len(ax.patches) == 4
        lefts = sorted({round(p.get_x(), 3) for p in ax.patches})
        assert len(lefts) == 4
        assert [t.get_text() for t in ax.get_xticklabels()] == ["n=200", "n=400"]
    top_left, top_right = sorted(
        (ax for ax in figure.axes if ax.get_title().startswith("mode=a")),
        key=lambda ax: ax.get_position().x0,
    )
    assert top_right.get_ylim() == top_left.get_ylim()  # plotly's shared y axes
    (legend,) = figure.legends  # below the panels, covering none of them
    assert [t.get_text() for t in legend.get_texts()] == [
        "sort reverse=False", "sort reverse=True"
    ]  # fmt: skip


def test_error_bars_log_axes_and_annotations(tmp_path: Path) -> None:
    import plotly.graph_objects as go

    fig = go.Figure(
        [
            go.Scatter(
                x=[1, 10, 100],
                y=[2.0, 20.0, 200.0],
                name="measured",
                mode="markers",
                error_y={"type": "data", "array": [0.5, 5.0, 50.0]},
            ),
            go.Scatter(x=[1, 100], y=[1.0, 100.0], name="model", line={"dash": "dot"}),
        ]
    )
    fig.update_layout(title="Scaling<br><sup>H200</sup>", width=700, height=400)
    fig.update_xaxes(type="log", title_text="elements")
    fig.update_yaxes(type="log", title_text="time (ns)")
    fig.add_hline(y=50, line_dash="dash")
    figure = mpl_figure.draw(fig)
    (ax,) = figure.axes
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("elements", "time (ns)")
    assert figure.get_suptitle() == "Scaling\nH200"
    (errors,) = ax.containers
    _, _, (bars,) = errors.lines  # the data line, the caps, the bars
    assert [round(s[1][1] - s[0][1], 6) for s in bars.get_segments()] == [
        1.0, 10.0, 100.0
    ]  # fmt: skip
    lines = ax.get_lines()
    styles = [line.get_linestyle() for line in lines]
    assert ":" in styles  # the dotted model
    assert "--" in styles  # the horizontal reference line
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["measured", "model"]
    out = mpl_figure.write_png(fig, tmp_path / "scaling.png")
    _png(out)


def test_a_trace_it_cannot_draw_is_refused() -> None:
    import plotly.graph_objects as go

    with pytest.raises(mpl_figure.UnsupportedFigureError, match="not 'heatmap'"):
        mpl_figure.draw(go.Figure(go.Heatmap(z=[[1, 2], [3, 4]])))


@pytest.mark.usefixtures("no_chrome")
def test_neither_kaleido_nor_matplotlib_is_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [m for m in sys.modules if m.split(".")[0] == "matplotlib"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails
    png = tmp_path / "none.png"

    @nsight.analyze.plot(str(png))
    @nsight.analyze.kernel(configs=[(100,)], verbosity=SILENT, warmup=0)
    def bench(n: int) -> None:
        work(n)

    with pytest.raises(StaticExportError, match=r"cannot write .* as PNG") as caught:
        bench()
    assert "\n" not in str(caught.value)
    assert "Chrome" in str(caught.value)
    assert not png.exists()
