"""The "Duration per run" chart: each run's duration with a running CI95 band.

One group of traces per (annotation, config): the band's lower and upper edges
(:func:`~nsight_lab.stats.running_mean_ci`) and the runs, throttled ones marked. The
trace builders are shared with :class:`~nsight_lab.figures.live.LiveFigures`, which
appends to the same traces run by run.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from nsight_lab.figures.common import (
    WHOLE_RUNS,
    decimate,
    log_ticks,
    new_scatter,
    region_order,
    run_groups,
)
from nsight_lab.figures.text import meta_text, plotly_text, series_label, throttle_text
from nsight_lab.figures.theme import base_layout, region_style, with_alpha
from nsight_lab.stats import running_mean_ci

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.contract.records import RunRecord


def duration_title(*, throttled: bool) -> str:
    """The duration axis's title: what an open marker means where one is drawn."""
    return "duration (µs, log)" + ("; open: throttled" if throttled else "")


def duration_layout(
    yrange: tuple[float, float] | None = None,
    runs: int | None = None,
    *,
    throttled: bool = False,
) -> go.Layout:
    """Runs along x, durations on a log axis (regions of 50 µs and of 1 ms alike).

    With ``yrange`` (µs) the axis gets that range and 1-2-5 ticks labelled whole;
    without (the live chart, whose range grows), plotly's log ticks at 1, 2 and 5
    of each decade, labelled whole (its default labels every digit: "1k 900 800
    ... 60 50" crowded the live axis). With ``runs`` up to
    :data:`~nsight_lab.figures.common.WHOLE_RUNS`, x is ticked at every run. The
    title says what an open marker means only where a run drawn was ``throttled``
    (a cpu session, with no clocks read, has none to explain).
    """
    yaxis: dict[str, Any] = {
        "title": {"text": duration_title(throttled=throttled)},
        "type": "log",
        "tickformat": "~s",
    }
    if yrange is None:
        yaxis["dtick"] = "D2"
    else:
        lo, hi = yrange[0] / 1.15, yrange[1] * 1.15
        values, labels = log_ticks(lo, hi)
        yaxis.update(
            range=[math.log10(lo), math.log10(hi)],
            tickvals=values,
            ticktext=labels,
        )
    xaxis: dict[str, Any] = {"title": {"text": "run"}}
    if runs is not None and runs <= WHOLE_RUNS:
        xaxis["dtick"] = 1  # whole runs (two runs: not 0, 0.2, ... 1)
    return base_layout(
        "Duration per run",
        xaxis=xaxis,
        yaxis=yaxis,
        hovermode="x unified",
    )


def duration_axes(
    stats: Sequence[Any], window: Sequence[RunRecord]
) -> tuple[tuple[float, float] | None, int, bool]:
    """The duration chart's y range (µs) over every run, runs (capped), throttling.

    The third: whether a run of the window drawn was throttled (the title says so).
    ``stats``: each region's running duration statistics (``min``, ``max``); where
    one is zero or negative, the window's positive durations give the range.
    """
    low = min((d.min for d in stats), default=math.nan)
    high = max((d.max for d in stats), default=math.nan)
    if not low > 0:  # a zero or negative duration: the window's positive ones
        positive = [r.duration_ns for r in window if r.duration_ns > 0]
        low, high = min(positive, default=math.nan), max(positive, default=math.nan)
    runs = max((r.run_index for r in window), default=0) + 1
    yrange = (low / 1e3, high / 1e3) if high > 0 else None
    throttled = any(r.telemetry.throttled for r in window)
    return yrange, min(runs, WHOLE_RUNS + 1), throttled


def point_style(
    record: RunRecord, label: str, symbol: str = "circle"
) -> tuple[int, str, list[str]]:
    """Marker size, marker symbol and customdata of one run's point.

    ``symbol`` is the region's marker; a throttled run's is the same shape, open
    and larger (a session throttled in every run keeps its regions' shapes).
    """
    throttled = record.telemetry.throttled
    return (
        (10 if throttled else 7),
        (f"{symbol}-open" if throttled else symbol),
        [
            label,
            throttle_text(record),
        ],
    )


def duration_traces(  # noqa: PLR0913  (one group's data, keyword-only)
    i: int,
    *,
    label: str,
    meta: dict[str, Any],
    band: tuple[list[int], list[float], list[float]],
    points: tuple[list[int], list[float]],
    styles: Sequence[tuple[int, str, list[str]]],
) -> list[go.Scatter]:
    """The lower band edge, the upper band edge (filled down to it) and the runs.

    ``i`` is the region's number in the session (:func:`region_style`).
    """
    colour = region_style(i).colour
    band_x, low, high = band
    edge = {
        "line": {"width": 0},
        "mode": "lines",
        "hoverinfo": "skip",
        "legendgroup": f"g{i}",
        "showlegend": False,
        "meta": meta,
    }
    return [
        new_scatter(x=band_x, y=low, name=f"{label} CI95 low", **edge),
        new_scatter(
            x=band_x,
            y=high,
            name=f"{label} CI95",
            fill="tonexty",
            fillcolor=with_alpha(colour, 0.2),
            **edge,
        ),
        new_scatter(
            x=points[0],
            y=points[1],
            name=label,
            mode="lines+markers",
            line={"color": colour, "width": 1},
            marker={
                "color": colour,
                "size": [size for size, _, _ in styles],
                "symbol": [symbol for _, symbol, _ in styles],
            },
            customdata=[custom for _, _, custom in styles],
            # One label per run naming every region (x unified): a region
            # whose runs sit on another's (50 µs each) is still read by name.
            hovertemplate=(
                "%{customdata[0]}: %{y:.4g} µs %{customdata[1]}<extra></extra>"
            ),
            legendgroup=f"g{i}",
            meta=meta,
        ),
    ]


def duration_figure(
    records: Sequence[RunRecord],
    max_points: int | None = None,
    *,
    with_config: bool | None = None,
) -> go.Figure:
    """Duration per run, per (annotation, config), with a running CI95 band.

    Three traces per (annotation, config): the lower and the upper edge of the 95%
    confidence band of the mean over the runs so far (the upper one filled down to
    the lower; from :data:`~nsight_lab.stats.MIN_BAND_RUNS` runs on, on the log
    scale so never below 0: :func:`~nsight_lab.stats.running_mean_ci`), then the
    durations (µs, on a log axis) by run index, each region in its own colour
    and marker (:func:`region_style`, numbered as :func:`region_order`). Throttled
    runs get the region's marker open, and their reasons in the hover.
    :class:`LiveFigures` appends to the same traces run by run.

    Args:
        records: Run records of one session.
        max_points: At most this many points per trace (evenly thinned, band computed
            over every run); all when None.
        with_config: Label traces with their config; by default when the records
            hold more than one config.

    Returns:
        The figure.

    Raises:
        Nothing.
    """
    groups = run_groups(records)
    if with_config is None:
        with_config = len({ci for _, ci in groups}) > 1
    order = region_order(records)
    positive = [r.duration_ns / 1e3 for r in records if r.duration_ns > 0]
    fig = go.Figure(
        layout=duration_layout(
            (min(positive), max(positive)) if positive else None,
            max((r.run_index for r in records), default=0) + 1,
            throttled=any(r.telemetry.throttled for r in records),
        ),
        _validate=False,
    )
    for (annotation, ci), group in groups.items():
        fig.add_traces(
            _group_traces(group, order[(annotation, ci)], max_points, with_config)
        )
    return fig


def _group_traces(
    group: Sequence[RunRecord],
    i: int,
    max_points: int | None,
    with_config: bool,  # noqa: FBT001
) -> list[go.Scatter]:
    """The band's two edges and the points of one (annotation, config), thinned."""
    annotation, ci = group[0].annotation, group[0].config_index
    label = plotly_text(series_label(annotation, group[0].config, with_config))
    meta = {"annotation": meta_text(annotation), "config_index": ci}
    x = [r.run_index for r in group]
    y = [r.duration_ns / 1e3 for r in group]
    low, high = running_mean_ci(y)
    keep = decimate(len(x), max_points)
    # The band only from MIN_BAND_RUNS runs on (NaN before: see running_mean_ci).
    band = [k for k in keep if math.isfinite(low[k]) and math.isfinite(high[k])]
    return duration_traces(
        i,
        label=label,
        meta=meta,
        band=([x[k] for k in band], [low[k] for k in band], [high[k] for k in band]),
        points=([x[k] for k in keep], [y[k] for k in keep]),
        styles=[point_style(group[k], label, region_style(i).symbol) for k in keep],
    )
