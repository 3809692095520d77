"""Records -> the nsight-python-compatible DataFrame.

One row per region, metric and config.

The columns are nsight-python 1.1.0's ``ProfileResults.to_dataframe()``, in its order
and with its meanings and dtypes:

``Annotation, Metric, <params>, AvgValue, StdDev, MinValue, MaxValue, NumRuns, Kernel,
GPU, Host, ComputeClock, MemoryClock, Unit, <info collectors>, CI95_Lower, CI95_Upper,
RelativeStdDevPct, StableMeasurement, Normalized, [NormalizationValue], Geomean``

then nsight-lab's own: ``MedianValue, NormalizedColumns, Backend, SessionId,
SMClockMHz, MemoryClockMHz, SMClockMHzMin, SMClockMHzMax, TemperatureC,
TemperatureCMax, PowerW, ThrottledRuns, ClockEventReasons, ThermalWaitS``
and the roofline columns.

Kept as nsight-python has them (``tests/api/test_frame.py`` pins them against a frame
nsight-python 1.1.0 itself produced): ``ComputeClock``/``MemoryClock`` are the device's
rated SM and memory clocks in kHz (ncu's ``device__attribute_clock_rate``; a nullable
integer, ``<NA>`` where no GPU was measured); ``StableMeasurement`` is a nullable
boolean, ``<NA>`` where the relative spread is undefined (one run, a zero mean);
``NumRuns`` counts the runs with a value (a region that failed under
``annotate(ignore_failures=True)`` has none in that run); a derived metric without a
unit has ``NaN`` in ``Unit``; ``NormalizationValue`` is what ``AvgValue`` was divided
by.

Measurement choices nsight-lab keeps, in the same columns or in its own: the clocks
*measured* through NVML during the runs are ``SMClockMHz`` (the median over the runs,
with ``SMClockMHzMin``/``SMClockMHzMax`` its range: the clock every view shows) and
``MemoryClockMHz`` (the mean), in MHz; CI95 (the interval of the mean, from
:func:`nsight_lab.stats.summarize`) uses Student's t, on the log scale for quantities
that cannot be negative, so it never goes below zero; normalization divides every value
column by the target region's *median* (``MedianValue``; nsight-python divides only
``AvgValue``, by the target's mean, which one slow run can move), names them in
``NormalizedColumns`` and writes the divisor in ``NormalizationValue``; the roofline
columns use the median duration too, while ``AvgValue`` stays the mean.

One module per step: :mod:`.derive` (derived metrics, user ``--derive`` functions),
:mod:`.rows` (records -> the values per row and their checks), :mod:`.frame` (the
rows as a DataFrame, :func:`to_dataframe`), :mod:`.columns` (the roofline and
normalization columns), :mod:`.ranks` (a multi-rank session's per-rank rows),
:mod:`.stored` (a stored session's frame) and :mod:`.frame_summary` (the frame as
the text cells every view shows). This package re-exports their public names, each
imported on first use: :mod:`.derive` and :mod:`.rows` load no pandas, so neither
does the server's view model nor a cell that asks for no DataFrame.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.contract.lazy import lazy_exports

if TYPE_CHECKING:
    from nsight_lab.results.columns import NORMALIZED_COLUMNS
    from nsight_lab.results.derive import (
        BUILTIN_DERIVES,
        MISSING_UNIT_WARNING,
        MODEL_PREFIX,
        DeriveFailures,
        DeriveSpec,
        UserDerive,
        derived_values,
        warn_at_user,
    )
    from nsight_lab.results.frame import to_dataframe
    from nsight_lab.results.frame_summary import summary_counters, summary_rows
    from nsight_lab.results.ranks import SPAN_RANK, add_rank_rows
    from nsight_lab.results.rows import InfoColumn
    from nsight_lab.results.stored import runs_frame, session_results, stored_results

__all__ = [
    "BUILTIN_DERIVES",
    "MISSING_UNIT_WARNING",
    "MODEL_PREFIX",
    "NORMALIZED_COLUMNS",
    "SPAN_RANK",
    "DeriveFailures",
    "DeriveSpec",
    "InfoColumn",
    "UserDerive",
    "add_rank_rows",
    "derived_values",
    "runs_frame",
    "session_results",
    "stored_results",
    "summary_counters",
    "summary_rows",
    "to_dataframe",
    "warn_at_user",
]

_HOMES = {
    "NORMALIZED_COLUMNS": "columns",
    "BUILTIN_DERIVES": "derive",
    "MISSING_UNIT_WARNING": "derive",
    "MODEL_PREFIX": "derive",
    "DeriveFailures": "derive",
    "DeriveSpec": "derive",
    "UserDerive": "derive",
    "derived_values": "derive",
    "warn_at_user": "derive",
    "InfoColumn": "rows",
    "to_dataframe": "frame",
    "SPAN_RANK": "ranks",
    "add_rank_rows": "ranks",
    "runs_frame": "stored",
    "session_results": "stored",
    "stored_results": "stored",
    "summary_counters": "frame_summary",
    "summary_rows": "frame_summary",
}


__getattr__ = lazy_exports(__name__, _HOMES)
