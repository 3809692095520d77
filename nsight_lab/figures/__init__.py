"""Run records (and device peaks) -> plotly figures: the one chart implementation.

Every surface shows these figures: the sidebar gets :func:`figure_json` over REST, the
inline widget holds the same JSON in a trait, a cell's final output carries it in its
MIME bundle (:mod:`nsight_lab.views.bundle`), and files are written with
:func:`write_html` / :func:`write_png` (the static page in a cell draws no image: no
headless browser runs in the kernel). The functions here are pure.

Figures are theme-neutral: transparent backgrounds, no text colours (the front end
applies the theme's), series coloured from :data:`PALETTE`. Names a user chose
(annotations, config values) are *text*: they are HTML-escaped wherever plotly.js would
read markup (trace names, categories, hover data, titles), reach hover labels only as
``%{customdata[...]}`` values (never spliced into a ``hovertemplate``), and are kept
unescaped only as data in each trace's ``meta``.

One module per concept: :mod:`~nsight_lab.figures.theme` (palette, layout),
:mod:`~nsight_lab.figures.text` (user text made safe), :mod:`~nsight_lab.figures.common`
(per-run helpers), :mod:`~nsight_lab.figures.durations`,
:mod:`~nsight_lab.figures.telemetry`, :mod:`~nsight_lab.figures.roofline`,
:mod:`~nsight_lab.figures.traffic`, :mod:`~nsight_lab.figures.counters` (one chart
each) and :mod:`~nsight_lab.figures.ranks` (a multi-rank session's two),
:mod:`~nsight_lab.figures.live` (the charts appended to while a profile runs),
:mod:`~nsight_lab.figures.assemble` (the figure set and its order) and
:mod:`~nsight_lab.figures.export` (HTML and PNG files). This package re-exports their
public names.
"""

from __future__ import annotations

from nsight_lab.figures.assemble import CHART_ORDER, figures_to_json, ordered_charts
from nsight_lab.figures.common import figure_json
from nsight_lab.figures.counters import counters_figure
from nsight_lab.figures.durations import duration_figure
from nsight_lab.figures.export import StaticExportError, write_html, write_png
from nsight_lab.figures.live import LiveFigures
from nsight_lab.figures.roofline import roofline_figure
from nsight_lab.figures.telemetry import clocks_figure
from nsight_lab.figures.theme import PALETTE
from nsight_lab.figures.traffic import traffic_figure
from nsight_lab.text.visible import printable

__all__ = [
    "CHART_ORDER",
    "PALETTE",
    "LiveFigures",
    "StaticExportError",
    "clocks_figure",
    "counters_figure",
    "duration_figure",
    "figure_json",
    "figures_to_json",
    "ordered_charts",
    "printable",
    "roofline_figure",
    "traffic_figure",
    "write_html",
    "write_png",
]
