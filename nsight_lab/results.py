"""Records -> the nsight-python-compatible DataFrame.

One row per region, metric and config.

The columns are nsight-python 1.1.0's ``ProfileResults.to_dataframe()``, in its order
and with its meanings and dtypes:

``Annotation, Metric, <params>, AvgValue, StdDev, MinValue, MaxValue, NumRuns, Kernel,
GPU, Host, ComputeClock, MemoryClock, Unit, <info collectors>, CI95_Lower, CI95_Upper,
RelativeStdDevPct, StableMeasurement, Normalized, [NormalizationValue], Geomean``

then nsight-lab's own: ``MedianValue, NormalizedColumns, Backend, SessionId,
SMClockMHz, MemoryClockMHz, SMClockMHzMin, TemperatureC, TemperatureCMax, PowerW,
ThrottledRuns, ClockEventReasons, ThermalWaitS`` and the roofline columns.

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
*measured* through NVML during the runs are ``SMClockMHz``/``MemoryClockMHz`` (means,
MHz); CI95 (the interval of the mean, from :func:`nsight_lab.stats.summarize`) uses
Student's t, on the log scale for quantities that cannot be negative, so it never goes
below zero; normalization divides every value column by the target region's *median*
(``MedianValue``; nsight-python divides only ``AvgValue``, by the target's mean, which
one slow run can move), names them in ``NormalizedColumns`` and writes the divisor in
``NormalizationValue``; the roofline columns use the median duration too, while
``AvgValue`` stays the mean.
"""

from __future__ import annotations

import inspect
import math
import sys
import warnings
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nsight_lab.analysis.compare import metric_unit
from nsight_lab.contract.records import TIME_METRIC, RunRecord
from nsight_lab.distributed.frame import add_rank_rows
from nsight_lab.distributed.metrics import PREFIX as RANK_PREFIX
from nsight_lab.errors import OptionError
from nsight_lab.host_speed import PREFIX as HOST_PREFIX
from nsight_lab.roofline.placement import (
    ROOFLINE_COLUMNS,
    WORK_COLUMNS,
    place_session,
    region_work,
)
from nsight_lab.stats import STABLE_RSD_PCT, geomean, summarize

if TYPE_CHECKING:
    from nsight_lab.contract.records import SessionInfo
    from nsight_lab.roofline.placement import Peaks

MODEL_PREFIX = "model__"
"""Per-region quantities from the work model (FLOPs, bytes).

They are carried in record metrics.
"""
_NOT_ROWS = (MODEL_PREFIX, RANK_PREFIX, HOST_PREFIX)
"""Metrics that are no ``Metric`` row: the work model (its own columns), the ranks
(per-rank rows) and the host's speed (it qualifies comparisons)."""
NORMALIZED_COLUMNS = {
    "AvgValue": "NormalizationValue",
    "MedianValue": "MedianNormalizationValue",
}
"""What ``--normalize-against`` divides, and the column that holds each divisor: the
mean by the target's mean (nsight-python's ``AvgValue`` and ``NormalizationValue``)
and nsight-lab's median by the target's median (one slow run of the target does not
move it). The other columns keep their values, as in nsight-python."""

UserDerive = Callable[..., object]
"""A derive function: ``f(*metric_values, *config_values)`` as nsight-python calls it.

``f(duration_ns, **config)`` (the config by name) is accepted too. It returns a number,
a ``(number, unit)`` tuple, or a dict of either; being user code, it is checked.
"""

MISSING_UNIT_WARNING = (
    "Derived metric {!r} does not have a unit specified. Return a tuple (value, unit) "
    "instead of just the value. np.nan will be added to the 'Unit' column in the "
    "dataframe."
)
"""nsight-python's warning for a derived value without a unit (``warn_units``)."""


class DeriveFailures:
    """Where user ``--derive`` functions failed: their value is NaN there.

    A function that raises or returns a non-number for one run must not cost the
    profile: the durations stand, the derived value of that run is NaN, and one note
    per function and config (the first failure) says why.
    """

    MAX_NOTES_PER_FUNCTION = 3
    """Notes listed per function; further failing configs are only counted."""

    def __init__(self) -> None:
        """Start with no failures."""
        self._first: dict[tuple[str, int], str] = {}
        self._runs: dict[tuple[str, int], int] = {}

    def add(self, name: str, record: RunRecord, reason: str) -> None:
        """Count one failed call of ``name`` on ``record``; keep the first reason."""
        key = (name, record.config_index)
        if key not in self._first:
            config = ", ".join(f"{k}={v!r}" for k, v in record.config.items())
            self._first[key] = f"{name}(duration_ns{', ' if config else ''}{config})"
            self._first[key] += f" {reason}"
        self._runs[key] = self._runs.get(key, 0) + 1

    def __bool__(self) -> bool:
        """Whether any call failed."""
        return bool(self._first)

    def notes(self) -> list[str]:
        """One line per failing function and config, at most a few per function."""
        shown: dict[str, int] = {}
        hidden: dict[str, int] = {}
        lines: list[str] = []
        for (name, ci), first in self._first.items():
            if shown.get(name, 0) >= self.MAX_NOTES_PER_FUNCTION:
                hidden[name] = hidden.get(name, 0) + 1
                continue
            shown[name] = shown.get(name, 0) + 1
            runs = self._runs[(name, ci)]
            lines.append(
                f"--derive {name}: {first} ({runs} run{'s' if runs != 1 else ''} of "
                f"config {ci}); its value is NaN there"
            )
        lines.extend(
            f"--derive {name}: also failed for {n} more config{'s' if n != 1 else ''}"
            for name, n in hidden.items()
        )
        return lines


@dataclass
class DeriveSpec:
    """How derived metrics are computed for one profile.

    Attributes:
        names: The derive names in order: ``tflops``/``gbps`` (built-in, unless a
            function of that name is given) or a key of ``functions``.
        functions: User derive functions by name.
        inputs: The metrics whose per-run values come first in a user function's
            arguments, in order (nsight-python's ``metrics``).
        warn_units: Warn, as nsight-python does, for a value returned without a unit.
        failures: Collects user functions' failures (their value becomes NaN);
            ``None``: a failure raises (the user's own exception, unchanged).
    """

    names: Sequence[str] = ()
    functions: Mapping[str, UserDerive] = field(default_factory=dict)
    inputs: Sequence[str] = (TIME_METRIC,)
    warn_units: bool = False
    failures: DeriveFailures | None = None


def derived_values(
    record: RunRecord,
    spec: DeriveSpec,
    config: Mapping[str, object] | None = None,
) -> dict[str, tuple[float, float | str]]:
    """Compute the derived metrics of one record: name -> (value, unit).

    ``tflops`` and ``gbps`` divide the modelled FLOPs / bytes of the region by its time;
    any other name (or one of those two given as a function) is a user function,
    called as nsight-python calls ``derive_metric``: the values of ``spec.inputs``,
    then the config's values in order (``f(duration_ns, **config)`` is accepted too).
    It returns a number (the metric is named after the function), a ``(number,
    unit)`` tuple, or a dict of either (named by its keys). A missing unit is NaN.

    Args:
        record: The run (a region that failed in it yields NaN, uncalled).
        spec: The derive names, functions and inputs.
        config: The config's values as the function sees them (the objects the
            profile bound, e.g. a ``torch.dtype``); ``record.config`` by default.

    Raises:
        OptionError: A user function's signature does not fit the metrics and the
            config, or it returned something that is not a number, and
            ``spec.failures`` is ``None``.
        Exception: Whatever a user function raised, when ``spec.failures`` is
            ``None``.
    """
    out: dict[str, tuple[float, float | str]] = {}
    ns = record.duration_ns
    for name in spec.names:
        func = spec.functions.get(name)
        if func is None and name == "tflops":
            flops = record.metrics.get(f"{MODEL_PREFIX}flops", math.nan)
            out["tflops"] = (flops / ns / 1e3 if ns > 0 else math.nan, "TFLOP/s")
        elif func is None and name == "gbps":
            moved = record.metrics.get(
                f"{MODEL_PREFIX}bytes_read", math.nan
            ) + record.metrics.get(f"{MODEL_PREFIX}bytes_written", math.nan)
            out["gbps"] = (moved / ns if ns > 0 else math.nan, "GB/s")
        elif func is not None:
            inputs = [_input(record, metric) for metric in spec.inputs]
            values = dict(record.config if config is None else config)
            if any(math.isnan(v) for v in inputs):  # the region failed in this run
                out[name] = (math.nan, math.nan)
                continue
            try:
                got = _call_derive(name, func, inputs, values, warn=spec.warn_units)
            except _DeriveError as exc:
                if spec.failures is None:
                    raise OptionError(str(exc)) from exc.__cause__
                spec.failures.add(name, record, exc.reason)
                out[name] = (math.nan, math.nan)
                continue
            except (Exception, SystemExit) as exc:  # sys.exit() too: not the profile's
                if spec.failures is None:
                    raise
                reason = _short(f"raised {type(exc).__name__}: {exc}")
                spec.failures.add(name, record, reason)
                out[name] = (math.nan, math.nan)
                continue
            out.update(got)
    return out


def _input(record: RunRecord, metric: str) -> float:
    if metric == TIME_METRIC:
        return record.duration_ns
    return float(record.metrics.get(metric, math.nan))


class _DeriveError(Exception):
    """A derive function that cannot be called, or returned a non-number."""

    def __init__(self, reason: str, name: str | None = None) -> None:
        """``reason``: what went wrong, one line; ``name``: the function, if known."""
        super().__init__(f"derive {name}: {name}(...) {reason}" if name else reason)
        self.reason = reason


def _call_derive(
    name: str,
    func: UserDerive,
    inputs: Sequence[float],
    config: Mapping[str, object],
    *,
    warn: bool,
) -> dict[str, tuple[float, float | str]]:
    """Call a user derive function; its named ``(value, unit)`` pairs.

    Raises:
        _DeriveError: It cannot be called with the metrics and the config, or it
            returned something that is not a number.
        Exception: Whatever the function raised.
    """
    value = _bound_call(func, inputs, config)()
    items = (
        [(str(key), val) for key, val in value.items()]
        if isinstance(value, Mapping)
        else [(name, value)]
    )
    out: dict[str, tuple[float, float | str]] = {}
    for key, val in items:
        number: object = val
        unit: object = math.nan
        if isinstance(val, tuple) and len(val) >= 2:  # noqa: PLR2004
            number, unit = val[0], val[1]
        elif warn:
            warn_at_user(MISSING_UNIT_WARNING.format(key), UserWarning)
        if number is None:
            number = math.nan
        if isinstance(number, bool) or not isinstance(number, int | float | np.number):
            reason = _short(
                f"returned {val!r}; return a number, a (number, unit) tuple or a dict "
                "of them"
            )
            raise _DeriveError(reason, name)
        out[key] = (float(number), unit if isinstance(unit, str) else math.nan)
    return out


def _bound_call(
    func: UserDerive, inputs: Sequence[float], config: Mapping[str, object]
) -> Callable[[], object]:
    """``func`` bound to the metric values and the config, as it accepts them.

    nsight-python's order first (metric values, then the config's values); else the
    config by name (``f(duration_ns, **config)``).

    Raises:
        _DeriveError: Neither fits the function's signature (nsight-python's
            message).
    """
    args = (*inputs, *config.values())
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # a builtin without a signature: just try it
        return lambda: func(*args)
    try:
        signature.bind(*args)
    except TypeError:
        pass
    else:
        return lambda: func(*args)
    try:
        signature.bind(*inputs, **config)
    except TypeError as exc:
        takes = sum(
            1
            for p in signature.parameters.values()
            if p.kind not in {p.VAR_POSITIONAL, p.VAR_KEYWORD}
        )
        reason = (
            f"derive_metric expects {len(args)} parameters ({len(inputs)} metric "
            f"values + {len(config)} configs), but has {takes} parameters"
        )
        raise _DeriveError(reason) from exc
    return lambda: func(*inputs, **config)


_PACKAGE_DIR = str(Path(__file__).resolve().parent)


def warn_at_user(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` pointing at the first frame outside nsight-lab.

    The user's call (an ``analyze.kernel`` function, a notebook cell) is where the
    warning is shown, however deep in nsight-lab it was raised (Python 3.12's
    ``skip_file_prefixes``, for 3.10 and 3.11 too).
    """
    level = 2  # stacklevel 2: warn_at_user's caller
    frame = sys._getframe(1)  # noqa: SLF001
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    warnings.warn(message, category, stacklevel=level)


def _short(text: str, limit: int = 160) -> str:
    """One line of at most ``limit`` characters (user text can be anything)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


@dataclass(frozen=True)
class InfoColumn:
    """Values an info collector gave, for the frame (nsight-python's info collectors).

    Attributes:
        name: The column name.
        scope: ``once``, ``config``, ``run`` or ``annotation``.
        by_run: The value per ``(annotation, config index, run index)``; ``once``,
            ``config`` and ``run`` values are given for every annotation of the run.
    """

    name: str
    scope: str
    by_run: Mapping[tuple[str, int, int], object]


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
    functions: Mapping[str, UserDerive] | None = None,
    normalize_against: str | None = None,
    peaks: Peaks | None = None,
    derive_failures: DeriveFailures | None = None,
    config_values: Sequence[Mapping[str, object]] | None = None,
    rated_clocks_khz: tuple[int | None, int | None] = (None, None),
    info: Sequence[InfoColumn] = (),
    raw: list[dict[str, object]] | None = None,
    metrics: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Aggregate per-run records into the results DataFrame.

    Args:
        records: Measured records of one session.
        session: The session (GPU name, host, backend, id).
        param_names: Grid parameter names, in order; each becomes a column.
        derive: The derive names (``functions`` by name, failures collected in
            ``derive_failures``), or a whole :class:`DeriveSpec`.
        functions: User derive functions by name.
        normalize_against: Annotation whose *median* divides every value column,
            per config and metric (one slow run of it does not move the ratios).
        peaks: The device's roofs; with them, time rows gain the roofline columns.
        derive_failures: Collects user derive functions' failures (their values become
            NaN); without it such a failure raises.
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
            roofline columns sit on the duration's rows.

    Returns:
        One row per (annotation, metric, config), in nsight-python's order: the
        measured metrics' rows, then the derived ones', each region by region (in
        the order they first ran) and config by config.

    Raises:
        OptionError: ``normalize_against`` is not an annotation of the records, or a
            derive function failed and no failures are collected.
    """
    spec = (
        derive
        if isinstance(derive, DeriveSpec)
        else DeriveSpec(
            names=tuple(derive), functions=functions or {}, failures=derive_failures
        )
    )
    series: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    units: dict[str, float | str] = {}
    derived_names: set[str] = set()
    by_group: dict[tuple[str, int], list[RunRecord]] = defaultdict(list)
    for record in records:
        by_group[(record.annotation, record.config_index)].append(record)
        config_shown = config_values[record.config_index] if config_values else None
        derived = derived_values(record, spec, config_shown)
        derived_names.update(derived)
        run_values = _run_values(record, derived, metrics)
        for metric, (value, unit) in run_values.items():
            series[(record.annotation, metric, record.config_index)].append(value)
            if isinstance(unit, str) or metric not in units:
                units[metric] = unit
        if raw is not None:
            raw.extend(
                _raw_rows(
                    record,
                    run_values,
                    session=session,
                    shown=config_shown,
                    param_names=param_names,
                    rated=rated_clocks_khz,
                    info=info,
                )
            )

    rows: list[dict[str, object]] = []
    config_of: list[int] = []
    for (annotation, metric, ci), values in _nsight_python_order(series, derived_names):
        group = by_group[(annotation, ci)]
        valid = [v for v in values if not math.isnan(v)]
        stats = summarize(valid) if valid else None
        tel = [r.telemetry for r in group]
        sm = [t.sm_clock_mhz for t in tel if t.sm_clock_mhz is not None]
        mem = [t.mem_clock_mhz for t in tel if t.mem_clock_mhz is not None]
        temp = [t.temperature_c for t in tel if t.temperature_c is not None]
        power = [t.power_w for t in tel if t.power_w is not None]
        reasons = sorted({w for t in tel for w in t.clock_event_reasons})
        config: Mapping[str, object] = (
            config_values[ci] if config_values else group[0].config
        )
        # nsight-python's: the first run's kernels, combined as "k1|k2" in launch
        # order (its ActionData.combine).
        kernels = "|".join(group[0].kernels) if group else ""
        nan = math.nan
        row: dict[str, object] = {"Annotation": annotation, "Metric": metric}
        row.update({p: config.get(p) for p in param_names})
        row.update(
            {
                "AvgValue": stats.mean if stats else nan,
                "StdDev": stats.std if stats else nan,
                "MinValue": stats.min if stats else nan,
                "MaxValue": stats.max if stats else nan,
                "NumRuns": stats.n if stats else 0,
                "Kernel": kernels,
                "GPU": session.device,
                "Host": session.host,
                "ComputeClock": rated_clocks_khz[0],
                "MemoryClock": rated_clocks_khz[1],
                "Unit": units.get(metric, nan),
            }
        )
        for collector in info:
            row.update(_info_cells(collector, group))
        row.update(
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
                "NormalizedColumns": "",
                "Backend": session.backend,
                "SessionId": session.id,
                "SMClockMHz": _mean(sm),
                "MemoryClockMHz": _mean(mem),
                "SMClockMHzMin": min(sm) if sm else nan,
                "TemperatureC": _mean(temp),
                "TemperatureCMax": max(temp) if temp else nan,
                "PowerW": _mean(power),
                "ThrottledRuns": sum(1 for t in tel if t.throttled),
                "ClockEventReasons": ", ".join(reasons),
                "ThermalWaitS": sum(r.thermal_wait_s for r in group),
            }
        )
        rows.append(row)
        config_of.append(ci)
    frame: pd.DataFrame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    _as_nsight_python_dtypes(frame)
    measured = [r for r in records if not math.isnan(r.duration_ns)]
    frame[_CONFIG] = config_of
    frame = _add_roofline(frame, measured, peaks)
    if normalize_against is not None:
        frame = _normalize(frame, normalize_against)
    frame["Geomean"] = frame.groupby(["Annotation", "Metric"], sort=False)[
        "AvgValue"
    ].transform(lambda col: geomean(list(col)))
    frame = add_rank_rows(frame, records, _CONFIG)  # multi-rank sessions only
    result: pd.DataFrame = frame.drop(columns=_CONFIG)
    return result


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


def _run_values(
    record: RunRecord,
    derived: Mapping[str, tuple[float, float | str]],
    metrics: Sequence[str] | None,
) -> dict[str, tuple[float, float | str]]:
    """One record's values and units: its duration, its counters, its derived values.

    Only ``metrics`` and the derived values where ``metrics`` is given (see
    :func:`to_dataframe`). A counter's unit is what its name says
    (:func:`~nsight_lab.analysis.compare.metric_unit`; NaN where it says none, as
    nsight-python leaves a derived value's).
    """
    values: dict[str, tuple[float, float | str]] = {
        TIME_METRIC: (record.duration_ns, "ns")
    }
    values.update(
        (metric, (value, metric_unit(metric) or math.nan))
        for metric, value in record.metrics.items()
        if not metric.startswith(_NOT_ROWS)
    )
    if metrics is not None:
        values = {k: v for k, v in values.items() if k in metrics}
    values.update(derived)
    return values


def _raw_rows(  # noqa: PLR0913  (one record's context, keyword-only after it)
    record: RunRecord,
    values: Mapping[str, tuple[float, float | str]],
    *,
    session: SessionInfo,
    shown: Mapping[str, object] | None,
    param_names: Sequence[str],
    rated: tuple[int | None, int | None],
    info: Sequence[InfoColumn],
) -> list[dict[str, object]]:
    """nsight-python's raw rows of one record: one per value of :func:`_run_values`."""
    config = record.config if shown is None else shown
    key = (record.annotation, record.config_index, record.run_index)
    return [
        {
            "Annotation": record.annotation,
            "Value": value,
            "Metric": metric,
            "Kernel": "|".join(record.kernels),
            "GPU": session.device,
            "Host": session.host,
            "ComputeClock": rated[0],
            "MemoryClock": rated[1],
            "Unit": unit,
            **{column.name: column.by_run.get(key) for column in info},
            **{name: config.get(name) for name in param_names},
        }
        for metric, (value, unit) in values.items()
    ]


_CONFIG = "_config_index"
"""A working column of :func:`to_dataframe`: the row's config index (dropped)."""


BUILTIN_DERIVES = frozenset({"tflops", "gbps"})
"""``--derive`` names computed from the records alone (user functions are not)."""


def stored_results(
    records: Sequence[RunRecord], session: SessionInfo, peaks: Peaks | None
) -> pd.DataFrame:
    """The results DataFrame of a stored session, rebuilt from its runs.

    The session's options give the parameters, the built-in ``--derive`` metrics
    and ``--normalize-against``; user ``--derive`` functions are not recomputed
    (the notebook that defined them is not here), and normalization is left out
    while its target region has no runs (a session still running, say).

    Raises:
        Nothing beyond what :func:`to_dataframe` raises for stored records.
    """
    options = session.options
    params = [str(p) for p in (options.get("params") or {})]
    if not params and session.configs:  # an explicit config list (--configs-from)
        params = [str(p) for p in session.configs[0]]
    derive = [str(d) for d in options.get("derive") or [] if d in BUILTIN_DERIVES]
    target = options.get("normalize_against")
    if target is not None and not any(r.annotation == target for r in records):
        target = None
    return to_dataframe(
        records,
        session,
        params,
        derive=derive,
        normalize_against=target,
        peaks=peaks,
    )


def _time_rows(frame: pd.DataFrame, annotation: str, config_index: int) -> pd.Series:
    return (
        (frame["Annotation"] == annotation)
        & (frame["Metric"] == TIME_METRIC)
        & (frame[_CONFIG] == config_index)
    )


def _add_roofline(
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


def _normalize(frame: pd.DataFrame, target: str) -> pd.DataFrame:
    """Divide :data:`NORMALIZED_COLUMNS` by ``target``'s, per config and metric.

    As nsight-python: ``NormalizationValue`` (after ``Normalized``) is the target's
    ``AvgValue``, ``Unit`` and the other columns stay as they were, and rows whose
    config or metric ``target`` lacks are left out. ``MedianNormalizationValue``
    (after ``NormalizedColumns``) is nsight-lab's.
    """
    if target not in set(frame["Annotation"]):
        seen = ", ".join(repr(a) for a in dict.fromkeys(frame["Annotation"]))
        msg = f"--normalize-against: no region named {target!r}; regions seen: {seen}"
        raise OptionError(msg)
    keys = [_CONFIG, "Metric"]
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


def summary_rows(frame: pd.DataFrame | None) -> list[dict[str, str]]:
    """Rows of the summary table from the results DataFrame: the one summary.

    One row per region and config that leads with the answer (median duration,
    RSD, GB/s, TFLOP/s, % of roof, bound; :func:`nsight_lab.views.summary.
    region_rows`), every value a display string formatted by
    :mod:`nsight_lab.text.units`. The inline widget (its ``summary`` trait), the
    sidebar (``summary`` of ``GET sessions/<id>?figures=1``, over every stored
    run), a cell's static page and ``nsight-lab show`` show these rows; the front
    ends only render them. The other metrics are :func:`summary_counters`.

    Raises:
        Nothing.
    """
    from nsight_lab.views.summary import region_rows

    return region_rows(frame)


def summary_counters(frame: pd.DataFrame | None) -> dict[str, Any]:
    """The counter table beside :func:`summary_rows` (all-zero rows flagged).

    See :func:`nsight_lab.views.summary.counter_table`.

    Raises:
        Nothing.
    """
    from nsight_lab.views.summary import counter_table

    return counter_table(frame)


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else math.nan
