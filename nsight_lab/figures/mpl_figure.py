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
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import os

    import plotly.graph_objects as go
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["UnsupportedFigureError", "available", "draw", "write_png"]

PX_PER_INCH = 100
"""Figure pixels per inch: plotly's ``width``/``height`` become inches at this rate."""
_DASHES = {"dash": "--", "dot": ":", "dashdot": "-.", "longdash": "--", "solid": "-"}
_AXIS_KEY = re.compile(r"^xaxis(\d*)$")


class UnsupportedFigureError(ValueError):
    """The figure has a trace type this renderer does not draw."""


def available() -> bool:
    """Whether matplotlib can be imported here (and its figure module loads)."""
    try:
        import matplotlib.figure  # noqa: F401  (imported to see that it loads)
    except ImportError:
        return False
    return True


def plain(text: object) -> str:
    """Plotly label text as plain text: ``<br>`` a new line, other tags dropped."""
    if text is None:
        return ""
    lines = re.sub(r"<br\s*/?>", "\n", str(text), flags=re.IGNORECASE)
    return html.unescape(re.sub(r"<[^>]+>", "", lines))


def colour(value: object) -> Any:  # noqa: ANN401  (a matplotlib colour spec)
    """A CSS colour (hex, name, ``rgb()``/``rgba()``) for matplotlib; else None."""
    if not isinstance(value, str):
        return None
    match = re.fullmatch(r"\s*rgba?\(([^)]*)\)\s*", value)
    if match:
        parts = [float(p) for p in match.group(1).split(",")]
        rgb = tuple(p / 255 for p in parts[:3])
        return (*rgb, parts[3]) if len(parts) > 3 else rgb  # noqa: PLR2004  (rgba)
    from matplotlib.colors import is_color_like

    return value if is_color_like(value) else None


@dataclass
class _Panel:
    """One plotly x/y axis pair and the matplotlib axes drawing it."""

    x: str
    y: str
    ax: Axes
    twin: bool = False
    """Whether this panel's y axis overlays another's (plotly's ``overlaying``)."""
    categories: list[str] = field(default_factory=list)
    """The x axis's categories, in order (empty: not a category axis)."""
    y_categories: list[str] = field(default_factory=list)
    last: tuple[list[float], list[float]] | None = None
    """The x and y values of the last scatter trace drawn here (``fill: tonexty``)."""
    bars: list[int] = field(default_factory=list)
    """Indices (into the figure's data) of the bar traces on this panel, in order."""

    def position(self, value: object, letter: str = "x") -> float:
        """Where ``value`` sits on the x (or y) category axis (adding it if new)."""
        found = self.categories if letter == "x" else self.y_categories
        label = str(value)
        if label not in found:
            found.append(label)
        return float(found.index(label))


def _layout(fig: go.Figure) -> dict[str, Any]:
    layout: dict[str, Any] = fig.layout.to_plotly_json()
    return layout


def _axis(layout: dict[str, Any], name: str) -> dict[str, Any]:
    """The layout entry of axis ``x``/``x2``/``y3``... (empty when not set)."""
    key = f"{name[0]}axis{name[1:]}"
    found: dict[str, Any] = layout.get(key) or {}
    return found


def _axis_pairs(fig: go.Figure, layout: dict[str, Any]) -> list[tuple[str, str]]:
    """Every x/y pair: each x axis with its anchor, then any only a trace names."""
    pairs: list[tuple[str, str]] = []
    for key, axis in layout.items():
        match = _AXIS_KEY.match(key)
        if match:
            anchor = str(axis.get("anchor") or f"y{match.group(1)}")
            pairs.append((f"x{match.group(1)}", anchor))
    for trace in fig.data:
        pair = (str(trace.xaxis or "x"), str(trace.yaxis or "y"))
        if pair not in pairs:
            pairs.append(pair)
    return pairs or [("x", "y")]


def _domain(axis: dict[str, Any]) -> tuple[float, float]:
    low, high = axis.get("domain") or (0.0, 1.0)
    return round(float(low), 6), round(float(high), 6)


def _grid(
    layout: dict[str, Any], pairs: list[tuple[str, str]]
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """The grid's column (x) and row (y, top first) domains."""
    columns = sorted({_domain(_axis(layout, x)) for x, _ in pairs})
    rows = sorted({_domain(_axis(layout, y)) for _, y in pairs}, reverse=True)
    return columns, rows


def _overlaid(layout: dict[str, Any], y: str) -> str | None:
    """The y axis that ``y`` is drawn over (a second y axis at the right), if any."""
    over = _axis(layout, y).get("overlaying")
    return str(over) if over and over != "free" else None


def _trace_panel(panels: dict[tuple[str, str], _Panel], trace: Any) -> _Panel:  # noqa: ANN401
    """The panel a trace is drawn on: its x/y pair, else the panel of its x axis."""
    x, y = str(trace.xaxis or "x"), str(trace.yaxis or "y")
    return panels.get((x, y)) or next(p for p in panels.values() if p.x == x)


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
    layout = _layout(fig)
    figure, panels = _panels(fig, layout)
    handles: dict[str, Any] = {}
    for index, trace in enumerate(fig.data):
        panel = _trace_panel(panels, trace)
        artist = (
            _bar(trace, index, panel, layout)
            if trace.type == "bar"
            else _scatter(trace, panel, layout)
        )
        label = plain(trace.name)
        if label and trace.showlegend is not False and label not in handles:
            handles[label] = artist
    _shapes(layout, panels)
    for panel in panels.values():
        _decorate(panel, layout)
    _annotations(figure, layout, panels)
    _missing(layout, panels)
    _legend(figure, layout, handles, panels)
    title = plain((layout.get("title") or {}).get("text"))
    if title:
        figure.suptitle(title, fontsize=14, fontweight="bold")
    return figure


def _missing(layout: dict[str, Any], panels: dict[tuple[str, str], _Panel]) -> None:
    """A chart with nothing to draw says why (``layout.meta.missing``) in its panel."""
    meta = layout.get("meta")
    why = meta.get("missing") if isinstance(meta, dict) else None
    if not why:
        return
    import textwrap

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
) -> tuple[Figure, dict[tuple[str, str], _Panel]]:
    """The matplotlib figure, its grid of axes, and the panel of each x/y pair."""
    from matplotlib.figure import Figure

    pairs = _axis_pairs(fig, layout)
    grid_pairs = [(x, y) for x, y in pairs if _overlaid(layout, y) is None]
    columns, rows = _grid(layout, grid_pairs or pairs)
    width = float(layout.get("width") or 800) / PX_PER_INCH
    height = float(layout.get("height") or 600) / PX_PER_INCH
    figure = Figure(figsize=(width, height), layout="constrained")
    axes = figure.subplots(len(rows), len(columns), squeeze=False)
    panels: dict[tuple[str, str], _Panel] = {}
    for x, y in grid_pairs or pairs:
        r = rows.index(_domain(_axis(layout, y)))
        c = columns.index(_domain(_axis(layout, x)))
        panels[x, y] = _Panel(x=x, y=y, ax=axes[r][c])
    for x, y in pairs:
        under = _overlaid(layout, y)
        base = next((p for p in panels.values() if p.y == under), None)
        if (x, y) not in panels and base is not None:
            panels[x, y] = _Panel(x=x, y=y, ax=base.ax.twinx(), twin=True)
    by_x = {panel.x: panel for panel in panels.values() if not panel.twin}
    by_y = {panel.y: panel for panel in panels.values()}
    for panel in panels.values():
        # plotly's shared axes (make_subplots' shared_yaxes/shared_xaxes): one range
        shared_x = by_x.get(str(_axis(layout, panel.x).get("matches")))
        shared_y = by_y.get(str(_axis(layout, panel.y).get("matches")))
        if shared_x is not None and shared_x is not panel and not panel.twin:
            panel.ax.sharex(shared_x.ax)
        if shared_y is not None and shared_y is not panel:
            panel.ax.sharey(shared_y.ax)
    for index, trace in enumerate(fig.data):
        if trace.type == "bar":
            _trace_panel(panels, trace).bars.append(index)
    for panel in panels.values():
        _categories(fig, layout, panel)
    return figure, panels


_SYMBOLS = {
    "circle": "o",
    "square": "s",
    "diamond": "D",
    "triangle-up": "^",
    "triangle-down": "v",
    "triangle-left": "<",
    "triangle-right": ">",
    "star": "*",
    "hexagon": "h",
    "hexagon2": "H",
    "pentagon": "p",
    "cross": "P",
    "x": "X",
}
_SPAN = re.compile(
    r'<span style="color:\s*([^";]+)[^"]*">(.*?)</span>', flags=re.IGNORECASE
)


def _is_category(values: Any, axis: dict[str, Any]) -> bool:  # noqa: ANN401
    if axis.get("type") == "category":
        return True
    if axis.get("type") in {"linear", "log", "date"}:
        return False
    return any(isinstance(v, str) for v in values or ())


def _categories(fig: go.Figure, layout: dict[str, Any], panel: _Panel) -> None:
    """The panel's category orders: the axis's ``categoryarray``, then first seen."""
    for letter, name in (("x", panel.x), ("y", panel.y)):
        axis = _axis(layout, name)
        found = panel.categories if letter == "x" else panel.y_categories
        if axis.get("categoryorder") == "array":
            found.extend(str(v) for v in axis.get("categoryarray") or ())
        for trace in fig.data:
            if (str(trace.xaxis or "x"), str(trace.yaxis or "y"))[
                letter == "y"
            ] == name and _is_category(trace[letter], axis):
                for value in trace[letter] or ():
                    panel.position(value, letter)


def _values(
    trace: Any,  # noqa: ANN401
    letter: str,
    panel: _Panel,
    layout: dict[str, Any],
) -> list[float]:
    """A trace's x (or y) values as numbers: category positions, None as NaN."""
    other = "y" if letter == "x" else "x"
    raw = trace[letter]
    values = list(raw) if raw is not None else list(range(len(trace[other] or ())))
    axis = _axis(layout, panel.x if letter == "x" else panel.y)
    if _is_category(values, axis):
        return [panel.position(v, letter) for v in values]
    return [math.nan if v is None else float(v) for v in values]


def _errors(error: Any, size: int) -> Any:  # noqa: ANN401  (plotly ErrorY -> yerr)
    """Plotly's ``error_y``/``error_x`` (``data`` type) as matplotlib's ``yerr``."""
    if error is None or error.visible is False or error.array is None:
        return None
    if error.type not in {None, "data"}:
        return None
    plus = [float(v) for v in error.array][:size]
    minus = (
        [float(v) for v in error.arrayminus][:size]
        if error.symmetric is False and error.arrayminus is not None
        else plus
    )
    return [minus, plus]


def _trace_colour(trace: Any) -> Any:  # noqa: ANN401
    marker = colour(trace.marker.color) if trace.marker is not None else None
    found = marker if not isinstance(marker, list) else None
    if found is None and getattr(trace, "line", None) is not None:
        found = colour(trace.line.color)
    return found


def _marker(symbol: object) -> tuple[str, bool]:
    """A plotly marker symbol as (matplotlib marker, open)."""
    name = str(symbol or "circle")
    base = name.removesuffix("-open").removesuffix("-dot")
    return _SYMBOLS.get(base, "o"), name.endswith("-open")


def _marker_size(trace: Any) -> float | None:  # noqa: ANN401
    """Plotly's marker diameter (px) as matplotlib's ``markersize`` (points)."""
    size = trace.marker.size if trace.marker is not None else None
    if isinstance(size, (list, tuple)):
        size = size[0] if size else None
    return None if size is None else float(size) * 72 / PX_PER_INCH


def _scatter(trace: Any, panel: _Panel, layout: dict[str, Any]) -> Any:  # noqa: ANN401, C901  (one branch per plotly scatter setting)
    xs = _values(trace, "x", panel, layout)
    ys = _values(trace, "y", panel, layout)
    mode = str(trace.mode or ("lines+markers" if len(ys) < 20 else "lines"))  # noqa: PLR2004  (plotly's default)
    symbols = trace.marker.symbol if trace.marker is not None else None
    points = list(symbols) if isinstance(symbols, (list, tuple)) else None
    marker, hollow = _marker(points[0] if points else symbols)
    tint = _trace_colour(trace)
    style: dict[str, Any] = {
        "color": tint,
        "linestyle": _DASHES.get(str(trace.line.dash), "-")
        if "lines" in mode
        else "none",
        "marker": marker if "markers" in mode else None,
        "label": plain(trace.name),
    }
    if "markers" in mode:
        size = _marker_size(trace)
        if size is not None:
            style["markersize"] = size
        if hollow:
            style["fillstyle"] = "none"
    if trace.line.width is not None:
        style["linewidth"] = float(trace.line.width)
    if "lines" not in mode and "markers" not in mode:
        style["linestyle"] = "none"
    yerr = _errors(trace.error_y, len(ys))
    xerr = _errors(trace.error_x, len(xs))
    if yerr is not None or xerr is not None:
        container = panel.ax.errorbar(xs, ys, yerr=yerr, xerr=xerr, capsize=3, **style)
        artist: Any = container.lines[0]
    else:
        (artist,) = panel.ax.plot(xs, ys, **style)
    if points and "markers" in mode:
        # per-point symbols (an open one: a throttled run): drawn over the line's
        for x, y, symbol in zip(xs, ys, points, strict=False):
            shape, open_ = _marker(symbol)
            if (shape, open_) != (marker, hollow):
                panel.ax.plot(
                    [x],
                    [y],
                    marker=shape,
                    color=tint,
                    markerfacecolor="white" if open_ else tint,
                    markersize=style.get("markersize", 6),
                    linestyle="none",
                )
    below, panel.last = panel.last, (xs, ys)
    fills = getattr(trace, "fill", None) == "tonexty"
    if fills and below is not None and below[0] == xs:  # to the previous line
        panel.ax.fill_between(
            xs,
            below[1],
            ys,
            color=colour(trace.fillcolor) or tint,
            linewidth=0,
        )
    if "text" in mode:
        _texts(panel.ax, xs, ys, trace.text, tint, str(trace.textposition or ""))
    return artist


def _bar(trace: Any, index: int, panel: _Panel, layout: dict[str, Any]) -> Any:  # noqa: ANN401
    xs = _values(trace, "x", panel, layout)
    ys = _values(trace, "y", panel, layout)
    across = trace.orientation == "h"
    places, lengths = (ys, xs) if across else (xs, ys)
    mode = layout.get("barmode", "group")
    grouped = mode == "group"
    slots = len(panel.bars) if grouped else 1
    slot = panel.bars.index(index) if grouped else 0
    width = 0.8 / slots
    at = [v + (slot - (slots - 1) / 2) * width for v in places]
    bases = [0.0] * len(at)
    if mode in {"stack", "relative"}:
        # on the bars the traces before this one drew at the same places
        bases = _stacked(panel, at, across)
    yerr = _errors(trace.error_y, len(ys))
    common: dict[str, Any] = {
        "color": _trace_colour(trace),
        "label": plain(trace.name),
    }
    if across:
        artist = panel.ax.barh(at, lengths, height=width, left=bases, **common)
    else:
        artist = panel.ax.bar(
            at,
            lengths,
            width=width,
            bottom=bases,
            yerr=yerr,
            capsize=3 if yerr is not None else 0,
            **common,
        )
    if trace.text is not None:
        _texts(panel.ax, at, lengths, trace.text, _trace_colour(trace), "")
    return artist


def _stacked(panel: _Panel, at: list[float], across: bool) -> list[float]:  # noqa: FBT001
    """Where each new stacked bar starts: the ends of the bars already at its place."""
    from matplotlib.patches import Rectangle

    ends = dict.fromkeys(at, 0.0)
    for patch in panel.ax.patches:
        if not isinstance(patch, Rectangle):
            continue
        place = (
            patch.get_y() + patch.get_height() / 2
            if across
            else patch.get_x() + patch.get_width() / 2
        )
        for key in ends:
            if math.isclose(key, place, abs_tol=1e-6):
                ends[key] += patch.get_width() if across else patch.get_height()
    return [ends[key] for key in at]


def _texts(  # noqa: PLR0913, PLR0917  (the points, their labels, and where)
    ax: Axes,
    xs: list[float],
    ys: list[float],
    texts: Any,  # noqa: ANN401  (a string or a sequence of them)
    tint: Any,  # noqa: ANN401
    position: str,
) -> None:
    """Each point's text beside it (plotly's ``textposition``; default above)."""
    labels = [texts] * len(xs) if isinstance(texts, str) else list(texts or ())
    vertical, _, horizontal = position.partition(" ")
    offset = {"left": (-4, 0), "right": (4, 0)}.get(horizontal, (0, 4))
    if vertical == "bottom":
        offset = (offset[0], -4)
    elif vertical == "middle":
        offset = (offset[0], 0)
    ha = {"left": "right", "right": "left"}.get(horizontal, "center")
    va = {"bottom": "top", "middle": "center"}.get(vertical, "bottom")
    for x, y, label in zip(xs, ys, labels, strict=False):
        if label is None or math.isnan(y) or math.isnan(x):
            continue
        ax.annotate(
            plain(label),
            (x, y),
            xytext=offset,
            textcoords="offset points",
            ha=ha,
            va=va,
            fontsize=8,
            color=tint,
        )


def _axis_ref(ref: str) -> tuple[str, bool]:
    """A shape's ``xref``/``yref`` as (axis name, in the axis's domain fraction)."""
    name, _, domain = ref.partition(" ")
    return name, domain == "domain"


def _shapes(layout: dict[str, Any], panels: dict[tuple[str, str], _Panel]) -> None:
    """Reference lines (``add_vline``/``add_hline``); other shapes are left out."""
    for shape in layout.get("shapes") or ():
        if shape.get("type") != "line":
            continue
        xref, x_domain = _axis_ref(str(shape.get("xref") or "x"))
        yref, y_domain = _axis_ref(str(shape.get("yref") or "y"))
        panel = next((p for p in panels.values() if p.x == xref), None) or next(
            (p for p in panels.values() if p.y == yref), None
        )
        if panel is None:
            continue
        line = shape.get("line") or {}
        style: dict[str, Any] = {
            "color": colour(line.get("color")) or "black",
            "linestyle": _DASHES.get(str(line.get("dash")), "-"),
            "linewidth": float(line.get("width") or 1),
        }
        if y_domain and shape.get("x0") == shape.get("x1"):
            panel.ax.axvline(float(shape["x0"]), **style)
        elif x_domain and shape.get("y0") == shape.get("y1"):
            panel.ax.axhline(float(shape["y0"]), **style)
        else:
            panel.ax.plot(
                [float(shape["x0"]), float(shape["x1"])],
                [float(shape["y0"]), float(shape["y1"])],
                **style,
            )


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
    from matplotlib.ticker import (
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


def _decorate(panel: _Panel, layout: dict[str, Any]) -> None:  # noqa: C901, PLR0912  (one line per plotly axis setting)
    """Axis titles, scales, ranges, ticks, tick angles, shared and zero-based y."""
    ax = panel.ax
    x_axis, y_axis = _axis(layout, panel.x), _axis(layout, panel.y)
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


def _segments(text: object) -> list[tuple[str, Any]]:
    """Plotly label text as (plain text, colour or None) runs: its coloured spans."""
    raw = str(text or "")
    out: list[tuple[str, Any]] = []
    at = 0
    for match in _SPAN.finditer(raw):
        if match.start() > at:
            out.append((plain(raw[at : match.start()]), None))
        out.append((plain(match.group(2)), colour(match.group(1).strip())))
        at = match.end()
    if at < len(raw):
        out.append((plain(raw[at:]), None))
    return [(piece, tint) for piece, tint in out if piece]


def _annotations(
    figure: Figure, layout: dict[str, Any], panels: dict[tuple[str, str], _Panel]
) -> None:
    """Annotations at their place: over the panel they title, or in data units."""
    for note in layout.get("annotations") or ():
        text = plain(note.get("text"))
        if not text:
            continue
        xref, yref = str(note.get("xref") or "x"), str(note.get("yref") or "y")
        x, y = float(note.get("x") or 0), float(note.get("y") or 0)
        if xref == "paper" and yref == "paper":
            _paper_note(figure, layout, panels, note)
            continue
        panel = next((p for p in panels.values() if p.x == xref), None)
        if panel is None:
            continue
        # plotly places a log axis's annotation at the power of ten
        if _axis(layout, panel.x).get("type") == "log":
            x = 10**x
        if _axis(layout, panel.y).get("type") == "log":
            y = 10**y
        ha = str(note.get("xanchor") or "center")
        va = str(note.get("yanchor") or "middle")
        panel.ax.annotate(
            text,
            (x, y),
            xytext=(float(note.get("xshift") or 0), float(note.get("yshift") or 0)),
            textcoords="offset points",
            ha="center" if ha == "auto" else ha,
            va={"middle": "center", "auto": "center"}.get(va, va),
            fontsize=9,
        )


def _paper_note(
    figure: Figure,
    layout: dict[str, Any],
    panels: dict[tuple[str, str], _Panel],
    note: dict[str, Any],
) -> None:
    """A paper-placed annotation, at its place relative to the panels.

    A panel's title when it sits on a panel's top edge (plotly's subplot titles,
    left or centred), else at the same place relative to the nearest panel
    (plotly's paper coordinates are the plotting area's, not the figure's: the
    panels of the matplotlib figure are laid out anew, so the figure's fractions
    would put it elsewhere).
    """
    x, y = float(note.get("x") or 0), float(note.get("y") or 0)
    ha = str(note.get("xanchor") or "center")
    panel = _panel_titled(layout, panels, x, y, ha)
    if panel is not None:
        _panel_title(panel.ax, note.get("text"), ha)
        return
    nearest = min(
        (p for p in panels.values() if not p.twin),
        key=lambda p: _distance(layout, p, x, y),
    )
    (x0, x1), (y0, y1) = (
        _domain(_axis(layout, nearest.x)),
        _domain(_axis(layout, nearest.y)),
    )
    va = str(note.get("yanchor") or "bottom")
    nearest.ax.text(
        (x - x0) / ((x1 - x0) or 1),
        (y - y0) / ((y1 - y0) or 1),
        plain(note.get("text")),
        transform=nearest.ax.transAxes,
        ha="center" if ha == "auto" else ha,
        va={"middle": "center", "auto": "bottom"}.get(va, va),
        fontsize=10,
        clip_on=False,
    )
    del figure  # the note belongs to its panel: constrained layout makes room


def _distance(layout: dict[str, Any], panel: _Panel, x: float, y: float) -> float:
    """How far paper point (x, y) lies outside ``panel``'s domain (0: inside)."""
    (x0, x1), (y0, y1) = (
        _domain(_axis(layout, panel.x)),
        _domain(_axis(layout, panel.y)),
    )
    return math.hypot(max(x0 - x, 0, x - x1), max(y0 - y, 0, y - y1))


def _panel_titled(
    layout: dict[str, Any],
    panels: dict[tuple[str, str], _Panel],
    x: float,
    y: float,
    anchor: str,
) -> _Panel | None:
    """The panel whose top edge is at ``y`` with ``x`` at its left, centre or right."""
    for panel in panels.values():
        if panel.twin or panel.ax.get_title(loc="left") or panel.ax.get_title():
            continue
        (x0, x1), (_, y1) = (
            _domain(_axis(layout, panel.x)),
            _domain(_axis(layout, panel.y)),
        )
        edge = {"left": x0, "right": x1}.get(anchor, (x0 + x1) / 2)
        if math.isclose(edge, x, abs_tol=1e-3) and math.isclose(y1, y, abs_tol=2e-2):
            return panel
    return None


def _panel_title(ax: Axes, text: object, anchor: str) -> None:
    """``text`` as the panel's title, its coloured spans (a region's sign) in colour."""
    loc: Literal["left", "center", "right"] = (
        "left" if anchor == "left" else "right" if anchor == "right" else "center"
    )
    pieces = _segments(text)
    if len(pieces) < 2 or all(tint is None for _, tint in pieces):  # noqa: PLR2004
        ax.set_title(plain(text), loc=loc, fontsize=10)
        return
    # the whole title in place (layout and overlap checks see it), drawn invisible,
    # and its coloured runs laid over it one after another
    title = ax.set_title("".join(p for p, _ in pieces), loc=loc, fontsize=10)
    title.set_alpha(0)
    from matplotlib.offsetbox import AnchoredOffsetbox, HPacker, TextArea

    boxes: list[Artist] = [
        TextArea(piece, textprops={"color": tint or "black", "fontsize": 10})
        for piece, tint in pieces
    ]
    packed = HPacker(children=boxes, pad=0, sep=0, align="baseline")
    anchored = AnchoredOffsetbox(
        loc={"left": "lower left", "right": "lower right"}.get(loc, "lower center"),
        child=packed,
        pad=0,
        borderpad=0,
        frameon=False,
        bbox_to_anchor=(
            {"left": 0.0, "right": 1.0}.get(loc, 0.5),
            1.0,
        ),
        bbox_transform=ax.transAxes,
    )
    anchored.set_in_layout(False)
    anchored.set_gid("panel-title")
    ax.add_artist(anchored)


def _legend(
    figure: Figure,
    layout: dict[str, Any],
    handles: dict[str, Any],
    panels: dict[tuple[str, str], _Panel],
) -> None:
    """One legend, as plotly shows one for the figure.

    Below the panels, covering none, where plotly puts it below (``legend.y`` < 0)
    or the figure has several panels; else on the single panel where it covers
    least.
    """
    shown = layout.get("showlegend")
    if shown is False or not handles or (shown is None and len(handles) < 2):  # noqa: PLR2004
        return
    legend = layout.get("legend") or {}
    title = plain((legend.get("title") or {}).get("text")) or None
    grid = [p for p in panels.values() if not p.twin]
    below = len(grid) > 1 or float(legend.get("y", 1) or 0) < 0
    if not below:
        grid[0].ax.legend(
            list(handles.values()),
            list(handles),
            title=title,
            loc="best",
            fontsize=9,
            title_fontsize=10,
        )
        return
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(figure).get_renderer()  # type: ignore[no-untyped-call]
    for columns in range(min(len(handles), 6), 0, -1):
        # as many columns as fit the figure's width (measured, not guessed)
        placed = figure.legend(
            list(handles.values()),
            list(handles),
            title=title,
            loc="outside lower center",
            ncols=columns,
            fontsize=9,
            title_fontsize=10,
            frameon=False,
        )
        if (
            columns == 1
            or placed.get_window_extent(renderer).width <= figure.bbox.width
        ):
            return
        placed.remove()


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
