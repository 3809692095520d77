"""The summary tables of a session from its running statistics, without a DataFrame.

What every view shows, from :class:`~nsight_lab.viewmodel.regions.RegionStats`:
built from numbers the view model already holds, in time that grows with the
regions, not the runs. Each row's text comes from
:mod:`~nsight_lab.viewmodel.summary_cells`, the one implementation of a summary row,
as the results frame's summary (:mod:`nsight_lab.results.frame_summary`) does from its
columns (``tests/viewmodel`` checks both give the same rows on the H200 fixture and
on generated sessions).

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

from nsight_lab.analysis.compare import metric_unit
from nsight_lab.text.units import UNDEFINED
from nsight_lab.viewmodel.summary_cells import (
    COUNTER_COLUMNS,
    RegionValues,
    counter_cells,
    duration_column,
    flop_rate,
    region_cells,
    text,
    without_empty_columns,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nsight_lab.analysis.validity import Validity
    from nsight_lab.contract.records import JsonScalar, SessionInfo
    from nsight_lab.roofline.placement import Placement, RegionWork
    from nsight_lab.viewmodel.regions import RegionStats
    from nsight_lab.viewmodel.streaming import StreamingSummary
    from nsight_lab.viewmodel.summary_cells import Clock

__all__ = [
    "MedianBar",
    "counter_table",
    "median_bars",
    "param_names",
    "region_rows",
]


def param_names(session: SessionInfo | None) -> list[str]:
    """The config's parameters the tables show (as the stored results' frame)."""
    if session is None:
        return []
    params = [str(p) for p in (session.options.get("params") or {})]
    if not params and session.configs:
        params = [str(p) for p in session.configs[0]]
    return params


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
            "TFLOP/s": flop_rate(
                w.achieved_flops_per_s / 1e12, w.flops_source, w.flops
            ),
            "Bytes": w.bytes_source,
            "FLOPs": w.flops_source,
        }
    for p in placements:
        out[(p.annotation, p.config_index)] = {
            "GB/s": p.achieved_bytes_per_s / 1e9,
            "TFLOP/s": flop_rate(
                p.achieved_flops_per_s / 1e12, p.flops_source, p.flops
            ),
            "% of roof": p.pct_of_roof,
            "Bound": p.bound,
            "Bytes": p.bytes_source,
            "FLOPs": p.flops_source,
        }
    return out


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


def region_rows(
    session: SessionInfo | None,
    groups: Sequence[RegionStats],
    works: Sequence[RegionWork],
    placements: Sequence[Placement],
    checks: Mapping[tuple[str, int], Validity] | None = None,
) -> list[dict[str, str]]:
    """The region table: one row of text cells per region and config.

    :data:`~.summary_cells.REGION_COLUMNS` (``x target`` with
    ``--normalize-against``), less the columns with nothing in any row. ``works``
    and ``placements`` give the roofline columns, ``checks`` GPU busy and Flag.

    Raises:
        Nothing.
    """
    params = param_names(session)
    column = duration_column(session.backend if session else "")
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
        values = RegionValues(
            head,
            _median(g.duration.median, divisor, target),
            target=target,
            rsd_pct=g.duration.rsd_pct,
            busy=(check and check.busy_text) or UNDEFINED,
            gbps=cells.get("GB/s"),
            tflops=cells.get("TFLOP/s"),
            pct_of_roof=cells.get("% of roof"),
            bound=cells.get("Bound"),
            flag=(check and check.flag_words) or UNDEFINED,
            runs=g.duration.n,
            clock=_clock(g.sm_clock),
            throttled=g.throttled,
            bytes_source=cells.get("Bytes"),
            flops_source=cells.get("FLOPs"),
        )
        rows.append(region_cells(values, column))
        rows.extend(_rank_rows(g, head, column, (divisor, target)))
    return without_empty_columns(rows, keep={"Region", *params})


def _rank_rows(
    g: RegionStats,
    head: dict[str, str],
    column: str,
    scale: tuple[float, str | None],
) -> list[dict[str, str]]:
    """Each rank's row under its region's span row (no roofline of its own)."""
    divisor, target = scale
    return [
        region_cells(
            RegionValues(
                {**head, "Rank": str(rank), "Device": text(stats.device)},
                _median(stats.duration.median, divisor, target),
                target=target,
                rsd_pct=stats.duration.rsd_pct,
                runs=stats.duration.n,
                clock=_clock(stats.sm_clock),
                throttled=int(stats.throttled),
            ),
            column,
        )
        for rank, stats in sorted(g.ranks.items())
    ]


def _head(g: RegionStats, params: Sequence[str], *, ranked: bool) -> dict[str, str]:
    """A row's region, parameters and (a multi-rank session's span row) devices."""
    head = {"Region": text(g.annotation)}
    head.update({p: text(g.config.get(p)) for p in params})
    if ranked:  # the span row, then each rank's
        devices = (g.ranks[r].device for r in sorted(g.ranks))
        head.update({"Rank": "span", "Device": ",".join(dict.fromkeys(devices))})
    return head


def _median(median: float, divisor: float, target: str | None) -> float:
    """The median duration, or its ratio to the target region's."""
    return median / divisor if target is not None else median


def _clock(clock: StreamingSummary) -> Clock:
    """The SM clock's median, lowest and highest (none without a reading)."""
    return (clock.median, clock.min, clock.max) if clock.n else (None, None, None)


def _counter_row(  # noqa: PLR0913, PLR0917  (one row's parts)
    g: RegionStats,
    metric: str,
    stats: StreamingSummary,
    params: Sequence[str],
    divisor: float,
    unit: str,
) -> dict[str, Any]:
    return counter_cells(
        [text(g.annotation), *(text(g.config.get(p)) for p in params)],
        metric,
        _ratio(stats.median, divisor) if stats.n else math.nan,
        stats.max if stats.n else math.nan,  # MaxValue is not normalized
        unit,
        rsd_pct=stats.rsd_pct,
        runs=stats.n,
    )


def counter_table(
    session: SessionInfo | None,
    groups: Sequence[RegionStats],
    metric_order: Mapping[str, int],
    derived: Mapping[str, float | str] | None = None,
) -> dict[str, Any]:
    """The counter table: every metric but the duration, per region and config.

    ``{"columns", "rows", "zero"}`` as the results frame's
    (:func:`nsight_lab.results.frame_summary.summary_counters`), each row ``{"cells",
    "zero"}`` (``zero``: the counter read zero in every run). ``metric_order``
    numbers the metrics in the order they first came; ``derived`` gives the
    ``--derive`` metrics' units, in their order: their rows follow every measured
    one (the frame's order).

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
                rows.append(_counter_row(g, metric, stats, params, divisor, unit))
    units = derived or {}
    for g, base in ordered:
        for name in (n for n in units if n in g.derived):
            divisor = _divisor(base.derived if base else None, name)
            if divisor is not None:
                given = units[name]
                unit = given if isinstance(given, str) else metric_unit(name)
                rows.append(
                    _counter_row(g, name, g.derived[name], params, divisor, unit)
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
