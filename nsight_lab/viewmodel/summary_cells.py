"""The summary tables' cells: one row of text from its numbers, whoever holds them.

The one implementation of a summary row (issue 33). The view model has the numbers
as running statistics (:mod:`nsight_lab.viewmodel.summary`, what every view shows);
a results frame has them as columns (:mod:`nsight_lab.results.frame_summary`). Both hand
them here, a region's as :class:`RegionValues` and a counter's to
:func:`counter_cells`: the columns, their order, the text of each cell and the
columns left out for being empty are decided here only. No pandas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nsight_lab.analysis.compare import metric_label
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

__all__ = [
    "COUNTER_COLUMNS",
    "REGION_COLUMNS",
    "RegionValues",
    "counter_cells",
    "duration_column",
    "flop_rate",
    "region_cells",
    "text",
    "without_empty_columns",
]

REGION_COLUMNS = (
    "Region", "Duration", "RSD", "GPU busy", "GB/s", "TFLOP/s", "% of roof", "Bound",
    "Flag", "Runs", "SM clock", "Throttled", "Bytes", "FLOPs",
)  # fmt: skip
"""The region table's columns (the config's parameters follow ``Region``):
``Duration`` is the median, ``GPU busy`` the GPU's share of the region's span
(``launch-bound`` under half), ``Flag`` the kinds of what cannot be true or is not
usable, in words (:mod:`nsight_lab.analysis.validity`, each flag said in full in the
checks), ``Bytes``/``FLOPs`` say measured or modelled."""
COUNTER_COLUMNS = ("Region", "Metric", "Median", "RSD", "Runs")
"""The counter table's columns (the config's parameters follow ``Region``)."""

Clock = tuple[float | None, float | None, float | None]


@dataclass(frozen=True)
class RegionValues:
    """One row of the region table before it is text (None: nothing measured).

    Attributes:
        head: ``Region``, the config's parameters and, in a multi-rank session,
            ``Rank`` and ``Device``, as text.
        median: The median duration (ns), or its ratio to ``target``'s.
        target: With ``--normalize-against``, the region ``median`` is a ratio to.
        rsd_pct: The duration's relative standard deviation, in %.
        busy: ``GPU busy`` as text
            (:attr:`~nsight_lab.analysis.validity.Validity.busy_text`).
        gbps: Achieved GB/s.
        tflops: Achieved TFLOP/s (:func:`flop_rate`).
        pct_of_roof: % of the roof the region is bound by.
        bound: What bounds it (``memory``, ``compute``).
        flag: The kinds of its flags, in words.
        runs: Runs with a duration.
        clock: The SM clock's median, lowest and highest (MHz).
        throttled: Runs that were throttled (None: not known).
        bytes_source: ``measured`` or ``modelled``.
        flops_source: ``measured`` or ``modelled``.
    """

    head: Mapping[str, str]
    median: float | None
    target: str | None = None
    rsd_pct: float | None = None
    busy: str = UNDEFINED
    gbps: float | None = None
    tflops: float | None = None
    pct_of_roof: float | None = None
    bound: object = None
    flag: str = UNDEFINED
    runs: int | None = None
    clock: Clock = (None, None, None)
    throttled: int | None = None
    bytes_source: object = None
    flops_source: object = None


def text(value: object) -> str:
    """A cell of a name or a parameter (:data:`UNDEFINED` for None or NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return UNDEFINED
    return printable(value)


def _word(value: object) -> str:
    return str(value) if value else UNDEFINED


def duration_column(backend: str) -> str:
    """``Duration``; on the cpu backend ``Duration (host timer)``: it is no GPU's."""
    label = metric_label(TIME_METRIC, backend)
    return "Duration (host timer)" if "host" in label else "Duration"


def flop_rate(tflops: float | None, source: object, flops: object) -> float | None:
    """TFLOP/s; None (undefined, never 0) where the work model counted no FLOPs.

    A 0 there is no measurement (ncu read 11.86 TFLOP/s for the H200 fixture's
    layernorm); :func:`nsight_lab.analysis.validity.unmodelled_note` says why.
    """
    return None if source == "modelled" and not flops else tflops


def _throttled(throttled: int | None, runs: int | None) -> str:
    if throttled is None:
        return UNDEFINED
    if not throttled:
        return "none"
    return f"{int(throttled)} of {int(runs)}" if runs else str(int(throttled))


def region_cells(values: RegionValues, duration: str) -> dict[str, str]:
    """One row of the region table: ``head``, then :data:`REGION_COLUMNS`.

    ``duration`` names the duration's column (:func:`duration_column`).

    Raises:
        Nothing.
    """
    median, target = values.median, values.target
    return {
        **values.head,
        duration: (
            f"{format_number(median)}x {target}"
            if target is not None
            else format_duration(median)
        ),
        "RSD": format_percent(values.rsd_pct),
        "GPU busy": values.busy or UNDEFINED,
        "GB/s": format_number(values.gbps),
        "TFLOP/s": format_number(values.tflops),
        "% of roof": format_percent(values.pct_of_roof),
        "Bound": _word(values.bound),
        # The kinds only: each flag's sentence is said once, in the checks.
        "Flag": values.flag or UNDEFINED,
        "Runs": format_count(values.runs),
        "SM clock": format_clock(*values.clock),
        "Throttled": _throttled(values.throttled, values.runs),
        "Bytes": _word(values.bytes_source),
        "FLOPs": _word(values.flops_source),
    }


def without_empty_columns(
    rows: list[dict[str, str]], keep: set[str]
) -> list[dict[str, str]]:
    """``rows`` less the columns that read :data:`UNDEFINED` in every row.

    A cpu session without the host's roofs has no GB/s, TFLOP/s, roof or clock: its
    table is the region, the duration, the RSD and the runs, not a row of dashes.
    The columns in ``keep`` and the duration's stay.
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


def counter_cells(  # noqa: PLR0913  (one row's parts)
    head: Sequence[str],
    metric: str,
    median: float | None,
    top: float | None,
    unit: str,
    *,
    rsd_pct: float | None,
    runs: int | None,
) -> dict[str, Any]:
    """One row of the counter table: ``{"cells", "zero"}``.

    ``head`` is the region and the config's parameters as text, ``top`` the
    highest value read; ``zero``: the counter read zero in every run (no ``top``
    but 0), which the views fold away.

    Raises:
        Nothing.
    """
    read = top is not None and not math.isnan(top) and top != 0
    cells = [
        *head,
        text(metric),
        format_quantity(median, unit),
        format_percent(rsd_pct),
        format_count(runs),
    ]
    return {"cells": cells, "zero": bool(median == 0 and not read)}
