"""A plotly figure redrawn with matplotlib: the PNG when kaleido cannot export one.

plotly's static export needs kaleido and a headless Chrome, which many GPU servers
lack; matplotlib needs neither and is on every machine that ran nsight-python (it
draws nsight-python's plots). :func:`draw` reads only the figure's data and layout --
it builds no figure of its own -- so the PNG shows what the interactive plotly
figure shows: the subplot grid (from the axes' domains), subplot titles and other
paper annotations placed at their panel (plotly's paper fractions are the plotting
area's, so they are taken relative to the nearest panel), the title, axis titles,
ranges and ticks, log and category axes (x or y), tick angles, shared and overlaid
y axes, line/marker/text scatter traces with plotly's marker symbols, CI bands,
grouped, stacked and horizontal bars, error bars, vertical and horizontal reference
lines, and the legend (below the panels where plotly puts it below or the figure
has several panels). A trace type it cannot draw raises :class:`UnsupportedFigureError`
rather than leaving it out of the picture.

The groundwork (panels, values) is :mod:`~nsight_lab.figures.mpl_base`, the traces
:mod:`~nsight_lab.figures.mpl_traces`, shapes, annotations and the legend
:mod:`~nsight_lab.figures.mpl_notes`; this module draws a figure with them.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsight_lab.figures.mpl_base import (
    PX_PER_INCH,
    Panel,
    UnsupportedFigureError,
    axis_domain,
    axis_of,
    axis_pairs,
    colour,
    figure_layout,
    overlaid_on,
    panel_grid,
    plain,
    set_categories,
    trace_panel,
)
from nsight_lab.figures.mpl_notes import draw_annotations, draw_legend, draw_shapes
from nsight_lab.figures.mpl_traces import draw_bar, draw_scatter

if TYPE_CHECKING:
    import os

    import plotly.graph_objects as go
    from matplotlib.figure import Figure

__all__ = [
    "PX_PER_INCH",
    "UnsupportedFigureError",
    "available",
    "colour",
    "draw",
    "plain",
    "save_png",
    "write_png",
]


def available() -> bool:
    """Whether matplotlib can be imported here (and its figure module loads)."""
    try:
        import matplotlib.figure  # noqa: F401, PLC0415  (optional: imported to see that it loads)
    except ImportError:
        return False
    return True


def draw(fig: go.Figure) -> Figure:
    """``fig`` drawn with matplotlib (nothing saved; the figure is not shown).

    Raises:
        UnsupportedFigureError: A trace is neither a scatter nor a bar trace.
    """
    for trace in fig.data:
        if trace.type not in {"scatter", "scattergl", "bar"}:
            msg = (
                f"the matplotlib renderer draws scatter and bar traces, not "
                f"{trace.type!r} (trace {trace.name!r})"
            )
            raise UnsupportedFigureError(msg)
    layout = figure_layout(fig)
    figure, panels = _panels(fig, layout)
    handles: dict[str, Any] = {}
    for index, trace in enumerate(fig.data):
        panel = trace_panel(panels, trace)
        artist = (
            draw_bar(trace, index, panel, layout)
            if trace.type == "bar"
            else draw_scatter(trace, panel, layout)
        )
        label = plain(trace.name)
        if label and trace.showlegend is not False and label not in handles:
            handles[label] = artist
    draw_shapes(layout, panels)
    for panel in panels.values():
        _decorate(panel, layout)
    draw_annotations(figure, layout, panels)
    _missing(layout, panels)
    draw_legend(figure, layout, handles, panels)
    title = plain((layout.get("title") or {}).get("text"))
    if title:
        figure.suptitle(title, fontsize=14, fontweight="bold")
    return figure


def _missing(layout: dict[str, Any], panels: dict[tuple[str, str], Panel]) -> None:
    """A chart with nothing to draw says why (``layout.meta.missing``) in its panel."""
    meta = layout.get("meta")
    why = meta.get("missing") if isinstance(meta, dict) else None
    if not why:
        return

    first = next(iter(panels.values())).ax
    first.set_xticks([])
    first.set_yticks([])
    first.text(
        0.5,
        0.5,
        textwrap.fill(plain(why), 70),
        transform=first.transAxes,
        ha="center",
        va="center",
        fontsize=10,
        color="0.35",
    )


def _panels(
    fig: go.Figure, layout: dict[str, Any]
) -> tuple[Figure, dict[tuple[str, str], Panel]]:
    """The matplotlib figure, its grid of axes, and the panel of each x/y pair."""
    from matplotlib.figure import Figure  # noqa: PLC0415  (matplotlib is optional)

    pairs = axis_pairs(fig, layout)
    grid_pairs = [(x, y) for x, y in pairs if overlaid_on(layout, y) is None]
    columns, rows = panel_grid(layout, grid_pairs or pairs)
    width = float(layout.get("width") or 800) / PX_PER_INCH
    height = float(layout.get("height") or 600) / PX_PER_INCH
    figure = Figure(figsize=(width, height), layout="constrained")
    axes = figure.subplots(len(rows), len(columns), squeeze=False)
    panels: dict[tuple[str, str], Panel] = {}
    for x, y in grid_pairs or pairs:
        r = rows.index(axis_domain(axis_of(layout, y)))
        c = columns.index(axis_domain(axis_of(layout, x)))
        panels[x, y] = Panel(x=x, y=y, ax=axes[r][c])
    for x, y in pairs:
        under = overlaid_on(layout, y)
        base = next((p for p in panels.values() if p.y == under), None)
        if (x, y) not in panels and base is not None:
            panels[x, y] = Panel(x=x, y=y, ax=base.ax.twinx(), twin=True)
    by_x = {panel.x: panel for panel in panels.values() if not panel.twin}
    by_y = {panel.y: panel for panel in panels.values()}
    for panel in panels.values():
        # plotly's shared axes (make_subplots' shared_yaxes/shared_xaxes): one range
        shared_x = by_x.get(str(axis_of(layout, panel.x).get("matches")))
        shared_y = by_y.get(str(axis_of(layout, panel.y).get("matches")))
        if shared_x is not None and shared_x is not panel and not panel.twin:
            panel.ax.sharex(shared_x.ax)
        if shared_y is not None and shared_y is not panel:
            panel.ax.sharey(shared_y.ax)
    for index, trace in enumerate(fig.data):
        if trace.type == "bar":
            trace_panel(panels, trace).bars.append(index)
    for panel in panels.values():
        set_categories(fig, layout, panel)
    return figure, panels


def _limits(axis: dict[str, Any]) -> tuple[float, float] | None:
    """The axis's ``range`` in data units (a log axis's is in powers of ten)."""
    span = axis.get("range")
    if not span or len(span) != 2 or None in span:  # noqa: PLR2004  (a pair)
        return None
    low, high = float(span[0]), float(span[1])
    if axis.get("type") == "log":
        return 10**low, 10**high
    return low, high


def _tick_format(which: Any, axis: dict[str, Any], fixed: bool) -> None:  # noqa: ANN401, FBT001
    """Plotly's tick settings on a numeric axis, and no matplotlib offset text.

    Ticks ``dtick`` apart, or ``nticks`` at most; ``~s`` (SI prefixes) with
    ``ticksuffix``; never matplotlib's "1e9" offset text (it would sit on the
    panel's title): large numbers get SI prefixes instead.
    """
    from matplotlib.ticker import (  # noqa: PLC0415  (matplotlib is optional)
        EngFormatter,
        MaxNLocator,
        MultipleLocator,
        ScalarFormatter,
    )

    if fixed or axis.get("type") in {"log", "category"}:
        return
    if isinstance(axis.get("dtick"), (int, float)) and axis.get("tick0") in {None, 0}:
        which.set_major_locator(MultipleLocator(float(axis["dtick"])))
    elif axis.get("nticks"):
        which.set_major_locator(MaxNLocator(nbins=int(axis["nticks"])))
    low, high = which.get_view_interval()
    big = max(abs(low), abs(high)) >= 1e5  # noqa: PLR2004  (where "1e5" would show)
    if axis.get("tickformat") == "~s" or big:
        which.set_major_formatter(
            EngFormatter(unit=str(axis.get("ticksuffix") or ""), sep="")
        )
    elif isinstance(which.get_major_formatter(), ScalarFormatter):
        which.get_major_formatter().set_useOffset(False)


def _decorate(panel: Panel, layout: dict[str, Any]) -> None:  # noqa: C901, PLR0912  (one line per plotly axis setting)
    """Axis titles, scales, ranges, ticks, tick angles, shared and zero-based y."""
    ax = panel.ax
    x_axis, y_axis = axis_of(layout, panel.x), axis_of(layout, panel.y)
    if not panel.twin:
        ax.set_xlabel(plain((x_axis.get("title") or {}).get("text")))
    ax.set_ylabel(plain((y_axis.get("title") or {}).get("text")))
    for letter, axis in (("x", x_axis), ("y", y_axis)):
        if panel.twin and letter == "x":
            continue
        if axis.get("type") == "log":
            getattr(ax, f"set_{letter}scale")("log")
        limits = _limits(axis)
        if limits is not None:
            getattr(ax, f"set_{letter}lim")(*limits)
        vals, text = axis.get("tickvals"), axis.get("ticktext")
        if vals and text and len(vals) == len(text):
            getattr(ax, f"set_{letter}ticks")(
                [float(v) for v in vals], [plain(t) for t in text]
            )
            if axis.get("type") == "log":
                getattr(ax, f"{letter}axis").set_minor_formatter("")
        if axis.get("autorange") == "reversed":
            getattr(ax, f"invert_{letter}axis")()
        _tick_format(getattr(ax, f"{letter}axis"), axis, bool(vals and text))
    if panel.categories:
        ax.set_xticks(range(len(panel.categories)))
        angle = x_axis.get("tickangle")
        ax.set_xticklabels(
            [plain(c) for c in panel.categories],
            rotation=-float(angle) if angle else 0,
            ha="right" if angle and float(angle) < 0 else "center",
            fontsize=9,
        )
    elif x_axis.get("tickangle"):
        ax.tick_params(axis="x", labelrotation=-float(x_axis["tickangle"]))
    if panel.y_categories:
        ax.set_yticks(
            range(len(panel.y_categories)),
            [plain(c) for c in panel.y_categories],
            fontsize=9,
        )
    if y_axis.get("rangemode") == "tozero" and y_axis.get("type") != "log":
        ax.set_ylim(bottom=0)
    if y_axis.get("showticklabels") is False:
        ax.tick_params(axis="y", labelleft=False)
    if panel.twin:
        return
    ax.grid(visible=True, linestyle="--", alpha=0.7)
    ax.set_axisbelow(True)


def write_png(
    fig: go.Figure, path: str | os.PathLike[str], *, scale: float = 1.0
) -> Path:
    """Write ``fig`` drawn with matplotlib as a PNG at ``path``.

    ``scale`` is the pixel density, as plotly's: ``width`` x ``scale`` pixels wide.

    Raises:
        UnsupportedFigureError: A trace type this renderer does not draw.
        OSError: The file cannot be written.
    """
    return save_png(draw(fig), path, scale=scale)


def save_png(
    figure: Figure, path: str | os.PathLike[str], *, scale: float = 1.0
) -> Path:
    """Write a matplotlib ``figure`` (:func:`draw`'s, perhaps restyled) as a PNG.

    Raises:
        OSError: The file cannot be written.
    """
    out = Path(path)
    figure.savefig(
        out,
        format="png",
        dpi=PX_PER_INCH * scale,
        facecolor="white",
        bbox_inches="tight",
    )
    return out
