"""``analyze.plot``: nsight-python's plot decorator, drawn with plotly.

The decorated ``analyze.kernel`` function returns its results as before and, as a side
effect, draws one metric: one trace per region (a line or grouped bars) over the
configs, a grid of panels by ``row_panels`` x ``col_panels``, the average and the
geometric mean as bars after a dashed line when ``show_aggregate`` asks, values on the
points when ``annotate_points``, and regions split into one trace per value of
``variant_fields`` for ``variant_annotations`` -- nsight-python's layout. The figure is
written to ``filename`` as a PNG (through :func:`nsight_lab.figures.write_png`, which
needs kaleido and Chrome; without them, drawn from the same figure with matplotlib by
:mod:`nsight_lab.figures.mpl_figure`, with a note; with neither, one line saying what to
install), kept in
:attr:`ProfileResults.figure`, and shown in a notebook. ``plot_callback`` receives
the plotly figure; one written for nsight-python's matplotlib figure (it fails on the
plotly one with an ``AttributeError``) gets the same figure drawn with matplotlib, and
the PNG is written from that drawing, as it styled it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from nsight_lab.api.exceptions import ProfilerException
from nsight_lab.api.kernel import in_notebook
from nsight_lab.api.output import say
from nsight_lab.results import warn_at_user

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import pandas as pd
    import plotly.graph_objects as go

    from nsight_lab.api.results import ProfileResults

__all__ = ["col_panel", "legalize_metric", "plot", "plot_figure", "row_panel"]

PNG_SCALE = 1.5
"""Pixel density of the PNG ``analyze.plot`` writes (its figure's size x this)."""
COLORS = (
    "#76B900", "#0070C5", "#5C1682", "#890C57", "#FAC200", "#008564", "#FF5733",
    "#C70039", "#900C3F", "#581845", "#1F618D", "#28B463", "#F39C12", "#D35400",
)  # fmt: skip
"""nsight-python's trace colours, in order."""
PX_PER_INCH = 100
"""Figure pixels per inch of nsight-python's ``plot_width``/``plot_height``."""


class row_panel:  # noqa: N801  (nsight-python's names)
    """nsight-python's marker class (exported, unused)."""


class col_panel:  # noqa: N801
    """nsight-python's marker class (exported, unused)."""


def legalize_metric(frame: pd.DataFrame, metric: str | None) -> str:
    """The metric to plot: the one given, or the only one there is.

    Raises:
        ValueError: nsight-python's errors: several metrics and none named, none
            at all, or the named one is not in the results.
    """
    found = list(dict.fromkeys(frame["Metric"])) if "Metric" in frame else []
    if metric is None:
        if len(found) > 1:
            msg = (
                f"Cannot visualize multiple metrics ({len(found)} > 1) with the "
                "@nsight.analyze.plot decorator. Please specify a metric to plot. "
                f"The metrics found are: {found}"
            )
            raise ValueError(msg)
        if not found:
            msg = (
                "No metrics found in the profile results. Please ensure that the "
                "profiler is configured correctly."
            )
            raise ValueError(msg)
        return str(found[0])
    if metric not in found:
        msg = (
            f"Metric '{metric}' not found in the profile results. Please check the "
            f"metric name and try again. The metrics found are: {found}."
        )
        raise ValueError(msg)
    return metric


def plot(  # noqa: PLR0913  (nsight-python's signature)
    filename: str = "plot.png",
    metric: str | None = None,
    *,
    title: str = "Nsight Analyze Kernel Plot Results",
    ylabel: str | None = None,
    annotate_points: bool = False,
    show_aggregate: str | None = None,
    plot_type: Literal["line", "bar"] = "line",
    plot_width: int = 6,
    plot_height: int = 4,
    row_panels: Sequence[str] | None = None,
    col_panels: Sequence[str] | None = None,
    x_keys: Sequence[str] | None = None,
    print_data: bool = False,
    variant_fields: Sequence[str] | None = None,
    variant_annotations: Sequence[str] | None = None,
    plot_callback: Callable[[Any], None] | None = None,
) -> Callable[[Callable[..., ProfileResults]], Callable[..., ProfileResults]]:
    """Plot the results of an ``analyze.kernel`` function each time it is called.

    The parameters are nsight-python 1.1.0's (``plot_width``/``plot_height`` in
    inches of 100 px per panel); see the module docstring for what is drawn.

    Raises:
        ValueError: ``plot_type`` is neither ``line`` nor ``bar``, or
            ``show_aggregate`` is neither ``avg``, ``geomean`` nor None (now, at
            decoration); at the call, the metric cannot be chosen.
    """
    if plot_type not in {"line", "bar"}:
        msg = f"Invalid plot_type {plot_type!r}. Expected 'line' or 'bar'."
        raise ValueError(msg)
    if show_aggregate not in {None, "avg", "geomean"}:
        msg = f"Invalid show_aggregate {show_aggregate!r}. Expected 'avg' or 'geomean'."
        raise ValueError(msg)

    def decorator(func: Callable[..., ProfileResults]) -> Callable[..., ProfileResults]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> ProfileResults:  # noqa: ANN401
            result = func(*args, **kwargs)
            frame = result.to_dataframe()
            chosen = legalize_metric(frame, metric)
            fig = plot_figure(
                frame,
                chosen,
                title=title,
                ylabel=ylabel or "",
                annotate_points=annotate_points,
                show_avg=show_aggregate == "avg",
                show_geomean=show_aggregate == "geomean",
                plot_type=plot_type,
                size=(plot_width, plot_height),
                panels=(list(row_panels or ()), list(col_panels or ())),
                x_keys=x_keys,
                variants=(list(variant_fields or ()), list(variant_annotations or ())),
            )
            styled = None if plot_callback is None else _call_back(plot_callback, fig)
            result.figure = fig
            if print_data:
                shown = frame[frame["Metric"] == chosen]
                say("Aggregated Data (Average value and Number of Runs):")
                say(shown.to_string(index=False))
            _show(fig)
            if filename and styled is not None:  # as the callback styled it
                from nsight_lab.figures.mpl_figure import save_png

                save_png(styled, filename, scale=PNG_SCALE)
            elif filename:
                _write(fig, filename)
            return result

        return wrapper

    return decorator


def _call_back(callback: Callable[[Any], None], fig: go.Figure) -> Any:  # noqa: ANN401
    """Hand ``fig`` to the user's callback, or, written for matplotlib, its drawing.

    nsight-python hands the callback a matplotlib figure: a callback that fails on
    the plotly figure with an ``AttributeError`` (``fig.suptitle``, ``get_axes``)
    gets the same figure drawn with matplotlib (:mod:`nsight_lab.figures.mpl_figure`),
    and
    the PNG is that drawing as it styled it.

    Returns:
        The matplotlib figure the callback styled, or None (it took the plotly
        figure, or no matplotlib drawing could be made: then skipped, with a
        warning).
    """
    from nsight_lab.figures import mpl_figure

    try:
        callback(fig)
    except AttributeError as exc:
        why = f"plot_callback raised AttributeError on the plotly figure ({exc})"
        if not mpl_figure.available():
            warn_at_user(
                f"{why}; nsight-lab hands a matplotlib one only where matplotlib is "
                "installed (pip install matplotlib): the callback was skipped",
                RuntimeWarning,
            )
            return None
        try:
            drawn = mpl_figure.draw(fig)
        except mpl_figure.UnsupportedFigureError as unsupported:
            warn_at_user(
                f"{why}; {unsupported}: the callback was skipped", RuntimeWarning
            )
            return None
        callback(drawn)
        return drawn
    return None


def _show(fig: go.Figure) -> None:
    """Show ``fig`` in the notebook, if this runs in one."""
    if in_notebook():
        from IPython.display import display

        display(fig)


def _write(fig: go.Figure, filename: str) -> None:
    """Write ``fig`` as a PNG at ``filename`` (its own size).

    Through kaleido when it can export here, else drawn from the same figure with
    matplotlib (nsight-python's own renderer, so present wherever it ran), with a
    note saying so.

    Raises:
        StaticExportError: Neither kaleido with a browser nor matplotlib can write
            it (one line saying what to install), or the export failed.
    """
    from nsight_lab.figures import StaticExportError, mpl_figure, write_png

    width = int(fig.layout.width or 800)
    height = int(fig.layout.height or 600)
    try:
        write_png(fig, filename, width=width, height=height, scale=PNG_SCALE)
    except StaticExportError as exc:
        if not exc.unavailable or not mpl_figure.available():
            raise
        try:
            mpl_figure.write_png(fig, filename, scale=PNG_SCALE)
        except (ImportError, mpl_figure.UnsupportedFigureError) as why:
            msg = f"{exc}; matplotlib could not draw it either: {why}"
            raise StaticExportError(msg) from why
        say(  # a note, as the CSV files' "Refer to"
            f"[nsight-lab] drew {filename!r} with matplotlib: plotly's PNG export "
            f"is unavailable here ({exc})"
        )


def _label(fields: Sequence[str], row: Any) -> str:  # noqa: ANN401  (a pandas row)
    return ", ".join(f"{field}={row[field]}" for field in fields)


def _expand_variants(
    frame: pd.DataFrame, fields: list[str], annotations: list[str]
) -> pd.DataFrame:
    """One region per value of ``fields`` for the regions in ``annotations``."""
    import pandas as pd

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
    from plotly.subplots import make_subplots

    rows_by, cols_by = panels
    data = frame[frame["Metric"] == metric].copy()
    excluded = set(rows_by) | set(cols_by) | set(variants[0])
    x_fields = _x_fields(_param_fields(data), excluded, x_keys)
    data["Configuration"] = [_label(x_fields, row) for _, row in data.iterrows()]
    data = _expand_variants(data, *variants)
    row_values = _distinct(data, rows_by)
    col_values = _distinct(data, cols_by)
    titles = [
        "<br>".join(
            [f"{f}={v}" for f, v in zip(rows_by, rv, strict=True)]
            + [f"{f}={v}" for f, v in zip(cols_by, cv, strict=True)]
        )
        for rv in row_values
        for cv in col_values
    ]
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
            panel = data
            for f, v in [
                *zip(rows_by, rv, strict=True),
                *zip(cols_by, cv, strict=True),
            ]:
                panel = panel[panel[f] == v]
            _draw_panel(fig, panel, annotations, style, (r, c))
    fig.update_layout(
        title={"text": f"{title}<br><sup>{_hardware(data)}</sup>"},
        barmode="group",
        legend_title_text="Annotation",
        width=int(max(size[0] * len(col_values), 8) * PX_PER_INCH),
        height=int(max(size[1] * len(row_values), 6) * PX_PER_INCH),
    )
    fig.update_yaxes(
        title_text=_ylabel(data, metric, ylabel), col=1, rangemode="tozero"
    )
    return fig


def _draw_panel(
    fig: go.Figure,
    panel: pd.DataFrame,
    annotations: list[str],
    style: _Style,
    cell: tuple[int, int],
) -> None:
    """One panel: a trace per region, then the aggregates after a dashed line."""
    import plotly.graph_objects as go

    r, c = cell
    configs = list(dict.fromkeys(panel["Configuration"]))
    extra = [
        n for n, on in (("Avg", style.show_avg), ("Geomean", style.show_geomean)) if on
    ]
    for annotation in annotations:
        part = panel[panel["Annotation"] == annotation]
        if part.empty:
            continue
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
