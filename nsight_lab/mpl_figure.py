"""A plotly figure redrawn with matplotlib: the PNG when kaleido cannot export one.

plotly's static export needs kaleido and a headless Chrome, which many GPU servers
lack; matplotlib needs neither and is on every machine that ran nsight-python (it
draws nsight-python's plots). :func:`draw` reads only the figure's data and layout --
it builds no figure of its own -- so the PNG shows what the interactive plotly
figure shows: the subplot grid (from the axes' domains), subplot titles, the title,
axis titles, log and category axes, tick angles, shared y axes, line/marker/text
scatter traces, grouped bars, error bars, vertical and horizontal reference lines,
and the legend. A trace type it cannot draw raises :class:`UnsupportedFigureError`
rather than leaving it out of the picture.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import os

    import plotly.graph_objects as go
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
    categories: list[str] = field(default_factory=list)
    bars: list[int] = field(default_factory=list)
    """Indices (into the figure's data) of the bar traces on this panel, in order."""

    def position(self, value: object) -> float:
        """Where ``value`` sits on a category axis (adding it if new)."""
        label = str(value)
        if label not in self.categories:
            self.categories.append(label)
        return float(self.categories.index(label))


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
        panel = panels[str(trace.xaxis or "x")]
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
    _legend(figure.axes[0], layout, handles)
    title = plain((layout.get("title") or {}).get("text"))
    if title:
        figure.suptitle(title, fontsize=14, fontweight="bold")
    return figure


def _panels(fig: go.Figure, layout: dict[str, Any]) -> tuple[Figure, dict[str, _Panel]]:
    """The matplotlib figure, its grid of axes, and the panel of each x axis."""
    from matplotlib.figure import Figure

    pairs = _axis_pairs(fig, layout)
    columns, rows = _grid(layout, pairs)
    width = float(layout.get("width") or 800) / PX_PER_INCH
    height = float(layout.get("height") or 600) / PX_PER_INCH
    figure = Figure(figsize=(width, height), layout="constrained")
    axes = figure.subplots(len(rows), len(columns), squeeze=False)
    panels: dict[str, _Panel] = {}
    for x, y in pairs:
        r = rows.index(_domain(_axis(layout, y)))
        c = columns.index(_domain(_axis(layout, x)))
        panels[x] = _Panel(x=x, y=y, ax=axes[r][c])
    by_y = {panel.y: panel for panel in panels.values()}
    for panel in panels.values():
        # plotly's shared axes (make_subplots' shared_yaxes/shared_xaxes): one range
        shared_x = panels.get(str(_axis(layout, panel.x).get("matches")))
        shared_y = by_y.get(str(_axis(layout, panel.y).get("matches")))
        if shared_x is not None and shared_x is not panel:
            panel.ax.sharex(shared_x.ax)
        if shared_y is not None and shared_y is not panel:
            panel.ax.sharey(shared_y.ax)
    for index, trace in enumerate(fig.data):
        if trace.type == "bar":
            panels[str(trace.xaxis or "x")].bars.append(index)
    for panel in panels.values():
        _categories(fig, layout, panel)
    return figure, panels


def _is_category(values: Any, axis: dict[str, Any]) -> bool:  # noqa: ANN401
    if axis.get("type") == "category":
        return True
    if axis.get("type") in {"linear", "log", "date"}:
        return False
    return any(isinstance(v, str) for v in values or ())


def _categories(fig: go.Figure, layout: dict[str, Any], panel: _Panel) -> None:
    """The panel's category order: the axis's ``categoryarray``, then first seen."""
    axis = _axis(layout, panel.x)
    if axis.get("categoryorder") == "array":
        panel.categories.extend(str(v) for v in axis.get("categoryarray") or ())
    for trace in fig.data:
        if str(trace.xaxis or "x") == panel.x and _is_category(trace.x, axis):
            for value in trace.x or ():
                panel.position(value)


def _xs(trace: Any, panel: _Panel, layout: dict[str, Any]) -> list[float]:  # noqa: ANN401
    values = list(trace.x) if trace.x is not None else list(range(len(trace.y or ())))
    if _is_category(values, _axis(layout, panel.x)):
        return [panel.position(v) for v in values]
    return [float(v) for v in values]


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
    found = colour(trace.marker.color) if trace.marker is not None else None
    if found is None and getattr(trace, "line", None) is not None:
        found = colour(trace.line.color)
    return found


def _scatter(trace: Any, panel: _Panel, layout: dict[str, Any]) -> Any:  # noqa: ANN401
    xs = _xs(trace, panel, layout)
    ys = [math.nan if v is None else float(v) for v in trace.y or ()]
    mode = str(trace.mode or ("lines+markers" if len(ys) < 20 else "lines"))  # noqa: PLR2004  (plotly's default)
    style: dict[str, Any] = {
        "color": _trace_colour(trace),
        "linestyle": _DASHES.get(str(trace.line.dash), "-")
        if "lines" in mode
        else "none",
        "marker": "o" if "markers" in mode else None,
        "label": plain(trace.name),
    }
    if trace.line.width is not None:
        style["linewidth"] = float(trace.line.width)
    yerr = _errors(trace.error_y, len(ys))
    xerr = _errors(trace.error_x, len(xs))
    if yerr is not None or xerr is not None:
        container = panel.ax.errorbar(xs, ys, yerr=yerr, xerr=xerr, capsize=3, **style)
        artist: Any = container.lines[0]
    else:
        (artist,) = panel.ax.plot(xs, ys, **style)
    if "text" in mode:
        _texts(panel.ax, xs, ys, trace.text, style["color"])
    return artist


def _bar(trace: Any, index: int, panel: _Panel, layout: dict[str, Any]) -> Any:  # noqa: ANN401
    xs = _xs(trace, panel, layout)
    ys = [math.nan if v is None else float(v) for v in trace.y or ()]
    grouped = layout.get("barmode", "group") == "group"
    slots = len(panel.bars) if grouped else 1
    slot = panel.bars.index(index) if grouped else 0
    width = 0.8 / slots
    lefts = [x + (slot - (slots - 1) / 2) * width for x in xs]
    yerr = _errors(trace.error_y, len(ys))
    artist = panel.ax.bar(
        lefts,
        ys,
        width=width,
        color=_trace_colour(trace),
        label=plain(trace.name),
        yerr=yerr,
        capsize=3 if yerr is not None else 0,
    )
    if trace.text is not None:
        _texts(panel.ax, lefts, ys, trace.text, _trace_colour(trace))
    return artist


def _texts(
    ax: Axes,
    xs: list[float],
    ys: list[float],
    texts: Any,  # noqa: ANN401  (a string or a sequence of them)
    tint: Any,  # noqa: ANN401
) -> None:
    """Each point's text just above it (plotly's ``top center``/``outside``)."""
    labels = [texts] * len(xs) if isinstance(texts, str) else list(texts or ())
    for x, y, label in zip(xs, ys, labels, strict=False):
        if label is None or math.isnan(y):
            continue
        ax.annotate(
            plain(label),
            (x, y),
            xytext=(0, 4),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=8,
            color=tint,
        )


def _axis_ref(ref: str) -> tuple[str, bool]:
    """A shape's ``xref``/``yref`` as (axis name, in the axis's domain fraction)."""
    name, _, domain = ref.partition(" ")
    return name, domain == "domain"


def _shapes(layout: dict[str, Any], panels: dict[str, _Panel]) -> None:
    """Reference lines (``add_vline``/``add_hline``); other shapes are left out."""
    for shape in layout.get("shapes") or ():
        if shape.get("type") != "line":
            continue
        xref, x_domain = _axis_ref(str(shape.get("xref") or "x"))
        yref, y_domain = _axis_ref(str(shape.get("yref") or "y"))
        panel = panels.get(xref) or next(
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


def _decorate(panel: _Panel, layout: dict[str, Any]) -> None:
    """Axis titles, scales, category ticks, tick angles, shared and zero-based y."""
    ax = panel.ax
    x_axis, y_axis = _axis(layout, panel.x), _axis(layout, panel.y)
    ax.set_xlabel(plain((x_axis.get("title") or {}).get("text")))
    ax.set_ylabel(plain((y_axis.get("title") or {}).get("text")))
    if x_axis.get("type") == "log":
        ax.set_xscale("log")
    if y_axis.get("type") == "log":
        ax.set_yscale("log")
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
    if y_axis.get("rangemode") == "tozero" and y_axis.get("type") != "log":
        ax.set_ylim(bottom=0)
    if y_axis.get("showticklabels") is False:
        ax.tick_params(axis="y", labelleft=False)
    ax.grid(visible=True, linestyle="--", alpha=0.7)
    ax.set_axisbelow(True)


def _annotations(
    figure: Figure, layout: dict[str, Any], panels: dict[str, _Panel]
) -> None:
    """Subplot titles (paper annotations above a panel) and other annotations."""
    for note in layout.get("annotations") or ():
        text = plain(note.get("text"))
        if not text:
            continue
        xref, yref = str(note.get("xref") or "x"), str(note.get("yref") or "y")
        x, y = float(note.get("x") or 0), float(note.get("y") or 0)
        if xref == "paper" and yref == "paper":
            panel = _panel_below(layout, panels, x, y)
            if panel is not None and not panel.ax.get_title():
                panel.ax.set_title(text, fontsize=11)
            else:
                figure.text(x, y, text, ha="center", va="bottom", fontsize=10)
        elif xref in panels:
            panels[xref].ax.annotate(text, (x, y), ha="center", fontsize=9)


def _panel_below(
    layout: dict[str, Any], panels: dict[str, _Panel], x: float, y: float
) -> _Panel | None:
    """The panel whose top edge is at ``y`` and whose centre is at ``x`` (paper)."""
    for panel in panels.values():
        (x0, x1), (_, y1) = (
            _domain(_axis(layout, panel.x)),
            _domain(_axis(layout, panel.y)),
        )
        if math.isclose((x0 + x1) / 2, x, abs_tol=1e-3) and math.isclose(
            y1, y, abs_tol=1e-3
        ):
            return panel
    return None


def _legend(first: Axes, layout: dict[str, Any], handles: dict[str, Any]) -> None:
    """One legend, on the first panel, as plotly shows one for the figure."""
    shown = layout.get("showlegend")
    if shown is False or not handles or (shown is None and len(handles) < 2):  # noqa: PLR2004
        return
    legend = layout.get("legend") or {}
    title = plain((legend.get("title") or {}).get("text")) or None
    first.legend(
        list(handles.values()),
        list(handles),
        title=title,
        loc="best",
        fontsize=9,
        title_fontsize=10,
    )


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
