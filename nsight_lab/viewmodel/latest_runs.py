"""A finished session's first view: every run's statistics, its latest runs charted.

The server's first view of a stored session fed every run through the live charts
(issue 29: 212 s and 388 MB at 10,000 configs x 100 runs, on a loaded 2-core
machine). :func:`first_view` instead takes every run into the view model's
statistics with no chart work (:class:`NoLiveFigures`, as ``show`` does), then
:func:`chart_latest` charts the runs its windows kept (the latest of each region
and config), group by group, until the duration chart is at the points budget:
the chart work is bounded by the budget, not by the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsight_lab.figures import LiveFigures
from nsight_lab.stats.mean import RunningMean

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from nsight_lab.contract.records import RunRecord
    from nsight_lab.viewmodel.session import SessionViewModel

__all__ = ["NoLiveFigures", "chart_latest", "first_view"]


class NoLiveFigures(LiveFigures):
    """Live charts that take no points: a model read for its tables alone.

    Appending every run's point to the duration and clock traces is half of
    what :meth:`SessionViewModel.add` costs per run (22 of 40 us); ``show``
    prints tables, which never read the live traces.
    """

    def add(self, records: Sequence[RunRecord]) -> dict[str, dict[str, Any]]:
        """Take nothing; no appends.

        Raises:
            Nothing.
        """
        del records
        return {}


def first_view(
    model: SessionViewModel,
    catch_up: Callable[[], object],
    max_points: int,
) -> tuple[int, int]:
    """A finished session's new model: every run's statistics, then its latest charted.

    ``catch_up`` feeds ``model`` every stored run (the server's paged reads) while
    its live charts take none (:class:`NoLiveFigures`: per-run chart work was
    most of the first view's 212 s at 10,000 configs x 100 runs); then
    :func:`chart_latest` draws the runs the model's windows kept. Returns what
    :func:`chart_latest` left out, for :func:`~nsight_lab.viewmodel.cache.capped`.

    Raises:
        NotFoundError: The session is gone.
        StoreError: The store cannot be read.
    """
    live = model.live
    model.live = NoLiveFigures(with_config=live.with_config)
    try:
        catch_up()
    finally:
        model.live = live
    return chart_latest(model, max_points)


def chart_latest(model: SessionViewModel, max_points: int) -> tuple[int, int]:
    """Feed ``model``'s live charts its windows' runs, group by group, within budget.

    Each (region, config)'s window holds its latest runs (at most the model's
    ``max_points``); groups are charted in the order they first ran until the
    duration chart holds ``max_points`` points (what :func:`~nsight_lab.viewmodel.
    cache.capped` would keep of all of them). Returns ``(traces, points)`` of the
    groups not charted, counted as the duration chart would hold them, so the
    figure's ``meta.capped`` states the whole session's totals.

    Raises:
        Nothing.
    """
    groups = model.regions
    data = model.live.figures["duration"]["data"]
    fed = points = 0
    for group in groups:
        if fed and points >= max_points:
            break
        before = len(data)
        model.live.add(list(group.window))
        points += sum(_trace_points(t) for t in data[before:])
        fed += 1
    rest = groups[fed:]
    if not rest:
        return (0, 0)
    per_group = len(data) // max(fed, 1)
    return per_group * len(rest), sum(_window_points(g.window) for g in rest)


def _trace_points(trace: dict[str, Any]) -> int:
    x = trace.get("x")
    return len(x) if isinstance(x, list | tuple) else 0


def _window_points(window: Sequence[RunRecord]) -> int:
    """A group's points in the duration chart: its window's runs, its band's edges."""
    band = RunningMean()
    edges = sum(band.add(r.duration_ns / 1e3) is not None for r in window)
    return len(window) + 2 * edges
