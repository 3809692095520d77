"""The summary tables of a session from its running statistics, without a DataFrame.

The rows of :func:`nsight_lab.results.summary.summary_rows` and
:func:`~nsight_lab.results.summary.summary_counters` (the results frame's), from
:class:`~nsight_lab.viewmodel.regions.RegionStats`: built from numbers the view model
already holds, in time that grows with the regions, not the runs (``tests/viewmodel``
checks both give the same rows on the H200 fixture and on generated sessions).

What is exact and what is not: counts, means, spreads, the SM clock and throttled
runs are over every run; medians are exact while a region has at most
:data:`~nsight_lab.viewmodel.streaming.EXACT_VALUES` runs, then within 0.1 %; the
roofline columns (GB/s, TFLOP/s, % of roof, bound) are over the region's latest
runs (the view model's window: every run of a session that fits in it). A
multi-rank session's region has its span row, then a row per rank. ``--derive``
metrics are counter rows after the measured ones, as the frame's, where the view
model has their values
(:meth:`~nsight_lab.viewmodel.session.SessionViewModel.add_derived`: in the kernel,
a user function's values as the frame computed them; from the store, the built-in
``tflops``/``gbps`` only: user functions and values are not stored).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nsight_lab.analysis.compare import metric_label, metric_unit
from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.text.units import (
    UNDEFINED,
    format_clock,
    format_count,
    format_duration,
    format_number,
    format_percent,
    format_quantity,
)
from nsight_lab.text.visible import printable

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nsight_lab.analysis.validity import Validity
    from nsight_lab.contract.records import JsonScalar, SessionInfo
    from nsight_lab.roofline.placement import Placement, RegionWork
    from nsight_lab.viewmodel.regions import RankStats, RegionStats
    from nsight_lab.viewmodel.streaming import StreamingSummary

__all__ = [
    "COUNTER_COLUMNS",
    "REGION_COLUMNS",
    "MedianBar",
    "counter_table",
    "median_bars",
    "param_names",
    "region_rows",
]

REGION_COLUMNS = (
    "Region", "Duration", "RSD", "GPU busy", "GB/s", "TFLOP/s", "% of roof", "Bound",
    "Flag", "Runs", "SM clock", "Throttled", "Bytes", "FLOPs",
)  # fmt: skip
"""The region table's columns (the config's parameters follow ``Region``):
``Duration`` is the median, ``GPU busy`` the GPU's share of the region's span,
``Flag`` the kinds of what cannot be true or is not usable, in words
(:mod:`nsight_lab.analysis.validity`, each flag said in full in the checks),
``Bytes``/``FLOPs`` say measured or modelled."""
COUNTER_COLUMNS = ("Region", "Metric", "Median", "RSD", "Runs")
"""The counter table's columns (the config's parameters follow ``Region``)."""


def param_names(session: SessionInfo | None) -> list[str]:
    """The config's parameters the tables show (as the stored results' frame)."""
    if session is None:
        return []
    params = [str(p) for p in (session.options.get("params") or {})]
    if not params and session.configs:
        params = [str(p) for p in session.configs[0]]
    return params


def _text(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return UNDEFINED
    return printable(value)


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


def _normalize_target(
    session: SessionInfo | None, groups: Sequence[RegionStats]
) -> str | None:
    target = session.options.get("normalize_against") if session else None
    if not isinstance(target, str) or not any(g.annotation == target for g in groups):
        return None
    return target


def _work_columns(
    works: Sequence[RegionWork], placements: Sequence[Placement]
) -> dict[tuple[str, int], dict[str, Any]]:
    """The roofline columns per (region, config): the work, and the placement's."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for w in works:
        out[(w.annotation, w.config_index)] = {
            "GB/s": w.achieved_bytes_per_s / 1e9,
            "TFLOP/s": _flop_rate(w.achieved_flops_per_s, w.flops, w.flops_source),
            "Bytes": w.bytes_source,
            "FLOPs": w.flops_source,
        }
    for p in placements:
        out[(p.annotation, p.config_index)] = {
            "GB/s": p.achieved_bytes_per_s / 1e9,
            "TFLOP/s": _flop_rate(p.achieved_flops_per_s, p.flops, p.flops_source),
            "% of roof": p.pct_of_roof,
            "Bound": p.bound,
            "Bytes": p.bytes_source,
            "FLOPs": p.flops_source,
        }
    return out


def _flop_rate(per_s: float, flops: float, source: str) -> float | None:
    """TFLOP/s; None (undefined, never 0) where the model counted no FLOPs.

    A 0 there is no measurement (ncu read 11.86 TFLOP/s for the fixture's
    layernorm); :func:`nsight_lab.analysis.validity.unmodelled_note` says why.
    """
    if source == "modelled" and not flops:
        return None
    return per_s / 1e12


def _ordered(groups: Sequence[RegionStats]) -> list[RegionStats]:
    """Region by region in the order they first ran, config by config."""
    first: dict[str, int] = {}
    for g in groups:
        first.setdefault(g.annotation, len(first))
    return sorted(groups, key=lambda g: (first[g.annotation], g.config_index))


def _target_of(
    groups: Sequence[RegionStats], target: str | None
) -> dict[int, RegionStats]:
    return {g.config_index: g for g in groups if g.annotation == target}


def _throttled(throttled: int, runs: int) -> str:
    if not throttled:
        return "none"
    return f"{throttled} of {runs}" if runs else str(throttled)


def region_rows(
    session: SessionInfo | None,
    groups: Sequence[RegionStats],
    works: Sequence[RegionWork],
    placements: Sequence[Placement],
    checks: Mapping[tuple[str, int], Validity] | None = None,
) -> list[dict[str, str]]:
    """The region table: one row of text cells per region and config.

    As the frame's (:data:`REGION_COLUMNS`, ``x target`` with
    ``--normalize-against``), less the columns with nothing in any row. ``works``
    and ``placements`` give the roofline columns, ``checks`` GPU busy and Flag.

    Raises:
        Nothing.
    """
    params = param_names(session)
    backend = session.backend if session else ""
    label = metric_label(TIME_METRIC, backend)
    duration_column = "Duration (host timer)" if "host" in label else "Duration"
    target = _normalize_target(session, groups)
    targets = _target_of(groups, target)
    work = _work_columns(works, placements)
    ranked = any(g.ranked for g in groups)
    rows: list[dict[str, str]] = []
    for g in _ordered(groups):
        divisor = 1.0
        if target is not None:
            base = targets.get(g.config_index)
            if base is None:
                continue
            divisor = base.duration.median
        head = _head(g, params, ranked=ranked)
        cells = work.get((g.annotation, g.config_index), {})
        check = (checks or {}).get((g.annotation, g.config_index))
        rows.append(
            {
                **head,
                duration_column: _duration(g.duration.median, divisor, target),
                "RSD": format_percent(_finite(g.duration.rsd_pct)),
                "GPU busy": (check and check.busy_text) or UNDEFINED,
                "GB/s": format_number(cells.get("GB/s")),
                "TFLOP/s": format_number(cells.get("TFLOP/s")),
                "% of roof": format_percent(cells.get("% of roof")),
                "Bound": str(cells.get("Bound") or UNDEFINED),
                # The kinds only: each flag's sentence is said once, in the checks.
                "Flag": (check and check.flag_words) or UNDEFINED,
                "Runs": format_count(g.duration.n),
                "SM clock": _clock(g.sm_clock),
                "Throttled": _throttled(g.throttled, g.duration.n),
                "Bytes": str(cells.get("Bytes") or UNDEFINED),
                "FLOPs": str(cells.get("FLOPs") or UNDEFINED),
            }
        )
        rows.extend(
            _rank_row(head, rank, stats, (duration_column, divisor, target))
            for rank, stats in sorted(g.ranks.items())
        )
    return _without_empty_columns(rows, keep={"Region", *params})


def _head(g: RegionStats, params: Sequence[str], *, ranked: bool) -> dict[str, str]:
    """A row's region, parameters and (a multi-rank session's span row) devices."""
    head = {"Region": _text(g.annotation)}
    head.update({p: _text(g.config.get(p)) for p in params})
    if ranked:  # the span row, then each rank's
        devices = (g.ranks[r].device for r in sorted(g.ranks))
        head.update({"Rank": "span", "Device": ",".join(dict.fromkeys(devices))})
    return head


def _duration(median: float, divisor: float, target: str | None) -> str:
    if target is not None:
        return f"{format_number(_finite(median / divisor))}x {target}"
    return format_duration(_finite(median))


def _clock(clock: StreamingSummary) -> str:
    """The SM clock as every view shows it: median and range (:func:`format_clock`)."""
    if not clock.n:
        return UNDEFINED
    return format_clock(clock.median, clock.min, clock.max)


def _rank_row(
    head: dict[str, str],
    rank: int,
    stats: RankStats,
    duration: tuple[str, float, str | None],
) -> dict[str, str]:
    """One rank's row under its region's span row (no roofline of its own)."""
    column, divisor, target = duration
    runs = stats.duration.n
    return {
        **head,
        "Rank": str(rank),
        "Device": _text(stats.device),
        column: _duration(stats.duration.median, divisor, target),
        "RSD": format_percent(_finite(stats.duration.rsd_pct)),
        "GPU busy": UNDEFINED,
        "GB/s": UNDEFINED,
        "TFLOP/s": UNDEFINED,
        "% of roof": UNDEFINED,
        "Bound": UNDEFINED,
        "Flag": UNDEFINED,
        "Runs": format_count(runs),
        "SM clock": _clock(stats.sm_clock),
        "Throttled": _throttled(int(stats.throttled), runs),
        "Bytes": UNDEFINED,
        "FLOPs": UNDEFINED,
    }


def _without_empty_columns(
    rows: list[dict[str, str]], keep: set[str]
) -> list[dict[str, str]]:
    """``rows`` less the columns that read :data:`UNDEFINED` in every row."""
    if not rows:
        return rows
    empty = {
        column
        for column in rows[0]
        if column not in keep
        and not column.startswith("Duration")
        and all(row.get(column) == UNDEFINED for row in rows)
    }
    return [{k: v for k, v in row.items() if k not in empty} for row in rows]


def _counter_cells(  # noqa: PLR0913, PLR0917  (one row's parts)
    g: RegionStats,
    metric: str,
    stats: StreamingSummary,
    params: Sequence[str],
    divisor: float,
    unit: str,
) -> dict[str, Any]:
    median = _ratio(stats.median, divisor) if stats.n else math.nan
    top = stats.max if stats.n else math.nan  # MaxValue is not normalized
    zero = median == 0 and not (top and not math.isnan(top))
    cells = [
        _text(g.annotation),
        *(_text(g.config.get(p)) for p in params),
        _text(metric),
        format_quantity(_finite(median), unit),
        format_percent(_finite(stats.rsd_pct)),
        format_count(stats.n),
    ]
    return {"cells": cells, "zero": bool(zero)}


def counter_table(
    session: SessionInfo | None,
    groups: Sequence[RegionStats],
    metric_order: Mapping[str, int],
    derived: Mapping[str, float | str] | None = None,
) -> dict[str, Any]:
    """The counter table: every metric but the duration, per region and config.

    As :func:`nsight_lab.results.summary_counters` of the results frame:
    ``{"columns", "rows", "zero"}``, each row ``{"cells", "zero"}`` (``zero``: the
    counter read zero in every run). ``metric_order`` numbers the metrics in the
    order they first came; ``derived`` gives the ``--derive`` metrics' units, in
    their order: their rows follow every measured one (the frame's order).

    Raises:
        Nothing.
    """
    params = param_names(session)
    columns = ["Region", *params, *COUNTER_COLUMNS[1:]]
    target = _normalize_target(session, groups)
    targets = _target_of(groups, target)
    ordered = [
        (g, targets.get(g.config_index))
        for g in _ordered(groups)
        if target is None or g.config_index in targets
    ]
    rows = []
    for g, base in ordered:
        for metric in sorted(g.metrics, key=lambda m: metric_order.get(m, 0)):
            divisor = _divisor(base.metrics if base else None, metric)
            if divisor is not None:
                stats = g.metrics[metric]
                unit = metric_unit(metric)
                rows.append(_counter_cells(g, metric, stats, params, divisor, unit))
    units = derived or {}
    for g, base in ordered:
        for name in (n for n in units if n in g.derived):
            divisor = _divisor(base.derived if base else None, name)
            if divisor is not None:
                given = units[name]
                unit = given if isinstance(given, str) else metric_unit(name)
                rows.append(
                    _counter_cells(g, name, g.derived[name], params, divisor, unit)
                )
    return {"columns": columns, "rows": rows, "zero": sum(r["zero"] for r in rows)}


def _ratio(value: float, divisor: float) -> float:
    """``value / divisor`` as the frame's division: NaN for 0/0, ±inf for x/0."""
    if divisor == 0:
        return math.nan if value == 0 or math.isnan(value) else math.inf * value
    return value / divisor


@dataclass(frozen=True)
class MedianBar:
    """One region and config's median duration: a bar of the static page.

    Attributes:
        region: The region's name.
        config_index: The config's index.
        config: The config's parameters.
        median_ns: The median duration over every run (ns; NaN without one).
        runs: Runs with a duration.
    """

    region: str
    config_index: int
    config: Mapping[str, JsonScalar]
    median_ns: float
    runs: int


def median_bars(groups: Sequence[RegionStats]) -> list[MedianBar]:
    """Each region and config's median duration, region by region as they first ran.

    Raises:
        Nothing.
    """
    return [
        MedianBar(
            g.annotation, g.config_index, g.config, g.duration.median, g.duration.n
        )
        for g in _ordered(groups)
    ]


def _divisor(base: Mapping[str, StreamingSummary] | None, metric: str) -> float | None:
    """1, or the target region's median of ``metric`` (None: the target has none)."""
    if base is None:
        return 1.0
    other = base.get(metric)
    return None if other is None else other.median
