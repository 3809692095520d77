"""A results DataFrame's summary as people read it: cells that lead with the answer.

Input is the results DataFrame (:func:`~nsight_lab.results.to_dataframe`); output is
the text cells every view shows. The views themselves (the sidebar, the inline widget,
a cell's bundle and static page, ``nsight-lab show``) read the same rows from the view
model (:mod:`nsight_lab.viewmodel.summary`, running statistics, no pandas); these are
the frame's, for a frame in hand and as the reference the view model's rows are
tested against (``tests/viewmodel``: equal on the H200 fixture and generated sessions).

- **Regions** (:func:`summary_rows`): per region and config, the median duration,
  its RSD, the achieved GB/s and TFLOP/s, % of roof and the bound first; then the
  runs, the SM clock, throttled runs and where the bytes and FLOPs come from
  (measured or modelled).
- **Counters** (:func:`summary_counters`): every other metric per region (Nsight
  Compute or PM counters, derived values), its median and RSD. Rows whose counter
  read zero in every run (an ncu roofline set has ~9 such counters per region)
  are flagged ``zero``: the sidebar folds them behind a toggle, the text leaves
  them out with a count.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pandas as pd

from nsight_lab.analysis.compare import metric_label, metric_unit
from nsight_lab.analysis.validity import flag_words_of
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
    from collections.abc import Mapping

__all__ = [
    "COUNTER_COLUMNS",
    "REGION_COLUMNS",
    "summary_counters",
    "summary_rows",
    "without_empty_columns",
]

REGION_COLUMNS = (
    "Region", "Duration", "RSD", "GPU busy", "GB/s", "TFLOP/s", "% of roof", "Bound",
    "Flag", "Runs", "SM clock", "Throttled", "Bytes", "FLOPs",
)  # fmt: skip
"""The region table's columns (the config's parameters follow ``Region``):
``Duration`` is the median, ``GPU busy`` the GPU's share of the region's span
(``launch-bound`` under half), ``Flag`` the numbers that cannot be true
(:mod:`nsight_lab.analysis.validity`), ``Bytes``/``FLOPs`` measured or modelled."""
COUNTER_COLUMNS = ("Region", "Metric", "Median", "RSD", "Runs")
"""The counter table's columns (the config's parameters follow ``Region``)."""


def _cell(row: Mapping[str, Any], column: str) -> Any:  # noqa: ANN401  (a cell)
    """The row's value, ``None`` for a missing one (NaN, ``pd.NA``)."""
    value = row.get(column)
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _params(frame: pd.DataFrame) -> list[str]:
    names = [str(c) for c in frame.columns]
    if "Metric" in names and "AvgValue" in names:
        return names[names.index("Metric") + 1 : names.index("AvgValue")]
    return []


def _throttled(row: Mapping[str, Any]) -> str:
    n = _cell(row, "ThrottledRuns")
    runs = _cell(row, "NumRuns")
    if n is None:
        return UNDEFINED
    if not n:
        return "none"
    return f"{int(n)} of {int(runs)}" if runs else str(int(n))


def _clock(row: Mapping[str, Any]) -> str:
    """The SM clock's median and range (:func:`format_clock`), as the view model's."""
    return format_clock(
        _cell(row, "SMClockMHz"),
        _cell(row, "SMClockMHzMin"),
        _cell(row, "SMClockMHzMax"),
    )


def _flop_rate(row: Mapping[str, Any]) -> str:
    """TFLOP/s; undefined, never 0, where the work model counted no FLOPs.

    As the view model's (:func:`nsight_lab.viewmodel.summary.region_rows`).
    """
    rate = _cell(row, "AchievedTFLOPs")
    if _cell(row, "FLOPsSource") == "modelled" and rate == 0:
        return UNDEFINED
    return format_number(rate)


def _flag(row: Mapping[str, Any]) -> str:
    """The Flag cell: the frame's flag texts as the kinds' words (none: UNDEFINED)."""
    text = _source(row, "Flag")
    return flag_words_of(text) if text != UNDEFINED else text


def _source(row: Mapping[str, Any], column: str) -> str:
    text = _cell(row, column)
    return str(text) if text else UNDEFINED


def _busy(row: Mapping[str, Any]) -> str:
    """``GPU busy``: as :attr:`nsight_lab.analysis.validity.Validity.busy_text`."""
    busy = _cell(row, "GPUBusyPct")
    if busy is None:
        return UNDEFINED
    return format_percent(busy) + (" launch-bound" if _cell(row, "Note") else "")


def _duration_column(row: Mapping[str, Any]) -> str:
    """``Duration``; on the cpu backend ``Duration (host timer)``: it is no GPU's."""
    label = metric_label(TIME_METRIC, str(_cell(row, "Backend") or ""))
    return "Duration (host timer)" if "host" in label else "Duration"


def summary_rows(frame: pd.DataFrame | None) -> list[dict[str, str]]:
    """Rows of the summary table from a results DataFrame.

    One row of text cells per region and config that leads with the answer: the
    rows the view model gives every view (:func:`nsight_lab.viewmodel.summary.
    region_rows`), from a frame. The other metrics are :func:`summary_counters`.

    Keys: ``Region``, the config's parameters, then :data:`REGION_COLUMNS` but
    ``Region``, less those with nothing in any row (a cpu session's roofline, an
    ncu session's NVML clock). Values are display strings (an en dash where nothing
    was measured).

    Raises:
        Nothing.
    """
    if frame is None or frame.empty or "Metric" not in frame:
        return []
    params = _params(frame)
    timed = frame[frame["Metric"] == TIME_METRIC]
    rows: list[dict[str, str]] = []
    for record in timed.to_dict("records"):
        row = {str(k): v for k, v in record.items()}
        out = {"Region": _text(row.get("Annotation", ""))}
        out.update({p: _text(_cell(row, p)) for p in params})
        per_rank = False
        if "Rank" in row:  # a multi-rank session: the span row, then each rank's
            rank = _cell(row, "Rank")
            per_rank = rank is not None and rank >= 0
            out["Rank"] = "span" if not per_rank else str(int(rank))
            out["Device"] = _text(_cell(row, "Device"))
        normalized = row.get("Normalized")
        duration = (
            f"{format_number(_cell(row, 'MedianValue'))}x {normalized}"
            if isinstance(normalized, str) and normalized
            else format_duration(_cell(row, "MedianValue"))
        )
        out.update(
            {
                _duration_column(row): duration,
                "RSD": format_percent(_cell(row, "RelativeStdDevPct")),
                "GPU busy": UNDEFINED if per_rank else _busy(row),
                "GB/s": format_number(_cell(row, "AchievedGBps")),
                "TFLOP/s": _flop_rate(row),
                "% of roof": format_percent(_cell(row, "PctOfRoof")),
                "Bound": _source(row, "Bound"),
                # The kinds in words, as the view model's (the texts are listed).
                "Flag": UNDEFINED if per_rank else _flag(row),
                "Runs": format_count(_cell(row, "NumRuns")),
                "SM clock": _clock(row),
                "Throttled": _throttled(row),
                "Bytes": _source(row, "BytesSource"),
                "FLOPs": _source(row, "FLOPsSource"),
            }
        )
        rows.append(out)
    return without_empty_columns(rows, keep={"Region", *params})


def without_empty_columns(
    rows: list[dict[str, str]], keep: set[str]
) -> list[dict[str, str]]:
    """``rows`` less the columns that read :data:`UNDEFINED` in every row.

    A cpu session without the host's roofs has no GB/s, TFLOP/s, roof or clock: its
    table is the region, the duration, the RSD and the runs, not a row of dashes.
    """
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


def _text(value: object) -> str:
    return UNDEFINED if value is None else printable(value)


def summary_counters(frame: pd.DataFrame | None) -> dict[str, Any]:
    """The counter table beside :func:`summary_rows`: every metric but the duration.

    Per region and config.

    ``{"columns": [...], "rows": [{"cells": [...], "zero": bool}], "zero": n}``:
    cells are display strings in the columns' order; ``zero`` marks a counter that
    read zero in every run (folded away by the views), and the table's ``zero``
    counts them.

    Raises:
        Nothing.
    """
    params = _params(frame) if frame is not None else []
    columns = ["Region", *params, *COUNTER_COLUMNS[1:]]
    if frame is None or frame.empty or "Metric" not in frame:
        return {"columns": columns, "rows": [], "zero": 0}
    rows = []
    for record in frame[frame["Metric"] != TIME_METRIC].to_dict("records"):
        row = {str(k): v for k, v in record.items()}
        metric = metric_label(str(row.get("Metric", "")), "")
        unit = _cell(row, "Unit")
        unit = str(unit) if isinstance(unit, str) else metric_unit(metric)
        median = _cell(row, "MedianValue")
        zero = median == 0 and not _cell(row, "MaxValue")
        cells = [
            _text(row.get("Annotation", "")),
            *(_text(_cell(row, p)) for p in params),
            _text(metric),
            format_quantity(median, unit),
            format_percent(_cell(row, "RelativeStdDevPct")),
            format_count(_cell(row, "NumRuns")),
        ]
        rows.append({"cells": cells, "zero": bool(zero)})
    return {"columns": columns, "rows": rows, "zero": sum(r["zero"] for r in rows)}
