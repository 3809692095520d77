"""Traces redrawn with matplotlib: scatter (lines, markers, text, CI bands) and bars.

plotly's marker symbols, sizes, dashes, error bars and stacked or horizontal bars,
as :mod:`nsight_lab.figures.mpl_figure` draws each trace on its panel.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from nsight_lab.figures.mpl_base import (
    DASHES,
    PX_PER_INCH,
    Panel,
    colour,
    plain,
    trace_values,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes


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
    "hourglass": "8",
    "bowtie": "H",
    "hexagram": "*",
    "circle-x": "X",
    "square-cross": "P",
    "star-diamond": "d",
    "diamond-tall": "d",
    "square-x": "X",
    "circle-cross": "P",
}


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


def draw_scatter(trace: Any, panel: Panel, layout: dict[str, Any]) -> Any:  # noqa: ANN401  (one branch per plotly scatter setting)
    """Draw a scatter trace on its panel; the artist its legend entry shows."""
    xs = trace_values(trace, "x", panel, layout)
    ys = trace_values(trace, "y", panel, layout)
    mode = str(trace.mode or ("lines+markers" if len(ys) < 20 else "lines"))  # noqa: PLR2004  (plotly's default)
    symbols = trace.marker.symbol if trace.marker is not None else None
    points = list(symbols) if isinstance(symbols, (list, tuple)) else None
    marker, hollow = _marker(points[0] if points else symbols)
    tint = _trace_colour(trace)
    style: dict[str, Any] = {
        "color": tint,
        "linestyle": DASHES.get(str(trace.line.dash), "-")
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
        _point_markers(panel, (xs, ys, points), (marker, hollow), tint, style)
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


def _point_markers(
    panel: Panel,
    points: tuple[Any, Any, list[Any]],
    common: tuple[str, bool],
    tint: Any,  # noqa: ANN401  (a matplotlib colour)
    style: dict[str, Any],
) -> None:
    """Per-point symbols (an open one: a throttled run), drawn over the line's."""
    for x, y, symbol in zip(*points, strict=False):
        shape, open_ = _marker(symbol)
        if (shape, open_) != common:
            panel.ax.plot(
                [x],
                [y],
                marker=shape,
                color=tint,
                markerfacecolor="white" if open_ else tint,
                markersize=style.get("markersize", 6),
                linestyle="none",
            )


def draw_bar(trace: Any, index: int, panel: Panel, layout: dict[str, Any]) -> Any:  # noqa: ANN401
    """Draw a bar trace (grouped, stacked or horizontal); its legend artist."""
    xs = trace_values(trace, "x", panel, layout)
    ys = trace_values(trace, "y", panel, layout)
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


def _stacked(panel: Panel, at: list[float], across: bool) -> list[float]:  # noqa: FBT001
    """Where each new stacked bar starts: the ends of the bars already at its place."""
    from matplotlib.patches import Rectangle  # noqa: PLC0415  (matplotlib is optional)

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
