"""The "SM clock and temperature per run" chart, from each run's NVML telemetry.

SM clock in the upper panel, temperature in the lower one (two panels, so neither
line can hide the other), runs in the order they ran over all configs, throttled
runs marked; each axis spans at least :data:`CLOCK_FLOOR` of the clock's value and
:data:`TEMPERATURE_FLOOR_C` degrees (:func:`clock_ranges`), so a clock that never
moved is a flat line, not a 2 MHz axis, and a 1 °C drift does not fill the height.
No traces at all where nothing was read (the cpu backend), so every view says why in
words. Its traces are shared with :class:`~nsight_lab.figures.live.LiveFigures`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from nsight_lab.figures.common import WHOLE_RUNS, decimate, new_scatter
from nsight_lab.figures.text import config_label, plotly_text, throttle_text
from nsight_lab.figures.theme import PALETTE, base_layout

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from nsight_lab.contract.records import RunRecord

CLOCK_DOMAIN = (0.56, 1.0)
TEMPERATURE_DOMAIN = (0.0, 0.40)
"""The panels' heights (fractions of the plot): SM clock above, temperature below;
apart, so one line never covers the other."""
CLOCK_FLOOR = 0.02
"""The clock axis spans at least this share of the clock's value either side of
its middle (±2 %: 1,980 MHz in every run reads 1,940-2,020, a flat line)."""
TEMPERATURE_FLOOR_C = 5.0
"""The temperature axis spans at least this many degrees either side of its middle
(a 1 °C drift is a fifth of the height, not all of it)."""


def clock_figure(title: str) -> go.Figure:
    """An empty clock chart: SM clock (MHz) above, temperature below, runs along x.

    Two panels sharing the run axis (never one line over the other). The per-run
    chart and the per-GPU chart of multi-rank sessions share it.
    """
    return go.Figure(
        layout=base_layout(
            title,
            # The run axis under the lower panel (its title clear of both lines).
            xaxis={"title": {"text": "run (order over all configs)"}, "anchor": "y2"},
            yaxis={
                "title": {"text": "SM clock (MHz)"},
                "domain": list(CLOCK_DOMAIN),
                "automargin": True,
                "tickformat": ",d",
                "nticks": 4,
            },
            yaxis2={
                "title": {"text": "temp. (°C)"},
                "domain": list(TEMPERATURE_DOMAIN),
                "anchor": "x",
                "automargin": True,
                "tickformat": ",d",
                "nticks": 4,
            },
        ),
        _validate=False,
    )


def _floored(values: Iterable[float | None], half_floor: float | None) -> list[float]:
    """``[lo, hi]`` around ``values``: 10 % padding, at least ``±half_floor``."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return []
    lo, hi = min(finite), max(finite)
    middle = (lo + hi) / 2
    half = max((hi - lo) / 2 * 1.1, half_floor if half_floor is not None else 0.0)
    return [middle - half, middle + half]


def clock_ranges(
    clocks: Iterable[float | None], temperatures: Iterable[float | None]
) -> dict[str, Any]:
    """Layout updates giving the clock and temperature axes their floors.

    The clock axis spans at least ±:data:`CLOCK_FLOOR` of its middle value, the
    temperature axis at least ±:data:`TEMPERATURE_FLOOR_C` °C, each with room
    around the values; an axis with no values keeps plotly's autorange.

    Raises:
        Nothing.
    """
    clocks = list(clocks)
    finite = [v for v in clocks if v is not None and math.isfinite(v)]
    middle = (min(finite) + max(finite)) / 2 if finite else 0.0
    out: dict[str, Any] = {}
    clock = _floored(clocks, abs(middle) * CLOCK_FLOOR)
    if clock:
        out["yaxis"] = {"range": clock, "autorange": False}
    temperature = _floored(temperatures, TEMPERATURE_FLOOR_C)
    if temperature:
        out["yaxis2"] = {"range": temperature, "autorange": False}
    return out


def clock_custom(record: RunRecord, with_config: bool) -> list[str]:  # noqa: FBT001
    """Hover data of one run's clock point: where it ran (config, run), throttling."""
    place = (
        f"{config_label(record.config)}, run {record.run_index}"
        if with_config and record.config
        else f"run {record.run_index}"
    )
    return [plotly_text(place), throttle_text(record)]


def clock_values(record: RunRecord) -> tuple[float | None, float | None]:
    """One run's SM clock (MHz) and temperature (°C); ``None`` where not read."""
    return record.telemetry.sm_clock_mhz, record.telemetry.temperature_c


def clocks_figure(
    records: Sequence[RunRecord],
    *,
    with_config: bool | None = None,
    max_points: int | None = None,
) -> go.Figure:
    """SM clock (MHz, upper panel) and temperature (°C, lower panel) per run.

    Runs are numbered in the order they ran over all configs; telemetry is per run, so
    each run's first region gives it. Throttled runs get an ``x`` marker and their
    reasons in the hover. Missing readings (the CPU backend) leave gaps.
    ``with_config`` adds the config to the hover (by default with several configs).
    ``max_points`` thins the runs evenly to at most that many points, each at its
    true position on x (all when None).

    Raises:
        Nothing.
    """
    runs: dict[tuple[int, int], RunRecord] = {}
    for record in records:
        runs.setdefault((record.config_index, record.run_index), record)
    every = list(runs.values())
    if with_config is None:
        with_config = len({r.config_index for r in every}) > 1
    x = decimate(len(every), max_points)
    ordered = [every[k] for k in x]
    symbols = ["x" if r.telemetry.throttled else "circle" for r in ordered]
    custom = [clock_custom(r, with_config) for r in ordered]
    fig = clock_figure("SM clock and temperature per run")
    values = [clock_values(r) for r in ordered]
    if not any(_has_telemetry(r) for r in every):
        # Nothing to draw (the cpu backend, or no NVML): no traces, so every view says
        # why in words instead of drawing empty axes around -1...4 MHz; the words
        # for these records' backend travel in the layout's meta.
        if every:
            fig.update_layout(meta={"missing": missing_telemetry(every)})
        return fig
    for trace in clock_traces():
        fig.add_trace(trace)
    fig.data[0].update(x=x, y=[v[0] for v in values], customdata=custom)
    fig.data[1].update(x=x, y=[v[1] for v in values], customdata=custom)
    for trace in fig.data:
        trace.marker.symbol = symbols
    every_value = [clock_values(r) for r in every]
    fig.update_layout(
        clock_ranges([v[0] for v in every_value], [v[1] for v in every_value])
    )
    if len(every) <= WHOLE_RUNS:
        fig.update_xaxes(dtick=1)  # whole runs, as the duration chart's
    return fig


def missing_telemetry(records: Sequence[RunRecord]) -> str:
    """Why runs of ``records`` have no clock or temperature to draw, and what to do.

    What the backend that measured them lacks: the cpu backend times the host, the
    ncu backend runs the cell under Nsight Compute in a child process (which keeps
    counters, not NVML readings), the GPU backends read NVML when nvidia-ml-py is
    installed.

    Raises:
        Nothing.
    """
    backends = {r.backend for r in records}
    if not records:
        return "no runs stored yet"
    if backends == {"cpu"}:
        return (
            "no clocks or temperature: the cpu backend times the host and reads no "
            "GPU telemetry; profile on an NVIDIA GPU with --backend events"
        )
    if backends == {"ncu"}:
        return (
            "no clocks or temperature per run: the ncu backend runs the cell under "
            "Nsight Compute in a child process, which records counters, not NVML "
            "readings (its clocks are Nsight Compute's --clock-control); profile "
            "with --backend events, cupti or pm for SM clock and temperature per run"
        )
    return (
        "no clocks or temperature were read (NVML): install nvidia-ml-py "
        "(pip install nvidia-ml-py) in the kernel's environment and profile again"
    )


def _has_telemetry(record: RunRecord) -> bool:
    return any(value is not None for value in clock_values(record))


def clock_traces() -> list[go.Scatter]:
    """The clock chart's two empty traces: SM clock (upper panel), temperature."""
    series = (("SM clock", "y", "MHz"), ("temperature", "y2", "°C"))
    return [
        new_scatter(
            x=[],
            y=[],
            name=name,
            yaxis=axis,
            mode="lines+markers",
            line={"color": colour, "width": 1},
            marker={"color": colour, "symbol": [], "size": 7},
            customdata=[],
            hovertemplate=(
                f"%{{customdata[0]}}<br>{name}: %{{y:.0f}} {unit}"
                "<br>%{customdata[1]}<extra></extra>"
            ),
        )
        for (name, axis, unit), colour in zip(
            series, (PALETTE[0], PALETTE[3]), strict=True
        )
    ]
