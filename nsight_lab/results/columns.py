"""Columns a results frame gains after aggregation: the roofline and normalization.

:func:`add_roofline` fills the time rows' FLOPs, bytes, rates and (with the device's
roofs) the bound and % of roof; :func:`normalize` divides the value columns by a
target region's (``--normalize-against``). Both key rows by the frame's working
config-index column, :data:`CONFIG_COLUMN`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.errors import CellError
from nsight_lab.roofline.placement import (
    ROOFLINE_COLUMNS,
    WORK_COLUMNS,
    place_session,
    region_work,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd

    from nsight_lab.contract.records import RunRecord
    from nsight_lab.roofline.placement import Peaks

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
    if peaks is None:
        return frame
    for p in place_session(records, peaks):
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
    return frame


def normalize(frame: pd.DataFrame, target: str) -> pd.DataFrame:
    """Divide :data:`NORMALIZED_COLUMNS` by ``target``'s, per config and metric.

    As nsight-python: ``NormalizationValue`` (after ``Normalized``) is the target's
    ``AvgValue``, ``Unit`` and the other columns stay as they were, and rows whose
    config or metric ``target`` lacks are left out. ``MedianNormalizationValue``
    (after ``NormalizedColumns``) is nsight-lab's.
    """
    if target not in set(frame["Annotation"]):
        seen = ", ".join(repr(a) for a in dict.fromkeys(frame["Annotation"]))
        msg = f"--normalize-against: no region named {target!r}; regions seen: {seen}"
        raise CellError(msg)
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
