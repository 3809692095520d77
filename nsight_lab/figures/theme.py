"""The figures' look: the palette, the neutral roof colour and the shared layout.

Figures are theme-neutral: transparent backgrounds, no text colours (the front end
applies the theme's), series coloured from :data:`PALETTE`, the legend under the plot.
Every chart of :mod:`nsight_lab.figures` (and :mod:`nsight_lab.figures.ranks`)
starts from :func:`base_layout`, so they look alike on every surface.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

PALETTE: tuple[str, ...] = (
    # Okabe-Ito (black and yellow left out: one is the text, one vanishes on white)
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    # then Paul Tol's and IBM's colour-blind-safe sets, each next one the farthest
    # (CIELAB) from those before it
    "#785EF0",
    "#999933",
    "#EE3377",
    "#648FFF",
    "#EE8866",
    "#994455",
    "#AA3377",
    "#228833",
    "#EE99AA",
    "#EE6677",
    "#CC3311",
    "#997700",
    "#CCBB44",
    "#44AA99",
)
"""Qualitative colours, one per region: 20, each at least 1.9:1 against white and
2.5:1 against a dark theme's #111, any two at least 12 CIELAB units apart. Under
colour-blindness some pairs look alike, so a region also gets its own marker
(:data:`REGION_SYMBOLS`): no two of the first 420 regions share both."""
REGION_SHAPES: tuple[tuple[str, str], ...] = (
    ("circle", "\u25cf"),
    ("square", "\u25a0"),
    ("diamond", "\u25c6"),
    ("triangle-up", "\u25b2"),
    ("triangle-down", "\u25bc"),
    ("star", "\u2605"),
    ("hexagon", "\u2b22"),
    ("pentagon", "\u2b1f"),
    ("triangle-right", "\u25b6"),
    ("cross", "\u271a"),
    ("x", "\u2716"),
    ("triangle-left", "\u25c0"),
    ("hourglass", "\u29d7"),
    ("bowtie", "\u29d3"),
    ("hexagram", "\u2736"),
    ("circle-x", "\u2297"),
    ("square-cross", "\u229e"),
    ("star-diamond", "\u2726"),
    ("diamond-tall", "\u2b27"),
    ("square-x", "\u22a0"),
    ("circle-cross", "\u2295"),
)
"""Plotly marker shapes and the text character that draws each (a region's sign in
titles and labels): 21, so the first 20 regions never share a shape, and 21 is
coprime with the 20 colours (no two of the first 420 regions share both)."""
REGION_SYMBOLS: tuple[str, ...] = tuple(name for name, _ in REGION_SHAPES)
"""Marker shapes, one per region, filled; a throttled run's is its region's shape
open."""
REGION_GLYPHS: dict[str, str] = dict(REGION_SHAPES)
"""The text character of each marker shape: a region's sign in titles and labels."""
NEUTRAL = "rgba(128, 128, 128, 0.9)"
"""Roof lines: mid grey reads on both themes."""
TRANSPARENT = "rgba(0, 0, 0, 0)"


def base_layout(title: str, **extra: Any) -> go.Layout:  # noqa: ANN401
    """The layout every chart starts from: theme-neutral, ``title`` at the left."""
    return go.Layout(
        title={"text": title, "x": 0.02, "xanchor": "left"},
        template="none",  # no template colours: the front end applies the theme
        paper_bgcolor=TRANSPARENT,
        plot_bgcolor=TRANSPARENT,
        colorway=list(PALETTE),
        hovermode=extra.pop("hovermode", "closest"),
        # Legend under the plot: clear of the title and of a right-hand axis.
        legend={
            "orientation": "h",
            "yanchor": "top",
            "y": -0.2,
            "x": 0,
            **extra.pop("legend", {}),
        },
        # Below the plot: tick labels and the axis title (the legend's rows are
        # added under them where it is drawn).
        margin={"l": 60, "r": 60, "t": 70, "b": 52},
        **extra,
    )


@dataclass(frozen=True)
class RegionStyle:
    """How one region (one annotation of one config) is drawn in every chart."""

    colour: str
    symbol: str
    """A plotly marker symbol from :data:`REGION_SYMBOLS` (filled)."""

    @property
    def glyph(self) -> str:
        """The marker as coloured text (plotly markup), for titles and labels."""
        return f'<span style="color:{self.colour}">{REGION_GLYPHS[self.symbol]}</span>'


def region_style(index: int) -> RegionStyle:
    """The colour and marker of a session's ``index``-th region (from 0).

    Regions are numbered in the order they first ran, so one region has the same
    colour and marker in every chart of its session.

    Raises:
        Nothing.
    """
    return RegionStyle(
        PALETTE[index % len(PALETTE)], REGION_SYMBOLS[index % len(REGION_SYMBOLS)]
    )


def with_alpha(hex_colour: str, alpha: float) -> str:
    """``#rrggbb`` as ``rgba(r, g, b, alpha)``."""
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {alpha})"
