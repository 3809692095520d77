"""Records -> the nsight-python-compatible DataFrame.

One row per region, metric and config.

Columns are a superset of nsight-python's ``ProfileResults.to_dataframe()``:

``Annotation, Metric, <params>, AvgValue, StdDev, MinValue, MaxValue, NumRuns, Kernel,
GPU, Host, ComputeClock, MemoryClock, Unit, CI95_Lower, CI95_Upper, RelativeStdDevPct,
StableMeasurement, Normalized, Geomean`` then nsight-lab's own: ``MedianValue,
NormalizedColumns, Backend, SessionId, SMClockMHzMin, TemperatureC, TemperatureCMax,
PowerW, ThrottledRuns, ClockEventReasons, ThermalWaitS``.

Differences from nsight-python, on purpose: ``ComputeClock``/``MemoryClock`` are the
mean clocks *measured* through NVML during the runs (MHz), not the device's rating; CI95
(the interval of the mean, from :func:`nsight_lab.stats.summarize`) uses Student's t, on
the log scale for quantities that cannot be negative, so it never goes below zero;
normalization divides every value column by the target region's median
(``MedianValue``; nsight-python divides by its mean, which one slow run can move) and
names them in ``NormalizedColumns``; the roofline columns use the median duration too,
while ``AvgValue`` stays the mean.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nsight_lab.errors import OptionError
from nsight_lab.records import TIME_METRIC, RunRecord
from nsight_lab.roofline.placement import place_session, region_work
from nsight_lab.stats import geomean, summarize

if TYPE_CHECKING:
    from nsight_lab.records import JsonScalar, SessionInfo
    from nsight_lab.roofline.placement import Peaks

MODEL_PREFIX = "model__"
"""Per-region quantities from the work model (FLOPs, bytes).

They are carried in record metrics.
"""
VALUE_COLUMNS = (
    "AvgValue",
    "StdDev",
    "MinValue",
    "MaxValue",
    "MedianValue",
    "CI95_Lower",
    "CI95_Upper",
)
"""The columns ``--normalize-against`` divides."""

UserDerive = Callable[..., object]
"""A ``--derive`` function from the notebook, called as ``f(duration_ns, **config)``.

It should return a number or a dict of named numbers; being user code, it is checked.
"""


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


def derived_values(
    record: RunRecord,
    names: Sequence[str],
    functions: Mapping[str, UserDerive],
    failures: DeriveFailures | None = None,
) -> dict[str, tuple[float, str]]:
    """Compute ``--derive`` metrics of one record: name -> (value, unit).

    ``tflops`` and ``gbps`` divide the modelled FLOPs / bytes of the region by its time;
    any other name is a user function called as ``f(duration_ns, **config)`` returning
    a number or a dict of named numbers.

    Args:
        record: The run.
        names: ``--derive`` names.
        functions: User derive functions by name.
        failures: Collects user functions' failures, whose value becomes NaN; without
            it a failure raises.

    Raises:
        OptionError: A user function raised or returned something that is not a
            number, and ``failures`` is ``None``.
    """
    out: dict[str, tuple[float, str]] = {}
    ns = record.duration_ns
    for name in names:
        if name == "tflops":
            flops = record.metrics.get(f"{MODEL_PREFIX}flops", math.nan)
            out["tflops"] = (flops / ns / 1e3 if ns > 0 else math.nan, "TFLOP/s")
        elif name == "gbps":
            moved = record.metrics.get(
                f"{MODEL_PREFIX}bytes_read", math.nan
            ) + record.metrics.get(f"{MODEL_PREFIX}bytes_written", math.nan)
            out["gbps"] = (moved / ns if ns > 0 else math.nan, "GB/s")
        else:
            values, reason = _call_derive(name, functions[name], ns, record.config)
            if reason is None:
                out.update((key, (val, "")) for key, val in values.items())
            elif failures is None:
                msg = f"--derive {name}: {name}(duration_ns, **config) {reason}"
                raise OptionError(msg)
            else:
                failures.add(name, record, reason)
                out[name] = (math.nan, "")
    return out


def _call_derive(
    name: str, func: UserDerive, duration_ns: float, config: Mapping[str, JsonScalar]
) -> tuple[dict[str, float], str | None]:
    """Call a user derive function: its named values, or why it failed."""
    try:
        value = func(duration_ns, **config)
    except Exception as exc:  # noqa: BLE001  (user code; reported, not propagated)
        return {}, _short(f"raised {type(exc).__name__}: {exc}")
    items = value.items() if isinstance(value, Mapping) else [(name, value)]
    values: dict[str, float] = {}
    for key, val in items:
        if not isinstance(val, int | float | np.number):
            return {}, _short(f"returned {val!r}; return a number or a dict of numbers")
        values[str(key)] = float(val)
    return values, None


def _short(text: str, limit: int = 160) -> str:
    """One line of at most ``limit`` characters (user text can be anything)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def to_dataframe(  # noqa: PLR0913  (the --derive/--normalize ones are keyword-only)
    records: Sequence[RunRecord],
    session: SessionInfo,
    param_names: Sequence[str],
    *,
    derive: Sequence[str] = (),
    functions: Mapping[str, UserDerive] | None = None,
    normalize_against: str | None = None,
    peaks: Peaks | None = None,
    derive_failures: DeriveFailures | None = None,
) -> pd.DataFrame:
    """Aggregate per-run records into the results DataFrame.

    Args:
        records: Measured records of one session.
        session: The session (GPU name, host, backend, id).
        param_names: Grid parameter names, in order; each becomes a column.
        derive: ``--derive`` names.
        functions: User derive functions by name.
        normalize_against: Annotation whose *median* divides every value column,
            per config and metric (one slow run of it does not move the ratios).
        peaks: The device's roofs; with them, time rows gain the roofline columns.
        derive_failures: Collects user derive functions' failures (their values become
            NaN); without it such a failure raises.

    Returns:
        One row per (annotation, metric, config), in the order regions first ran.

    Raises:
        OptionError: ``normalize_against`` is not an annotation of the records, or a
            derive function failed and ``derive_failures`` is ``None``.
    """
    series: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    units: dict[str, str] = {TIME_METRIC: "ns"}
    by_group: dict[tuple[str, int], list[RunRecord]] = defaultdict(list)
    for record in records:
        by_group[(record.annotation, record.config_index)].append(record)
        series[(record.annotation, TIME_METRIC, record.config_index)].append(
            record.duration_ns
        )
        for metric, value in record.metrics.items():
            if not metric.startswith(MODEL_PREFIX):
                series[(record.annotation, metric, record.config_index)].append(value)
        for metric, (value, unit) in derived_values(
            record, derive, functions or {}, derive_failures
        ).items():
            series[(record.annotation, metric, record.config_index)].append(value)
            units[metric] = unit

    rows: list[dict[str, object]] = []
    for (annotation, metric, ci), values in series.items():
        group = by_group[(annotation, ci)]
        stats = summarize(values)
        tel = [r.telemetry for r in group]
        sm = [t.sm_clock_mhz for t in tel if t.sm_clock_mhz is not None]
        mem = [t.mem_clock_mhz for t in tel if t.mem_clock_mhz is not None]
        temp = [t.temperature_c for t in tel if t.temperature_c is not None]
        power = [t.power_w for t in tel if t.power_w is not None]
        reasons = sorted({w for t in tel for w in t.clock_event_reasons})
        config: dict[str, JsonScalar] = group[0].config
        kernels = sorted({k for r in group for k in r.kernels})
        row: dict[str, object] = {"Annotation": annotation, "Metric": metric}
        row.update({p: config.get(p) for p in param_names})
        row.update(
            {
                "AvgValue": stats.mean,
                "StdDev": stats.std,
                "MinValue": stats.min,
                "MaxValue": stats.max,
                "NumRuns": stats.n,
                "Kernel": ";".join(kernels),
                "GPU": session.device,
                "Host": session.host,
                "ComputeClock": _mean(sm),
                "MemoryClock": _mean(mem),
                "Unit": units.get(metric, ""),
                "CI95_Lower": stats.ci95_low,
                "CI95_Upper": stats.ci95_high,
                "RelativeStdDevPct": stats.rsd_pct,
                "StableMeasurement": stats.stable,
                "Normalized": False,
                "Geomean": math.nan,
                "MedianValue": stats.median,
                "NormalizedColumns": "",
                "Backend": session.backend,
                "SessionId": session.id,
                "SMClockMHzMin": min(sm) if sm else math.nan,
                "TemperatureC": _mean(temp),
                "TemperatureCMax": max(temp) if temp else math.nan,
                "PowerW": _mean(power),
                "ThrottledRuns": sum(1 for t in tel if t.throttled),
                "ClockEventReasons": ", ".join(reasons),
                "ThermalWaitS": sum(r.thermal_wait_s for r in group),
            }
        )
        rows.append(row)
    frame: pd.DataFrame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame = _add_roofline(frame, records, peaks, list(param_names))
    if normalize_against is not None:
        frame = _normalize(frame, normalize_against, list(param_names))
    frame["Geomean"] = frame.groupby(["Annotation", "Metric"])["AvgValue"].transform(
        lambda col: geomean(list(col))
    )
    return frame


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


ROOFLINE_COLUMNS = (
    "FLOPs",
    "FLOPsSource",
    "BytesRead",
    "BytesWritten",
    "BytesSource",
    "ArithmeticIntensity",
    "AchievedTFLOPs",
    "AchievedGBps",
    "RoofTFLOPs",
    "Bound",
    "PctOfRoof",
    "RooflineDtype",
)
"""Roofline placement of each region (time rows only; see ``roofline.place``)."""


WORK_COLUMNS = (
    "FLOPs",
    "FLOPsSource",
    "BytesRead",
    "BytesWritten",
    "BytesSource",
    "ArithmeticIntensity",
    "AchievedTFLOPs",
    "AchievedGBps",
)
"""The roofline columns that need no peaks: filled whenever FLOPs and bytes are."""


def _time_rows(
    frame: pd.DataFrame,
    annotation: str,
    config: Mapping[str, object],
    params: list[str],
) -> pd.Series:
    match = (frame["Annotation"] == annotation) & (frame["Metric"] == TIME_METRIC)
    for name in params:
        match &= frame[name] == config.get(name)
    return match


def _add_roofline(
    frame: pd.DataFrame,
    records: Sequence[RunRecord],
    peaks: Peaks | None,
    params: list[str],
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
        frame.loc[_time_rows(frame, w.annotation, w.config, params), WORK_COLUMNS] = [
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
            _time_rows(frame, p.annotation, p.config, params), list(ROOFLINE_COLUMNS)
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


def _normalize(frame: pd.DataFrame, target: str, params: list[str]) -> pd.DataFrame:
    if target not in set(frame["Annotation"]):
        seen = ", ".join(repr(a) for a in dict.fromkeys(frame["Annotation"]))
        msg = f"--normalize-against: no region named {target!r}; regions seen: {seen}"
        raise OptionError(msg)
    keys = [*params, "Metric"]
    base = frame.loc[frame["Annotation"] == target, [*keys, "MedianValue"]].rename(
        columns={"MedianValue": "_base"}
    )
    merged: pd.DataFrame = (
        frame.merge(base, on=keys, how="left") if keys else frame.assign(_base=np.nan)
    )
    for column in VALUE_COLUMNS:
        merged[column] = merged[column] / merged["_base"]
    merged["Normalized"] = target
    merged["NormalizedColumns"] = ",".join(VALUE_COLUMNS)
    merged["Unit"] = f"x {target}"
    result: pd.DataFrame = merged.drop(columns="_base")
    return result


SUMMARY_COLUMNS = (
    "Annotation",
    "Metric",
    "AvgValue",
    "StdDev",
    "MinValue",
    "MaxValue",
    "NumRuns",
    "Unit",
    "RelativeStdDevPct",
    "StableMeasurement",
    "ComputeClock",
    "TemperatureC",
    "ThrottledRuns",
)
"""Columns of the results DataFrame shown in the summary table (with the params)."""


def _json_value(value: Any) -> str | int | float | bool | None:  # noqa: ANN401
    """A DataFrame cell as a JSON scalar (NaN and infinities as None)."""
    if value is None:
        return None
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, str):
        from nsight_lab.figures import printable  # plotly: loaded when needed only

        return printable(value)
    if isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return str(value)


def summary_rows(frame: pd.DataFrame | None) -> list[dict[str, Any]]:
    """Rows of the summary table from the results DataFrame: the one summary.

    The inline widget (its ``summary`` trait) and the sidebar (``summary`` of ``GET
    sessions/<id>?figures=1``, over every stored run) show these rows; the front
    ends only render them. The columns are those of :data:`SUMMARY_COLUMNS` the
    frame has, with the config parameters (the columns between ``Metric`` and
    ``AvgValue``) after ``Metric``; values are JSON scalars (NaN and infinities as
    None, text with control characters made visible).

    Raises:
        Nothing.
    """
    if frame is None or frame.empty:
        return []
    names = [str(c) for c in frame.columns]
    params: list[str] = []
    if "Metric" in names and "AvgValue" in names:
        params = names[names.index("Metric") + 1 : names.index("AvgValue")]
    head = [c for c in SUMMARY_COLUMNS[:2] if c in names]
    tail = [c for c in SUMMARY_COLUMNS[2:] if c in names]
    columns = head + params + tail
    return [
        {column: _json_value(row[column]) for column in columns}
        for row in frame.to_dict("records")
    ]


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else math.nan
