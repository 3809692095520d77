"""A results DataFrame's summary as people read it: cells that lead with the answer.

Input is the results DataFrame (:func:`~nsight_lab.results.to_dataframe`); output is
the text cells every view shows. The views themselves (the sidebar, the inline widget,
a cell's bundle and static page, ``nsight-lab show``) read the same rows from the view
model (:mod:`nsight_lab.viewmodel.summary`, running statistics, no pandas). Both are
one implementation of a summary row, :mod:`nsight_lab.viewmodel.summary_cells`: here
only the frame's columns are read into its numbers (``tests/viewmodel``: equal rows on
the H200 fixture and generated sessions).

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

from nsight_lab.analysis.compare import metric_unit
from nsight_lab.analysis.validity import flag_words_of
from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.text.units import UNDEFINED, format_percent
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
    from collections.abc import Mapping

__all__ = ["summary_counters", "summary_rows"]


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


def _busy(row: Mapping[str, Any]) -> str:
    """``GPU busy``: as :attr:`nsight_lab.analysis.validity.Validity.busy_text`."""
    busy = _cell(row, "GPUBusyPct")
    if busy is None:
        return UNDEFINED
    return format_percent(busy) + (" launch-bound" if _cell(row, "Note") else "")


def _flag(row: Mapping[str, Any]) -> str:
    """The Flag cell: the frame's flag texts as the kinds' words (none: UNDEFINED)."""
    flags = _cell(row, "Flag")
    return flag_words_of(str(flags)) if flags else UNDEFINED


def _values(row: Mapping[str, Any], params: list[str]) -> RegionValues:
    """The numbers of one timed row of the frame, as the view model has them."""
    head = {"Region": text(row.get("Annotation", ""))}
    head.update({p: text(_cell(row, p)) for p in params})
    per_rank = False
    if "Rank" in row:  # a multi-rank session: the span row, then each rank's
        rank = _cell(row, "Rank")
        per_rank = rank is not None and rank >= 0
        head["Rank"] = "span" if not per_rank else str(int(rank))
        head["Device"] = text(_cell(row, "Device"))
    normalized = row.get("Normalized")
    throttled = _cell(row, "ThrottledRuns")
    tflops = _cell(row, "AchievedTFLOPs")
    return RegionValues(
        head,
        _cell(row, "MedianValue"),
        target=normalized if isinstance(normalized, str) and normalized else None,
        rsd_pct=_cell(row, "RelativeStdDevPct"),
        busy=UNDEFINED if per_rank else _busy(row),
        gbps=_cell(row, "AchievedGBps"),
        # A modelled rate of 0: the work model counted no FLOPs.
        tflops=flop_rate(tflops, _cell(row, "FLOPsSource"), tflops != 0),
        pct_of_roof=_cell(row, "PctOfRoof"),
        bound=_cell(row, "Bound"),
        flag=UNDEFINED if per_rank else _flag(row),
        runs=_cell(row, "NumRuns"),
        clock=(
            _cell(row, "SMClockMHz"),
            _cell(row, "SMClockMHzMin"),
            _cell(row, "SMClockMHzMax"),
        ),
        throttled=None if throttled is None else int(throttled),
        bytes_source=_cell(row, "BytesSource"),
        flops_source=_cell(row, "FLOPsSource"),
    )


def summary_rows(frame: pd.DataFrame | None) -> list[dict[str, str]]:
    """Rows of the summary table from a results DataFrame.

    One row of text cells per region and config that leads with the answer: the
    rows the view model gives every view (:func:`nsight_lab.viewmodel.summary.
    region_rows`), from a frame. The other metrics are :func:`summary_counters`.

    Keys: ``Region``, the config's parameters, then
    :data:`~nsight_lab.viewmodel.summary_cells.REGION_COLUMNS` but ``Region``, less
    those with nothing in any row (a cpu session's roofline, an ncu session's NVML
    clock). Values are display strings (an en dash where nothing was measured).

    Raises:
        Nothing.
    """
    if frame is None or frame.empty or "Metric" not in frame:
        return []
    params = _params(frame)
    rows: list[dict[str, str]] = []
    for record in frame[frame["Metric"] == TIME_METRIC].to_dict("records"):
        row = {str(k): v for k, v in record.items()}
        column = duration_column(str(_cell(row, "Backend") or ""))
        rows.append(region_cells(_values(row, params), column))
    return without_empty_columns(rows, keep={"Region", *params})


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
        metric = str(row.get("Metric", ""))
        unit = _cell(row, "Unit")
        head = [text(row.get("Annotation", "")), *(text(_cell(row, p)) for p in params)]
        rows.append(
            counter_cells(
                head,
                metric,
                _cell(row, "MedianValue"),
                _cell(row, "MaxValue"),
                str(unit) if isinstance(unit, str) else metric_unit(metric),
                rsd_pct=_cell(row, "RelativeStdDevPct"),
                runs=_cell(row, "NumRuns"),
            )
        )
    return {"columns": columns, "rows": rows, "zero": sum(r["zero"] for r in rows)}
