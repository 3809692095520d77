"""``analyze.plot``'s figure: nsight-python's layout drawn with plotly.

One trace per region (a line or grouped bars) over the configs, a grid of panels by
``row_panels`` x ``col_panels``, the average and the geometric mean as bars after a
dashed line, values on the points, and regions split by ``variant_fields``
(:func:`plot_figure`; :mod:`nsight_lab.api.plot` is the decorator around it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nsight_lab.api.exceptions import ProfilerException

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd
    import plotly.graph_objects as go

__all__ = ["COLORS", "PX_PER_INCH", "plot_figure"]

COLORS = (
    "#76B900", "#0070C5", "#5C1682", "#890C57", "#FAC200", "#008564", "#FF5733",
    "#C70039", "#900C3F", "#581845", "#1F618D", "#28B463", "#F39C12", "#D35400",
)  # fmt: skip
"""nsight-python's trace colours, in order."""
PX_PER_INCH = 100
"""Figure pixels per inch of nsight-python's ``plot_width``/``plot_height``."""


def _label(fields: Sequence[str], row: Any) -> str:  # noqa: ANN401  (a pandas row)
    return ", ".join(f"{field}={row[field]}" for field in fields)


def _expand_variants(
    frame: pd.DataFrame, fields: list[str], annotations: list[str]
) -> pd.DataFrame:
    """One region per value of ``fields`` for the regions in ``annotations``."""
    import pandas as pd  # noqa: PLC0415  (pandas: on first plot)

    if not fields or not annotations:
        return frame
    keep = frame[~frame["Annotation"].isin(annotations)]
    parts = [keep]
    for annotation in annotations:
        rows = frame[frame["Annotation"] == annotation].copy()
        if rows.empty:
            continue
        rows["Annotation"] = [
            f"{annotation} {_label(fields, row)}" for _, row in rows.iterrows()
        ]
        parts.append(rows)
    expanded: pd.DataFrame = pd.concat(parts, ignore_index=True)
    return expanded


def _param_fields(frame: pd.DataFrame) -> list[str]:
    """The parameter columns: between ``Metric`` and ``AvgValue``."""
    columns = [str(c) for c in frame.columns]
    return columns[columns.index("Metric") + 1 : columns.index("AvgValue")]


@dataclass(frozen=True)
class _Style:
    """How each panel is drawn."""

    plot_type: str
    annotate_points: bool
    show_avg: bool
    show_geomean: bool
    colour: dict[str, str]


def _x_fields(
    fields: list[str], excluded: set[str], x_keys: Sequence[str] | None
) -> list[str]:
    """The parameters on the x axis: ``x_keys``, else those not used elsewhere.

    Raises:
        ProfilerException: An ``x_keys`` field is not a parameter left for the x axis.
        ValueError: ``x_keys`` overlaps the panel or variant fields.
    """
    if not x_keys:
        return [f for f in fields if f not in excluded]
    overlap = set(x_keys) & excluded
    if overlap:
        msg = (
            "x_keys cannot contain fields used in row_panels, col_panels, or "
            f"variant_fields: {overlap}"
        )
        raise ValueError(msg)
    for key in x_keys:
        if key not in fields:
            msg = (
                f"Field '{key}' is not present in the DataFrame. Available "
                f"fields: {[f for f in fields if f not in excluded]}"
            )
            raise ProfilerException(msg)
    return list(x_keys)


def _distinct(frame: pd.DataFrame, fields: list[str]) -> list[tuple[object, ...]]:
    if not fields:
        return [()]
    return list(dict.fromkeys(tuple(r) for r in frame[fields].itertuples(index=False)))


def plot_figure(  # noqa: PLR0913  (nsight-python's options, keyword-only)
    frame: pd.DataFrame,
    metric: str,
    *,
    title: str = "",
    ylabel: str = "",
    annotate_points: bool = False,
    show_avg: bool = False,
    show_geomean: bool = False,
    plot_type: str = "line",
    size: tuple[float, float] = (6, 4),
    panels: tuple[list[str], list[str]] = ([], []),
    x_keys: Sequence[str] | None = None,
    variants: tuple[list[str], list[str]] = ([], []),
) -> go.Figure:
    """The plotly figure of ``metric`` in the results, in nsight-python's layout.

    Raises:
        ProfilerException: An ``x_keys`` field is not a parameter left for the x axis.
        ValueError: ``x_keys`` overlaps the panel or variant fields.
    """
    from plotly.subplots import make_subplots  # noqa: PLC0415  (plotly: on first plot)

    rows_by, cols_by = panels
    data = frame[frame["Metric"] == metric].copy()
    excluded = set(rows_by) | set(cols_by) | set(variants[0])
    x_fields = _x_fields(_param_fields(data), excluded, x_keys)
    data["Configuration"] = [_label(x_fields, row) for _, row in data.iterrows()]
    data = _expand_variants(data, *variants)
    row_values = _distinct(data, rows_by)
    col_values = _distinct(data, cols_by)
    titles = _titles(panels, row_values, col_values)
    fig = make_subplots(
        rows=len(row_values),
        cols=len(col_values),
        subplot_titles=titles if any(titles) else None,
        shared_yaxes=True,
    )
    annotations = list(dict.fromkeys(data["Annotation"]))
    style = _Style(
        plot_type=plot_type,
        annotate_points=annotate_points,
        show_avg=show_avg,
        show_geomean=show_geomean,
        colour={a: COLORS[i % len(COLORS)] for i, a in enumerate(annotations)},
    )
    for r, rv in enumerate(row_values, start=1):
        for c, cv in enumerate(col_values, start=1):
            chosen = [*zip(rows_by, rv, strict=True), *zip(cols_by, cv, strict=True)]
            panel = data
            for f, v in chosen:
                panel = panel[panel[f] == v]
            _draw_panel(fig, panel, annotations, style, (r, c))
    _lay_out(
        fig, data, (metric, title, ylabel), size, (len(row_values), len(col_values))
    )
    return fig


def _lay_out(
    fig: go.Figure,
    data: pd.DataFrame,
    texts: tuple[str, str, str],
    size: tuple[float, float],
    grid: tuple[int, int],
) -> None:
    """The figure's title, size (per panel, as nsight-python) and y label."""
    metric, title, ylabel = texts
    rows, cols = grid
    fig.update_layout(
        title={"text": f"{title}<br><sup>{_hardware(data)}</sup>"},
        barmode="group",
        legend_title_text="Annotation",
        width=int(max(size[0] * cols, 8) * PX_PER_INCH),
        height=int(max(size[1] * rows, 6) * PX_PER_INCH),
    )
    fig.update_yaxes(
        title_text=_ylabel(data, metric, ylabel), col=1, rangemode="tozero"
    )


def _titles(
    panels: tuple[list[str], list[str]],
    row_values: list[tuple[object, ...]],
    col_values: list[tuple[object, ...]],
) -> list[str]:
    """Each panel's title: its row and column fields' values."""
    rows_by, cols_by = panels
    return [
        "<br>".join(
            [f"{f}={v}" for f, v in zip(rows_by, rv, strict=True)]
            + [f"{f}={v}" for f, v in zip(cols_by, cv, strict=True)]
        )
        for rv in row_values
        for cv in col_values
    ]


def _draw_panel(
    fig: go.Figure,
    panel: pd.DataFrame,
    annotations: list[str],
    style: _Style,
    cell: tuple[int, int],
) -> None:
    """One panel: a trace per region, then the aggregates after a dashed line."""
    r, c = cell
    configs = list(dict.fromkeys(panel["Configuration"]))
    extra = [
        n for n, on in (("Avg", style.show_avg), ("Geomean", style.show_geomean)) if on
    ]
    for annotation in annotations:
        part = panel[panel["Annotation"] == annotation]
        if not part.empty:
            _draw_region(fig, part, annotation, style, cell)
    fig.update_xaxes(
        categoryorder="array",
        categoryarray=[*configs, *extra],
        tickangle=-45,
        row=r,
        col=c,
    )
    if extra and configs:
        fig.add_vline(
            x=len(configs) - 0.5, line_dash="dash", line_width=1, row=r, col=c
        )


def _draw_region(
    fig: go.Figure,
    part: pd.DataFrame,
    annotation: str,
    style: _Style,
    cell: tuple[int, int],
) -> None:
    """One region's trace in a panel, and its aggregate bars where asked for."""
    import plotly.graph_objects as go  # noqa: PLC0415  (plotly: on first plot)

    r, c = cell
    ys = [float(v) for v in part["AvgValue"]]
    common: dict[str, Any] = {
        "x": list(part["Configuration"]),
        "y": ys,
        "name": annotation,
        "legendgroup": annotation,
        "showlegend": cell == (1, 1),
        "marker": {"color": style.colour[annotation]},
    }
    if style.annotate_points:
        common["text"] = [f"{y:.2f}" for y in ys]
        common["textposition"] = (
            "top center" if style.plot_type == "line" else "outside"
        )
    trace: go.Scatter | go.Bar = (
        go.Scatter(
            mode="lines+markers+text" if style.annotate_points else "lines+markers",
            line={"color": style.colour[annotation]},
            **common,
        )
        if style.plot_type == "line"
        else go.Bar(**common)
    )
    fig.add_trace(trace, row=r, col=c)
    shown = _aggregates(part, ys, style)
    if shown:
        fig.add_trace(
            go.Bar(
                x=[x for x, _ in shown],
                y=[y for _, y in shown],
                name=annotation,
                legendgroup=annotation,
                showlegend=False,
                marker={"color": style.colour[annotation]},
                text=[f"{y:.2f}" for _, y in shown],
                textposition="outside",
            ),
            row=r,
            col=c,
        )


def _aggregates(
    part: pd.DataFrame, ys: list[float], style: _Style
) -> list[tuple[str, float]]:
    """The region's average and geometric mean bars that ``style`` asks for."""
    shown: list[tuple[str, float]] = []
    valid = [y for y in ys if not math.isnan(y)]
    if style.show_avg and valid:
        shown.append(("Avg", sum(valid) / len(valid)))
    geomean = _first(part["Geomean"]) if style.show_geomean else None
    if geomean is not None:
        shown.append(("Geomean", geomean))
    return shown


def _first(values: Any) -> float | None:  # noqa: ANN401  (a pandas column)
    for value in values:
        number = float(value)
        if not math.isnan(number):
            return number
    return None


def _hardware(frame: pd.DataFrame) -> str:
    gpu = next(iter(frame["GPU"]), "") if "GPU" in frame else ""
    host = next(iter(frame["Host"]), "") if "Host" in frame else ""
    return f"{gpu}, {host}"


def _ylabel(frame: pd.DataFrame, metric: str, given: str) -> str:
    """nsight-python's y label: the given one, else the metric (relative to X)."""
    runs = int(frame["NumRuns"].max()) if len(frame) else 0
    if given:
        return f"{given} (avg: {runs} runs)"
    normalized = next(iter(frame["Normalized"]), False) if len(frame) else False
    text = metric if normalized is False else f"{metric} relative to {normalized}"
    return f"{text} (avg: {runs} runs)"
