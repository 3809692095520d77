"""The figures' look: the palette, the neutral roof colour and the shared layout.

Figures are theme-neutral: transparent backgrounds, no text colours (the front end
applies the theme's), series coloured from :data:`PALETTE`, the legend under the plot.
Every chart of :mod:`nsight_lab.figures` (and :mod:`nsight_lab.distributed.figure`)
starts from :func:`_layout`, so they look alike on every surface.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

PALETTE: tuple[str, ...] = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#F0E442",
)
"""Okabe-Ito qualitative colours (black left out), legible on light and dark themes."""
NEUTRAL = "rgba(128, 128, 128, 0.9)"
"""Roof lines: mid grey reads on both themes."""
TRANSPARENT = "rgba(0, 0, 0, 0)"


def _layout(title: str, **extra: Any) -> go.Layout:  # noqa: ANN401
    return go.Layout(
        title={"text": title, "x": 0.02, "xanchor": "left"},
        template="none",  # no template colours: the front end applies the theme
        paper_bgcolor=TRANSPARENT,
        plot_bgcolor=TRANSPARENT,
        colorway=list(PALETTE),
        hovermode="closest",
        # Legend under the plot: clear of the title and of a right-hand axis.
        legend={"orientation": "h", "yanchor": "top", "y": -0.2, "x": 0},
        margin={"l": 60, "r": 60, "t": 70, "b": 40},
        **extra,
    )


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {alpha})"
