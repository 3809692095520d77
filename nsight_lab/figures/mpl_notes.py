"""What surrounds the traces in the matplotlib redraw: shapes, annotations, legend.

Reference lines and bands (layout shapes), paper and data annotations placed at
their panel (a subplot's title at its left, its coloured sign in colour), and the
legend below the panels, as :mod:`nsight_lab.figures.mpl_figure` draws them.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, Literal

from nsight_lab.figures.mpl_base import (
    DASHES,
    Panel,
    axis_domain,
    axis_of,
    colour,
    plain,
)

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


_SPAN = re.compile(
    r'<span style="color:\s*([^";]+)[^"]*">(.*?)</span>', flags=re.IGNORECASE
)


def _axis_ref(ref: str) -> tuple[str, bool]:
    """A shape's ``xref``/``yref`` as (axis name, in the axis's domain fraction)."""
    name, _, domain = ref.partition(" ")
    return name, domain == "domain"


def draw_shapes(layout: dict[str, Any], panels: dict[tuple[str, str], Panel]) -> None:
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
            "linestyle": DASHES.get(str(line.get("dash")), "-"),
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


def draw_annotations(
    figure: Figure, layout: dict[str, Any], panels: dict[tuple[str, str], Panel]
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
        if axis_of(layout, panel.x).get("type") == "log":
            x = 10**x
        if axis_of(layout, panel.y).get("type") == "log":
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
    panels: dict[tuple[str, str], Panel],
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
        axis_domain(axis_of(layout, nearest.x)),
        axis_domain(axis_of(layout, nearest.y)),
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


def _distance(layout: dict[str, Any], panel: Panel, x: float, y: float) -> float:
    """How far paper point (x, y) lies outside ``panel``'s domain (0: inside)."""
    (x0, x1), (y0, y1) = (
        axis_domain(axis_of(layout, panel.x)),
        axis_domain(axis_of(layout, panel.y)),
    )
    return math.hypot(max(x0 - x, 0, x - x1), max(y0 - y, 0, y - y1))


def _panel_titled(
    layout: dict[str, Any],
    panels: dict[tuple[str, str], Panel],
    x: float,
    y: float,
    anchor: str,
) -> Panel | None:
    """The panel whose top edge is at ``y`` with ``x`` at its left, centre or right."""
    for panel in panels.values():
        if panel.twin or panel.ax.get_title(loc="left") or panel.ax.get_title():
            continue
        (x0, x1), (_, y1) = (
            axis_domain(axis_of(layout, panel.x)),
            axis_domain(axis_of(layout, panel.y)),
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
    from matplotlib.offsetbox import AnchoredOffsetbox, HPacker, TextArea  # noqa: PLC0415  (matplotlib is optional)

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


def draw_legend(
    figure: Figure,
    layout: dict[str, Any],
    handles: dict[str, Any],
    panels: dict[tuple[str, str], Panel],
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
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415  (matplotlib is optional)

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
