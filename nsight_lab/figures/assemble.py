"""The one figure assembler: a session's figures as JSON, in the one chart order.

:func:`figures_to_json` builds the figure set every surface shows (the widget, the
live view's final figures, the cell's MIME bundle and the server's
``GET sessions/<id>?figures=1``), in :data:`CHART_ORDER`; :func:`figure_json` is the
JSON every figure travels as.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsight_lab.figures.common import figure_json, region_order
from nsight_lab.figures.counters import counters_figure
from nsight_lab.figures.durations import duration_figure
from nsight_lab.figures.kernels import region_kernels
from nsight_lab.figures.ranks import rank_figures
from nsight_lab.figures.roofline import roofline_figure
from nsight_lab.figures.telemetry import clocks_figure
from nsight_lab.figures.traffic import traffic_figure
from nsight_lab.roofline.placement import place_records, place_session

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from nsight_lab.contract.records import RunRecord
    from nsight_lab.roofline.placement import Peaks, Placement

CHART_ORDER: tuple[str, ...] = (
    "duration",
    "ranks",
    "clocks",
    "rank_clocks",
    "roofline",
    "traffic",
    "counters",
)
"""The charts in the order every view shows them: the one statement of it.

Served with the figures (``chart_order`` of ``GET sessions/<id>?figures=1``, the
widget's ``chart_order`` trait); the front ends draw in the order served.
"""


def ordered_charts(names: Iterable[str]) -> list[str]:
    """``names`` in :data:`CHART_ORDER`, any other names after them, sorted.

    Raises:
        Nothing.
    """
    given = set(names)
    known = [name for name in CHART_ORDER if name in given]
    return known + sorted(given.difference(CHART_ORDER))


def figures_to_json(
    records: Sequence[RunRecord],
    peaks: Peaks | None = None,
    *,
    placements: Sequence[Placement] | None = None,
    dtype_by_annotation: Mapping[str, str] | None = None,
    max_points: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Every figure of one session as JSON, by name, in :data:`CHART_ORDER`.

    The one figure assembler: the final cell output's figures (also the lab's mime
    renderer's) and the sidebar's (``GET sessions/<id>?figures=1``) are built here.
    ``duration`` and ``clocks`` always (empty without records); ``roofline`` (with
    ``peaks``) and ``traffic`` when some region has FLOP and byte figures; ``ranks``
    and ``rank_clocks`` (with telemetry) for records measured in several ranks
    (:mod:`nsight_lab.figures.ranks`). Regions
    are placed under the roof of their dtype (``roofline.place_session``) unless
    ``placements`` are given, or ``dtype_by_annotation`` says otherwise. Every
    statistic (the CI95 band, the placement) uses all ``records``; each per-run
    trace is thinned evenly to at most ``max_points`` points (x keeps the runs' true
    positions), so a 200,000-run session has a bounded size.

    Raises:
        ValueError: A dtype in ``dtype_by_annotation`` is unknown or has no peak.
    """
    out = {
        "duration": figure_json(duration_figure(records, max_points)),
        "clocks": figure_json(clocks_figure(records, max_points=max_points)),
    }
    if placements is None and peaks is not None:
        placements = (
            place_records(records, peaks, dtype_by_annotation)
            if dtype_by_annotation is not None
            else place_session(records, peaks)
        )
    # One number per region, so a region has one colour and marker in every chart.
    order = region_order(records)
    kernels = region_kernels(records)
    if placements:
        if peaks is not None:
            out["roofline"] = figure_json(
                roofline_figure(placements, peaks, order=order, kernels=kernels)
            )
        out["traffic"] = figure_json(
            traffic_figure(placements, order=order, kernels=kernels)
        )
    counters = counters_figure(records, peaks, order=order)
    if counters is not None:
        out["counters"] = figure_json(counters)
    out.update(
        (name, figure_json(fig))
        for name, fig in rank_figures(records, max_points).items()
    )
    return {name: out[name] for name in ordered_charts(out)}
