"""Records -> the results DataFrame: one row per region, metric and config.

The columns and their meanings are :mod:`nsight_lab.results`'s. :func:`to_dataframe`
groups the runs, summarises each group's values (:func:`nsight_lab.stats.summarize`),
then adds the roofline and normalization (:mod:`.columns`) and a multi-rank session's
per-rank rows (:mod:`.ranks`). The values per row and their checks are :mod:`.rows`'
(no pandas there): a metric asked for that no record measured stops the frame in one
line rather than leaving its row out.
"""

from __future__ import annotations

import math
import statistics
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

import nsight_lab.results.findings  # noqa: F401  (registers the accessor)
from nsight_lab.results.columns import CONFIG_COLUMN, add_roofline, normalize
from nsight_lab.results.derive import DeriveSpec
from nsight_lab.results.ranks import add_rank_rows
from nsight_lab.results.rows import InfoColumn, RowContext, RowRequest, gather_runs
from nsight_lab.stats import STABLE_RSD_PCT, geomean, summarize

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nsight_lab.contract.records import RunRecord, SessionInfo
    from nsight_lab.roofline.placement import Peaks

__all__ = ["InfoColumn", "to_dataframe"]


def _info_cells(column: InfoColumn, group: Sequence[RunRecord]) -> dict[str, object]:
    """nsight-python's aggregation of one collector over one row's runs.

    ``once``-scope and non-numeric values: one column, the first value; numeric
    ``config``/``run``/``annotation`` values: ``<name>_Avg/_Std/_Min/_Max``.
    """
    values = [
        column.by_run.get((r.annotation, r.config_index, r.run_index)) for r in group
    ]
    numeric = all(
        isinstance(v, int | float | np.number) and not isinstance(v, bool)
        for v in values
        if v is not None
    ) and any(v is not None for v in values)
    if column.scope == "once" or not numeric:
        return {column.name: next((v for v in values if v is not None), None)}
    arr = pd.Series([math.nan if v is None else v for v in values], dtype=float)
    present = [v for v in values if v is not None]
    return {
        f"{column.name}_Avg": float(arr.mean()),
        f"{column.name}_Std": float(arr.std()),
        # Min and max keep the values' own type (ints stay ints), as in pandas'.
        f"{column.name}_Min": min(present),  # type: ignore[type-var]
        f"{column.name}_Max": max(present),  # type: ignore[type-var]
    }


def to_dataframe(  # noqa: PLR0913  (the optional inputs are keyword-only)
    records: Sequence[RunRecord],
    session: SessionInfo,
    param_names: Sequence[str],
    *,
    derive: Sequence[str] | DeriveSpec = (),
    normalize_against: str | None = None,
    peaks: Peaks | None = None,
    config_values: Sequence[Mapping[str, object]] | None = None,
    rated_clocks_khz: tuple[int | None, int | None] = (None, None),
    info: Sequence[InfoColumn] = (),
    raw: list[dict[str, object]] | None = None,
    metrics: Sequence[str] | None = None,
    required: Sequence[str] = (),
) -> pd.DataFrame:
    """Aggregate per-run records into the results DataFrame.

    Args:
        records: Measured records of one session.
        session: The session (GPU name, host, backend, id).
        param_names: Grid parameter names, in order; each becomes a column.
        derive: The built-in derive names, or a whole :class:`DeriveSpec` (user
            functions, where their failures are collected).
        normalize_against: Annotation whose *median* divides every value column,
            per config and metric (one slow run of it does not move the ratios).
        peaks: The device's roofs; with them, time rows gain the roofline columns.
        config_values: Per config index, the values the parameter columns show (and
            derive functions get): the objects the profile bound; the records'
            JSON configs by default.
        rated_clocks_khz: The device's rated SM and memory clocks in kHz
            (``ComputeClock``, ``MemoryClock``); ``None`` where unknown.
        info: Info collectors' values, aggregated as nsight-python does.
        raw: Receives nsight-python's raw rows (its ``profiled_data`` CSV): one per
            run, region and metric, ``Annotation, Value, Metric, Kernel, GPU, Host,
            ComputeClock, MemoryClock, Unit``, the collectors' values, the params.
        metrics: The metrics that get rows (nsight-python's ``metrics``: there the
            duration is a row only when asked for), with the derived ones; None:
            the duration and every counter measured (the magic's frame). The
            roofline columns sit on the duration's rows. Each must get a row.
        required: Metrics that must get a row where ``metrics`` is None (the
            magic's ``--metrics``); a stored session rebuilt for export passes none.

    Returns:
        One row per (annotation, metric, config), in nsight-python's order: the
        measured metrics' rows, then the derived ones', each region by region (in
        the order they first ran) and config by config.

    Raises:
        CellError: ``normalize_against`` is not an annotation of the records, a
            derive function failed and no failures are collected, or a metric of
            ``metrics``/``required`` has no value in any record (never a frame
            silently without it).

    Size: thirteen inputs, documented above (nsight-python's and nsight-lab's); the
    body is the steps: gather the runs, one row per key, the added columns.
    """
    spec = derive if isinstance(derive, DeriveSpec) else DeriveSpec(names=tuple(derive))
    ctx = RowContext(session, param_names, config_values, rated_clocks_khz, info)
    request = RowRequest(metrics, required, normalize_against)
    runs = gather_runs(records, ctx, spec, request, raw)
    rows: list[dict[str, object]] = []
    config_of: list[int] = []
    for (annotation, metric, ci), values in _nsight_python_order(
        runs.series, runs.derived
    ):
        group = runs.groups[(annotation, ci)]
        row: dict[str, object] = {"Annotation": annotation, "Metric": metric}
        row.update(_value_cells(values, group, ctx, runs.units.get(metric, math.nan)))
        row.update(_lab_cells(group, session))
        rows.append(row)
        config_of.append(ci)
    frame: pd.DataFrame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    _as_nsight_python_dtypes(frame)
    measured = [r for r in records if not math.isnan(r.duration_ns)]
    frame[CONFIG_COLUMN] = config_of
    frame = add_roofline(frame, measured, peaks)
    if normalize_against is not None:
        frame = normalize(frame, normalize_against)
    frame["Geomean"] = frame.groupby(["Annotation", "Metric"], sort=False)[
        "AvgValue"
    ].transform(lambda col: geomean(list(col)))
    frame = add_rank_rows(frame, records, CONFIG_COLUMN)  # multi-rank sessions only
    result: pd.DataFrame = frame.drop(columns=CONFIG_COLUMN)
    return result


def _value_cells(
    values: Sequence[float],
    group: Sequence[RunRecord],
    ctx: RowContext,
    unit: float | str,
) -> dict[str, object]:
    """nsight-python's cells of one row: the params, the statistics, the collectors."""
    valid = [v for v in values if not math.isnan(v)]
    stats = summarize(valid) if valid else None
    nan = math.nan
    config = ctx.config(group[0].config_index, group[0])
    # nsight-python's: the first run's kernels, combined as "k1|k2" in launch
    # order (its ActionData.combine).
    cells: dict[str, object] = {p: config.get(p) for p in ctx.param_names}
    cells.update(
        {
            "AvgValue": stats.mean if stats else nan,
            "StdDev": stats.std if stats else nan,
            "MinValue": stats.min if stats else nan,
            "MaxValue": stats.max if stats else nan,
            "NumRuns": stats.n if stats else 0,
            "Kernel": "|".join(group[0].kernels),
            "GPU": ctx.session.device,
            "Host": ctx.session.host,
            "ComputeClock": ctx.rated[0],
            "MemoryClock": ctx.rated[1],
            "Unit": unit,
        }
    )
    for collector in ctx.info:
        cells.update(_info_cells(collector, group))
    cells.update(
        {
            "CI95_Lower": stats.ci95_low if stats else nan,
            "CI95_Upper": stats.ci95_high if stats else nan,
            "RelativeStdDevPct": stats.rsd_pct if stats else nan,
            "StableMeasurement": (
                pd.NA
                if stats is None or math.isnan(stats.rsd_pct)
                else stats.rsd_pct < STABLE_RSD_PCT
            ),
            "Normalized": False,
            "Geomean": nan,
            "MedianValue": stats.median if stats else nan,
        }
    )
    return cells


def _lab_cells(group: Sequence[RunRecord], session: SessionInfo) -> dict[str, object]:
    """nsight-lab's own cells of one row: the session, the measured telemetry."""
    tel = [r.telemetry for r in group]
    sm = [t.sm_clock_mhz for t in tel if t.sm_clock_mhz is not None]
    mem = [t.mem_clock_mhz for t in tel if t.mem_clock_mhz is not None]
    temp = [t.temperature_c for t in tel if t.temperature_c is not None]
    power = [t.power_w for t in tel if t.power_w is not None]
    reasons = sorted({w for t in tel for w in t.clock_event_reasons})
    nan = math.nan
    return {
        "NormalizedColumns": "",
        "Backend": session.backend,
        "SessionId": session.id,
        "SMClockMHz": statistics.median(sm) if sm else nan,
        "MemoryClockMHz": _mean(mem),
        "SMClockMHzMin": min(sm) if sm else nan,
        "SMClockMHzMax": max(sm) if sm else nan,
        "TemperatureC": _mean(temp),
        "TemperatureCMax": max(temp) if temp else nan,
        "PowerW": _mean(power),
        "ThrottledRuns": sum(1 for t in tel if t.throttled),
        "ClockEventReasons": ", ".join(reasons),
        "ThermalWaitS": sum(r.thermal_wait_s for r in group),
    }


def _nsight_python_order(
    series: Mapping[tuple[str, str, int], list[float]], derived: set[str]
) -> list[tuple[tuple[str, str, int], list[float]]]:
    """The frame's rows in nsight-python's order.

    The measured metrics' rows first, then the derived ones'; within each, region
    by region (in the order they first ran), config by config, the metrics in the
    order they came.
    """
    regions: dict[str, int] = {}
    names: dict[str, int] = {}
    for annotation, metric, _ in series:
        regions.setdefault(annotation, len(regions))
        names.setdefault(metric, len(names))
    return sorted(
        series.items(),
        key=lambda item: (
            item[0][1] in derived,
            regions[item[0][0]],
            item[0][2],
            names[item[0][1]],
        ),
    )


def _as_nsight_python_dtypes(frame: pd.DataFrame) -> None:
    """Give the columns nsight-python's dtypes where pandas would infer others."""
    frame["NumRuns"] = frame["NumRuns"].astype("int64")
    for column in ("ComputeClock", "MemoryClock"):
        frame[column] = pd.array(frame[column].tolist(), dtype="Int64")
    frame["StableMeasurement"] = pd.array(
        frame["StableMeasurement"].tolist(), dtype="boolean"
    )


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else math.nan
