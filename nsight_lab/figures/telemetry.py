"""The "SM clock and temperature per run" chart, from each run's NVML telemetry.

SM clock on the left axis, temperature on the right, runs in the order they ran over
all configs, throttled runs marked; no traces at all where nothing was read (the cpu
backend), so every view says why in words. Its traces are shared with
:class:`~nsight_lab.figures.live.LiveFigures`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plotly.graph_objects as go

from nsight_lab.figures.common import decimate, new_scatter
from nsight_lab.figures.text import config_label, plotly_text, throttle_text
from nsight_lab.figures.theme import PALETTE, base_layout

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.contract.records import RunRecord


def clock_figure(title: str) -> go.Figure:
    """An empty clock chart: SM clock (MHz) left, temperature right, runs along x.

    The per-run chart and the per-GPU chart of multi-rank sessions share it.
    """
    return go.Figure(
        layout=base_layout(
            title,
            xaxis={"title": {"text": "run (order over all configs)"}},
            # automargin: a clock that never moved (1,980 MHz in every run) gets
            # ticks like "1,979.5" wider than the margin; the title moves out of
            # their way instead of under them.
            yaxis={"title": {"text": "SM clock (MHz)"}, "automargin": True},
            yaxis2={
                "title": {"text": "temperature (°C)"},
                "overlaying": "y",
                "side": "right",
                "showgrid": False,
                "automargin": True,
            },
        ),
        _validate=False,
    )


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
    """SM clock (MHz, left axis) and temperature (°C, right axis) per run.

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
    """The clock chart's two empty traces: SM clock (left axis), temperature (right)."""
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
