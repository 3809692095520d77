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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from nsight_lab.api.kernel import in_notebook
from nsight_lab.api.plot_figure import plot_figure
from nsight_lab.results import warn_at_user
from nsight_lab.session.output import api_say

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import pandas as pd
    import plotly.graph_objects as go

    from nsight_lab.api.results import ProfileResults

__all__ = ["col_panel", "legalize_metric", "plot", "plot_figure", "row_panel"]

PNG_SCALE = 1.5
"""Pixel density of the PNG ``analyze.plot`` writes (its figure's size x this)."""


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

    given = _PlotArgs(**locals())

    def decorator(func: Callable[..., ProfileResults]) -> Callable[..., ProfileResults]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> ProfileResults:  # noqa: ANN401
            result = func(*args, **kwargs)
            _plot_results(result, given)
            return result

        return wrapper

    return decorator


@dataclass(frozen=True)
class _PlotArgs:
    """:func:`plot`'s arguments, as given (its parameters, in its order)."""

    filename: str
    metric: str | None
    title: str
    ylabel: str | None
    annotate_points: bool
    show_aggregate: str | None
    plot_type: Literal["line", "bar"]
    plot_width: int
    plot_height: int
    row_panels: Sequence[str] | None
    col_panels: Sequence[str] | None
    x_keys: Sequence[str] | None
    print_data: bool
    variant_fields: Sequence[str] | None
    variant_annotations: Sequence[str] | None
    plot_callback: Callable[[Any], None] | None


def _plot_results(result: ProfileResults, given: _PlotArgs) -> None:
    """Draw one call's results: keep the figure, show it, write the PNG, print data.

    Raises:
        ValueError: The metric cannot be chosen.
    """
    frame = result.to_dataframe()
    chosen = legalize_metric(frame, given.metric)
    fig = plot_figure(
        frame,
        chosen,
        title=given.title,
        ylabel=given.ylabel or "",
        annotate_points=given.annotate_points,
        show_avg=given.show_aggregate == "avg",
        show_geomean=given.show_aggregate == "geomean",
        plot_type=given.plot_type,
        size=(given.plot_width, given.plot_height),
        panels=(list(given.row_panels or ()), list(given.col_panels or ())),
        x_keys=given.x_keys,
        variants=(
            list(given.variant_fields or ()),
            list(given.variant_annotations or ()),
        ),
    )
    callback = given.plot_callback
    styled = None if callback is None else _call_back(callback, fig)
    result.figure = fig
    if given.print_data:
        shown = frame[frame["Metric"] == chosen]
        api_say("Aggregated Data (Average value and Number of Runs):")
        api_say(shown.to_string(index=False))
    _show(fig)
    if given.filename and styled is not None:  # as the callback styled it
        from nsight_lab.figures.mpl_figure import save_png  # noqa: PLC0415  (matplotlib)

        save_png(styled, given.filename, scale=PNG_SCALE)
    elif given.filename:
        _write(fig, given.filename)


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
    from nsight_lab.figures import mpl_figure  # noqa: PLC0415  (plotly/matplotlib)

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
        from IPython.display import display  # noqa: PLC0415  (in a notebook only)

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
    from nsight_lab.figures import (  # noqa: PLC0415  (plotly/matplotlib)
        StaticExportError,
        mpl_figure,
        write_png,
    )

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
        api_say(  # a note, as the CSV files' "Refer to"
            f"[nsight-lab] drew {filename!r} with matplotlib: plotly's PNG export "
            f"is unavailable here ({exc})"
        )
