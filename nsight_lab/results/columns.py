"""Columns a results frame gains after aggregation: roofline, flags, normalization.

:func:`add_roofline` fills the time rows' FLOPs, bytes, rates and (with the device's
roofs) the bound and % of roof, then :func:`add_validity` the flags of numbers that
cannot be true and the GPU's busy share (:mod:`nsight_lab.analysis.validity`);
:func:`normalize` divides the value columns by a
target region's (``--normalize-against``). Both key rows by the frame's working
config-index column, :data:`CONFIG_COLUMN`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from nsight_lab.analysis.validity import check_session
from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.errors import CellError
from nsight_lab.roofline.placement import (
    ROOFLINE_COLUMNS,
    WORK_COLUMNS,
    place_session,
    region_work,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import pandas as pd

    from nsight_lab.contract.records import RunRecord
    from nsight_lab.roofline.placement import Peaks, Placement

NORMALIZED_COLUMNS = {
    "AvgValue": "NormalizationValue",
    "MedianValue": "MedianNormalizationValue",
}
"""What ``--normalize-against`` divides, and the column that holds each divisor: the
mean by the target's mean (nsight-python's ``AvgValue`` and ``NormalizationValue``)
and nsight-lab's median by the target's median (one slow run of the target does not
move it). The other columns keep their values, as in nsight-python."""

CONFIG_COLUMN = "_config_index"
"""A working column while the frame is built: the row's config index (dropped)."""


def _time_rows(frame: pd.DataFrame, annotation: str, config_index: int) -> pd.Series:
    return (
        (frame["Annotation"] == annotation)
        & (frame["Metric"] == TIME_METRIC)
        & (frame[CONFIG_COLUMN] == config_index)
    )


def add_roofline(
    frame: pd.DataFrame, records: Sequence[RunRecord], peaks: Peaks | None
) -> pd.DataFrame:
    """Fill the roofline columns of the time rows.

    FLOPs, bytes, intensity and achieved rates (:data:`WORK_COLUMNS`) whenever they
    are measured or modelled, with or without peaks; the roof, bound verdict, % of
    roof and dtype only with ``peaks``. Rates and the verdict use each region's
    *median* duration (one slow run does not flip a verdict); ``AvgValue`` stays the
    mean, as in nsight-python.
    """
    for column in ROOFLINE_COLUMNS:
        frame[column] = (
            math.nan
            if column not in {"FLOPsSource", "BytesSource", "Bound", "RooflineDtype"}
            else ""
        )
    for w in region_work(records):
        frame.loc[_time_rows(frame, w.annotation, w.config_index), WORK_COLUMNS] = [
            w.flops,
            w.flops_source,
            w.bytes_read,
            w.bytes_written,
            w.bytes_source,
            w.intensity,
            w.achieved_flops_per_s / 1e12,
            w.achieved_bytes_per_s / 1e9,
        ]
    placements = place_session(records, peaks) if peaks is not None else []
    for p in placements:
        frame.loc[
            _time_rows(frame, p.annotation, p.config_index), list(ROOFLINE_COLUMNS)
        ] = [
            p.flops,
            p.flops_source,
            p.bytes_read,
            p.bytes_written,
            p.bytes_source,
            p.intensity,
            p.achieved_flops_per_s / 1e12,
            p.achieved_bytes_per_s / 1e9,
            p.roof_flops_per_s / 1e12,
            p.bound,
            p.pct_of_roof,
            p.dtype,
        ]
    return add_validity(frame, records, placements)


VALIDITY_COLUMNS = ("GPUBusyPct", "Flag", "FlagCause", "FlagAction", "Note")
"""The time rows' checks (:mod:`nsight_lab.analysis.validity`): the GPU's busy share
of the region's span (%, NaN without shape metrics), the numbers that cannot be
true (``; `` apart), their likely causes and what to do (``|`` apart, in the same
order), and the launch-bound note; "" where there is nothing to say."""


def add_validity(
    frame: pd.DataFrame, records: Sequence[RunRecord], placements: Sequence[Placement]
) -> pd.DataFrame:
    """Fill :data:`VALIDITY_COLUMNS` of the time rows from the runs and placements.

    Raises:
        Nothing.
    """
    frame["GPUBusyPct"] = math.nan
    for column in VALIDITY_COLUMNS[1:]:
        frame[column] = ""
    for (annotation, config_index), v in check_session(records, placements).items():
        rows = _time_rows(frame, annotation, config_index)
        frame.loc[rows, "GPUBusyPct"] = math.nan if v.busy_pct is None else v.busy_pct
        frame.loc[rows, "Flag"] = v.flag_text
        frame.loc[rows, "FlagCause"] = " | ".join(f.cause for f in v.flags)
        frame.loc[rows, "FlagAction"] = " | ".join(f.action for f in v.flags)
        frame.loc[rows, "Note"] = v.note
    return frame


def normalize(frame: pd.DataFrame, target: str) -> pd.DataFrame:
    """Divide :data:`NORMALIZED_COLUMNS` by ``target``'s, per config and metric.

    As nsight-python: ``NormalizationValue`` (after ``Normalized``) is the target's
    ``AvgValue``, ``Unit`` and the other columns stay as they were, and rows whose
    config or metric ``target`` lacks are left out. ``MedianNormalizationValue``
    (after ``NormalizedColumns``) is nsight-lab's.
    """
    check_normalize_target(target, frame["Annotation"])
    keys = [CONFIG_COLUMN, "Metric"]
    base = frame.loc[frame["Annotation"] == target, [*keys, *NORMALIZED_COLUMNS]]
    merged: pd.DataFrame = frame.merge(
        base.rename(columns=NORMALIZED_COLUMNS), on=keys, how="inner"
    )
    for column, divisor in NORMALIZED_COLUMNS.items():
        merged[column] = merged[column] / merged[divisor]
    merged["Normalized"] = target
    merged["NormalizedColumns"] = ",".join(NORMALIZED_COLUMNS)
    for divisor, after in (
        ("NormalizationValue", "Normalized"),
        ("MedianNormalizationValue", "NormalizedColumns"),
    ):
        values = merged.pop(divisor)
        merged.insert(list(merged.columns).index(after) + 1, divisor, values)
    return merged


def check_normalize_target(target: str, annotations: Iterable[str]) -> None:
    """Refuse ``--normalize-against`` a region that is none of ``annotations``.

    Raises:
        CellError: One line naming the regions seen, in the order they ran.
    """
    seen = dict.fromkeys(annotations)
    if target not in seen:
        names = ", ".join(repr(a) for a in seen)
        msg = f"--normalize-against: no region named {target!r}; regions seen: {names}"
        raise CellError(msg)
