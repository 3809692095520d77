"""A figure of thousands of traces, capped to the points a chart can draw.

Issue 29: a session of thousands of configs draws one group of traces per config; a
figure of more than :data:`FEW_TRACES` traces keeps its first traces within the point
budget, :data:`~nsight_lab.contract.points.MAX_POINTS` points, and says in
``layout.meta.capped`` what it left out (the summary table has every config). Moved
out of :mod:`~nsight_lab.viewmodel.cache` unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsight_lab.contract.points import MAX_POINTS

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["FEW_TRACES", "capped"]

FEW_TRACES = 60
"""A figure of at most this many traces (20 groups) is never capped."""


def _points(trace: dict[str, Any]) -> int:
    """A trace's points (its longest of x and y; 1 for a trace of neither)."""
    sizes = [len(v) for k in ("x", "y") if isinstance(v := trace.get(k), list | tuple)]
    return max(sizes, default=1)


def capped(
    figures: dict[str, dict[str, Any]],
    max_points: int = MAX_POINTS,
    left_out: Mapping[str, tuple[int, int]] | None = None,
) -> dict[str, dict[str, Any]]:
    """``figures`` with at most ``max_points`` points each (whole traces, in order).

    Only a figure of more than :data:`FEW_TRACES` traces (thousands of configs) is
    capped: it keeps its first traces whose points fit, at least one, and says in
    ``meta.capped`` how many traces and points it left out; the summary table has
    every config. Others are the same objects, each trace already within its own
    ``max_points``. ``left_out``: per figure, ``(traces, points)`` never drawn into
    it (a stored session's groups past the budget), counted in its note.

    Raises:
        Nothing.
    """
    out: dict[str, dict[str, Any]] = {}
    for name, figure in figures.items():
        traces = figure.get("data") or []
        more, more_points = (left_out or {}).get(name, (0, 0))
        total = sum(_points(t) for t in traces)
        if (total <= max_points or len(traces) <= FEW_TRACES) and not more:
            out[name] = figure
            continue
        kept: list[dict[str, Any]] = []
        points = 0
        for trace in traces:
            size = _points(trace)
            if kept and points + size > max_points:
                break
            kept.append(trace)
            points += size
        layout = dict(figure.get("layout") or {})
        meta = layout.get("meta")
        layout["meta"] = {
            **(meta if isinstance(meta, dict) else {}),
            "capped": (
                f"the first {len(kept):,} of {len(traces) + more:,} traces "
                f"({points:,} of {total + more_points:,} points; at most "
                f"{max_points:,} are drawn); the summary table has every config"
            ),
        }
        out[name] = {**figure, "data": kept, "layout": layout}
    same = all(out[name] is figures[name] for name in figures)
    return figures if same else out
