"""The per-rank rows of a multi-rank session's results DataFrame.

A multi-rank session's frame keeps every row :func:`nsight_lab.results.to_dataframe`
makes (their value columns are over the records' ``duration_ns``, the region's span
over the ranks) and gains two columns, right after the parameters (so the summary
table shows them beside the parameters):

* ``Rank``: the rank of the row, or :data:`SPAN_RANK` (``-1``) for the span row and
  for every row that is not per rank (counters, derived metrics, the modelled
  collective bytes). An integer, so ``frame[frame.Rank >= 0]`` are the per-rank
  rows;
* ``Device``: the rank's device (``cuda:1``; ``cpu`` for host ranks); on the other
  rows the devices of every rank, comma-separated.

After each region's span row of ``gpu__time_duration.sum`` come its per-rank rows:
the same statistics over that rank's own durations, its telemetry columns from its
own GPU, no roofline columns; normalised (``--normalize-against``) by the span
row's divisor. ``StragglerRank`` (every row of the region: the rank that was the
straggler most often) and ``StragglerRuns`` (per-rank rows: in how many runs that
rank was; the span row: runs with a straggler) come last.

A single-rank session's frame is left as it is: nsight-python's columns, unchanged.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from typing import TYPE_CHECKING

import pandas as pd

from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.distributed import metrics as m
from nsight_lab.results.columns import NORMALIZED_COLUMNS
from nsight_lab.roofline.placement import ROOFLINE_COLUMNS
from nsight_lab.stats import STABLE_RSD_PCT, geomean, summarize

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.contract.records import RunRecord

SPAN_RANK = -1
"""``Rank`` of a span row (the region over every rank) and of rows not per rank."""

_TEXT_COLUMNS = frozenset({"FLOPsSource", "BytesSource", "Bound", "RooflineDtype"})


def add_rank_rows(
    frame: pd.DataFrame, records: Sequence[RunRecord], config_column: str
) -> pd.DataFrame:
    """``frame`` with ``Rank``/``Device`` and per-rank rows, if ``records`` have ranks.

    Args:
        frame: The results frame, still with its working config-index column.
        records: The session's records.
        config_column: The name of that column.

    Returns:
        ``frame`` unchanged for single-rank records; else the frame described in
        this module's docstring.

    Raises:
        Nothing.
    """
    ranked = [r for r in records if m.is_multi_rank(r)]
    if frame.empty or not ranked:
        return frame
    groups: dict[tuple[str, int], list[RunRecord]] = defaultdict(list)
    for record in ranked:
        groups[(record.annotation, record.config_index)].append(record)
    rows: list[dict[str, object]] = []
    for row in frame.to_dict("records"):
        key = (str(row["Annotation"]), int(row[config_column]))
        group = groups.get(key, [])
        devices = _devices(group)
        stragglers = Counter(
            int(r.metrics[m.STRAGGLER])
            for r in group
            if not math.isnan(r.metrics.get(m.STRAGGLER, math.nan))
        )
        modal = (
            min(stragglers, key=lambda k: (-stragglers[k], k)) if stragglers else None
        )
        span: dict[str, object] = {
            **{str(k): v for k, v in row.items()},
            "Rank": SPAN_RANK,
            "Device": ",".join(dict.fromkeys(devices.values())),
            "StragglerRank": modal,
            "StragglerRuns": sum(stragglers.values()),
        }
        rows.append(span)
        if row["Metric"] == TIME_METRIC:
            rows.extend(
                _rank_row(span, group, rank, device, stragglers.get(rank, 0))
                for rank, device in devices.items()
            )
    out = pd.DataFrame(rows, columns=[*frame.columns, *_NEW_COLUMNS])
    out = _typed(out, frame)
    _rank_geomean(out)
    return _placed(out, frame)


_NEW_COLUMNS = ("Rank", "Device", "StragglerRank", "StragglerRuns")


def _devices(group: Sequence[RunRecord]) -> dict[int, str]:
    """Rank -> its device label, over the region's runs, ranks in order."""
    out: dict[int, str] = {}
    for record in group:
        for rank, ordinal in m.per_rank(record, m.DEVICE).items():
            out.setdefault(rank, m.device_label(ordinal))
    return dict(sorted(out.items()))


def _values(group: Sequence[RunRecord], quantity: str, rank: int) -> list[float]:
    name = m.rank_metric(quantity, rank)
    return [
        r.metrics[name]
        for r in group
        if name in r.metrics and not math.isnan(r.metrics[name])
    ]


def _rank_row(
    span: dict[str, object],
    group: Sequence[RunRecord],
    rank: int,
    device: str,
    straggled: int,
) -> dict[str, object]:
    values = _values(group, m.DURATION, rank)
    stats = summarize(values) if values else None
    nan = math.nan
    row = dict(span)
    figures = {
        "AvgValue": stats.mean if stats else nan,
        "StdDev": stats.std if stats else nan,
        "MinValue": stats.min if stats else nan,
        "MaxValue": stats.max if stats else nan,
        "MedianValue": stats.median if stats else nan,
        "CI95_Lower": stats.ci95_low if stats else nan,
        "CI95_Upper": stats.ci95_high if stats else nan,
    }
    if span.get("Normalized") not in {False, None}:  # as the span row's were
        for column, divisor in NORMALIZED_COLUMNS.items():
            figures[column] /= float(span[divisor])  # type: ignore[arg-type]
    row.update(figures)
    sm = _values(group, m.SM_CLOCK, rank)
    temp = _values(group, m.TEMPERATURE, rank)
    row.update(
        {
            "NumRuns": stats.n if stats else 0,
            "RelativeStdDevPct": stats.rsd_pct if stats else nan,
            "StableMeasurement": (
                pd.NA
                if stats is None or math.isnan(stats.rsd_pct)
                else stats.rsd_pct < STABLE_RSD_PCT
            ),
            "SMClockMHz": statistics.median(sm) if sm else nan,
            "MemoryClockMHz": _mean(_values(group, m.MEM_CLOCK, rank)),
            "SMClockMHzMin": min(sm) if sm else nan,
            "SMClockMHzMax": max(sm) if sm else nan,
            "TemperatureC": _mean(temp),
            "TemperatureCMax": max(temp) if temp else nan,
            "PowerW": _mean(_values(group, m.POWER, rank)),
            "ThrottledRuns": int(sum(_values(group, m.THROTTLED, rank))),
            "Rank": rank,
            "Device": device,
            "StragglerRuns": straggled,
        }
    )
    for column in ROOFLINE_COLUMNS:
        if column in row:
            row[column] = "" if column in _TEXT_COLUMNS else nan
    return row


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _typed(out: pd.DataFrame, like: pd.DataFrame) -> pd.DataFrame:
    """The dtypes of ``like`` kept (pandas widens them when rows are rebuilt)."""
    for column in ("ComputeClock", "MemoryClock"):
        if column in like.columns:
            out[column] = pd.array(out[column].tolist(), dtype="Int64")
    if "StableMeasurement" in like.columns:
        out["StableMeasurement"] = pd.array(
            out["StableMeasurement"].tolist(), dtype="boolean"
        )
    out["NumRuns"] = out["NumRuns"].astype("int64")
    out["Rank"] = out["Rank"].astype("int64")
    out["StragglerRank"] = pd.array(out["StragglerRank"].tolist(), dtype="Int64")
    out["StragglerRuns"] = out["StragglerRuns"].astype("int64")
    return out


def _rank_geomean(out: pd.DataFrame) -> None:
    """Geomean over configs of each (region, metric, rank) of the per-rank rows."""
    ranks = out["Rank"] >= 0
    if not ranks.any():
        return
    out.loc[ranks, "Geomean"] = (
        out[ranks]
        .groupby(["Annotation", "Metric", "Rank"], sort=False)["AvgValue"]
        .transform(lambda col: geomean(list(col)))
    )


def _placed(out: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """``Rank`` and ``Device`` moved to just before ``AvgValue`` (after the params)."""
    columns = [c for c in out.columns if c not in {"Rank", "Device"}]
    at = columns.index("AvgValue") if "AvgValue" in columns else len(frame.columns)
    ordered = [*columns[:at], "Rank", "Device", *columns[at:]]
    placed: pd.DataFrame = out[ordered]
    return placed
