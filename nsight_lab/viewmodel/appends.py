"""Live chart appends kept by version, and merged: what a view missed (issue 32).

:class:`~nsight_lab.figures.LiveFigures` turns new runs into *appends* (new traces,
points to ``extendTraces``). :class:`AppendLog` keeps those of each version of a
view model (the server's, :mod:`~nsight_lab.viewmodel.delta`; the inline widget's,
:mod:`nsight_lab.views.live`) up to :data:`LOG_POINTS` points, and
:func:`merge_appends` folds those since a version into one change per chart, what
applying each in turn gives (:func:`apply_appends`, as ``src/charts/append.ts``).
"""

from __future__ import annotations

import copy
from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "LOG_POINTS",
    "AppendLog",
    "Change",
    "apply_appends",
    "merge_appends",
    "merge_layout",
]

LOG_POINTS = 150_000
"""Points of appends a log keeps; a client further behind gets the full view. A
5,000 runs/s session of four regions appends about 3.5 points a run (the run's
point, its band's two edges, half a clock point): 150,000 is about 8.5 s of it, so
a panel whose refresh waited a few seconds on a loaded machine, or a view the
follower published late, still gets a delta (at 50,000, 2.9 s, 100 of ~11,000
refreshes of issue 32's benchmark were whole views, 0.9 MB each). About 20 MB of
lists at most per session viewed."""
Change = dict[str, Any]
"""One chart's change: appends (``traces``, ``extend``, ``max_points``, ``layout``)
or ``{"figure": ...}``."""


def _points(change: Change) -> int:
    """Points an append adds (its x values), and one per new trace."""
    added = len(change.get("traces") or ())
    for op in change.get("extend") or ():
        added += sum(len(column) for column in op["data"].get("x", ()))
    return added


def merge_appends(changes: Iterable[Mapping[str, Change]]) -> dict[str, Change]:
    """The appends of successive versions as one, chart by chart.

    New traces in order; per (trace, path), the points in order, the latest
    ``max_points`` kept (what applying each in turn leaves); extends grouped by
    their paths. ``layout`` updates are merged one level deep, as the front end
    merges them; ``figure`` (a chart drawn whole) replaces what came before.

    Raises:
        Nothing.
    """
    out: dict[str, dict[str, Any]] = {}
    for change_set in changes:
        for name, change in change_set.items():
            if "figure" in change:
                out[name] = {"figure": change["figure"]}
                continue
            into = out.setdefault(name, {"traces": [], "columns": {}})
            if "figure" in into:  # appends after a redraw: apply them to it
                into["figure"] = apply_appends(copy.deepcopy(into["figure"]), change)
                continue
            into["traces"].extend(change.get("traces") or ())
            into["max_points"] = change.get("max_points")
            for op in change.get("extend") or ():
                for k, index in enumerate(op["indices"]):
                    paths = into["columns"].setdefault(index, {})
                    for path, columns in op["data"].items():
                        paths.setdefault(path, []).extend(columns[k])
            if change.get("layout"):
                into["layout"] = merge_layout(
                    into.get("layout") or {}, change["layout"]
                )
    return {name: _as_change(into) for name, into in out.items()}


def _as_change(into: dict[str, Any]) -> Change:
    if "figure" in into:
        return {"figure": into["figure"]}
    most = into.get("max_points")
    groups: dict[tuple[str, ...], list[int]] = {}
    for index, paths in into["columns"].items():
        groups.setdefault(tuple(paths), []).append(index)
    extend = []
    for paths, indices in groups.items():
        data = {
            path: [_latest(into["columns"][index][path], most) for index in indices]
            for path in paths
        }
        extend.append({"indices": indices, "data": data})
    change: Change = {"traces": into["traces"], "extend": extend, "max_points": most}
    if "layout" in into:
        change["layout"] = into["layout"]
    return change


def _latest(values: list[Any], most: int | None) -> list[Any]:
    return values[-most:] if most is not None and len(values) > most else values


def merge_layout(
    layout: Mapping[str, Any], update: Mapping[str, Any]
) -> dict[str, Any]:
    """``mergeLayout`` of ``src/charts/append.ts``: object keys merged one level."""
    out = dict(layout)
    for key, value in update.items():
        before = out.get(key)
        both = isinstance(before, dict) and isinstance(value, dict)
        out[key] = {**before, **value} if both else copy.deepcopy(value)  # type: ignore[dict-item]
    return out


def apply_appends(figure: dict[str, Any], change: Mapping[str, Any]) -> dict[str, Any]:
    """Apply one chart's change to ``figure`` in place (``appendToFigure``); return it.

    Raises:
        IndexError: An extend names a trace the figure lacks (a bug).
    """
    if "figure" in change:
        whole = copy.deepcopy(change["figure"])
        figure.clear()
        figure.update(whole)
        return figure
    data = figure.setdefault("data", [])
    data.extend(copy.deepcopy(list(change.get("traces") or ())))
    most = change.get("max_points")
    for op in change.get("extend") or ():
        for k, index in enumerate(op["indices"]):
            for path, columns in op["data"].items():
                node = data[index]
                *parents, leaf = path.split(".")
                for part in parents:
                    node = node.setdefault(part, {})
                target = node.setdefault(leaf, [])
                target.extend(columns[k])
                if most is not None and len(target) > most:
                    del target[: len(target) - most]
    if change.get("layout"):
        figure["layout"] = merge_layout(figure.get("layout") or {}, change["layout"])
    return figure


class AppendLog:
    """Appends by version, at most :data:`LOG_POINTS` points: what a view missed.

    Attributes:
        oldest: The oldest version a delta may start from (every append after it
            is kept).
    """

    def __init__(self, budget: int | None = None) -> None:
        """Start empty, at version 0; keep ``budget`` points (:data:`LOG_POINTS`)."""
        self.budget = LOG_POINTS if budget is None else budget
        self.oldest = 0
        self._entries: deque[tuple[int, dict[str, Change], int]] = deque()
        self._points = 0
        self._merged: dict[tuple[int, int], dict[str, Change]] = {}

    def record(self, version: int, appends: Mapping[str, Change]) -> None:
        """Keep the appends that led to ``version``; drop the oldest past the budget."""
        if not appends:
            return
        points = sum(_points(change) for change in appends.values())
        self._entries.append((version, dict(appends), points))
        self._points += points
        while self._points > self.budget:  # a delta that large: the full view
            dropped, _, size = self._entries.popleft()
            self._points -= size
            self.oldest = dropped
        self._merged.clear()

    def reset(self, version: int) -> None:
        """Forget every append: deltas start from ``version`` on."""
        self._entries.clear()
        self._points = 0
        self.oldest = version
        self._merged.clear()

    def since(self, since: int, version: int) -> dict[str, Change] | None:
        """The appends from ``since`` to ``version`` merged; None when not kept.

        Merged once per (since, version): panels that refresh together share it.
        """
        if since < self.oldest or since > version:
            return None
        key = (since, version)
        merged = self._merged.get(key)
        if merged is None:
            fresh = (a for v, a, _ in self._entries if since < v <= version)
            merged = self._merged[key] = merge_appends(fresh)
        return merged
