"""The matplotlib redraw's groundwork: panels from plotly's axes, their values.

A :class:`Panel` is one subplot (its x and y axes, its matplotlib ``Axes``, an
overlaid second y); the helpers read plotly's layout (axes, domains, categories) and
a trace's values as :mod:`nsight_lab.figures.mpl_figure` draws them.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import plotly.graph_objects as go
    from matplotlib.axes import Axes


PX_PER_INCH = 100
"""Figure pixels per inch: plotly's ``width``/``height`` become inches at this rate."""


DASHES = {"dash": "--", "dot": ":", "dashdot": "-.", "longdash": "--", "solid": "-"}


_AXIS_KEY = re.compile(r"^xaxis(\d*)$")


class UnsupportedFigureError(ValueError):
    """The figure has a trace type this renderer does not draw."""


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
    from matplotlib.colors import is_color_like  # noqa: PLC0415  (matplotlib is optional)

    return value if is_color_like(value) else None


@dataclass
class Panel:
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


def figure_layout(fig: go.Figure) -> dict[str, Any]:
    """The figure's layout as plain JSON (plotly's defaults not filled in)."""
    layout: dict[str, Any] = fig.layout.to_plotly_json()
    return layout


def axis_of(layout: dict[str, Any], name: str) -> dict[str, Any]:
    """The layout entry of axis ``x``/``x2``/``y3``... (empty when not set)."""
    key = f"{name[0]}axis{name[1:]}"
    found: dict[str, Any] = layout.get(key) or {}
    return found


def axis_pairs(fig: go.Figure, layout: dict[str, Any]) -> list[tuple[str, str]]:
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


def axis_domain(axis: dict[str, Any]) -> tuple[float, float]:
    """The axis' domain: the fraction of the plotting area it spans."""
    low, high = axis.get("domain") or (0.0, 1.0)
    return round(float(low), 6), round(float(high), 6)


def panel_grid(
    layout: dict[str, Any], pairs: list[tuple[str, str]]
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """The grid's column (x) and row (y, top first) domains."""
    columns = sorted({axis_domain(axis_of(layout, x)) for x, _ in pairs})
    rows = sorted({axis_domain(axis_of(layout, y)) for _, y in pairs}, reverse=True)
    return columns, rows


def overlaid_on(layout: dict[str, Any], y: str) -> str | None:
    """The y axis that ``y`` is drawn over (a second y axis at the right), if any."""
    over = axis_of(layout, y).get("overlaying")
    return str(over) if over and over != "free" else None


def trace_panel(panels: dict[tuple[str, str], Panel], trace: Any) -> Panel:  # noqa: ANN401
    """The panel a trace is drawn on: its x/y pair, else the panel of its x axis."""
    x, y = str(trace.xaxis or "x"), str(trace.yaxis or "y")
    return panels.get((x, y)) or next(p for p in panels.values() if p.x == x)


def is_category(values: Any, axis: dict[str, Any]) -> bool:  # noqa: ANN401
    """Whether an axis shows categories: its type says so, or its values are text."""
    if axis.get("type") == "category":
        return True
    if axis.get("type") in {"linear", "log", "date"}:
        return False
    return any(isinstance(v, str) for v in values or ())


def set_categories(fig: go.Figure, layout: dict[str, Any], panel: Panel) -> None:
    """The panel's category orders: the axis's ``categoryarray``, then first seen."""
    for letter, name in (("x", panel.x), ("y", panel.y)):
        axis = axis_of(layout, name)
        found = panel.categories if letter == "x" else panel.y_categories
        if axis.get("categoryorder") == "array":
            found.extend(str(v) for v in axis.get("categoryarray") or ())
        for trace in fig.data:
            if (str(trace.xaxis or "x"), str(trace.yaxis or "y"))[
                letter == "y"
            ] == name and is_category(trace[letter], axis):
                for value in trace[letter] or ():
                    panel.position(value, letter)


def trace_values(
    trace: Any,  # noqa: ANN401
    letter: str,
    panel: Panel,
    layout: dict[str, Any],
) -> list[float]:
    """A trace's x (or y) values as numbers: category positions, None as NaN."""
    other = "y" if letter == "x" else "x"
    raw = trace[letter]
    values = list(raw) if raw is not None else list(range(len(trace[other] or ())))
    axis = axis_of(layout, panel.x if letter == "x" else panel.y)
    if is_category(values, axis):
        return [panel.position(v, letter) for v in values]
    return [math.nan if v is None else float(v) for v in values]
