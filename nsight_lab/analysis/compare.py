"""The comparison of two sessions: per region, metric and config, the ratio b/a.

Pure: records in, rows out; the server only reads the store and serialises
the rows. Every interval comes from :mod:`nsight_lab.stats`.

**The ratio** is of medians, ``median_b / median_a``, with the order-statistic
interval of :func:`nsight_lab.stats.median_ratio_ci` (Price-Bonett, on the log scale;
its method and simulated coverage are in :mod:`nsight_lab.stats`). Medians, not means:
a few slow runs (a compile, a clock ramp, another process) on one side must not turn
two sessions of the same code into "23x".

**The verdict** of a row is ``faster`` / ``slower`` (durations; rates such as GB/s
read the other way round), ``higher`` / ``lower`` (other quantities) when the interval
excludes 1 *and* the change is larger than the practical threshold, ``no change``
otherwise ("within noise", or too small to matter), ``inconclusive: clocks`` for a
timed row whose sessions ran at clocks that may explain it (below),
``deterministic`` for rows that have no noise to judge (a ``model__*`` metric of the
work model, or the same value in every run on both sides: the plain ratio, no
interval; views fold them away), and ``None`` when there are too few runs for an
interval.

**Between sessions.** The order-statistic interval knows only the noise *within*
each session. Two sessions of the same code also differ by what changed between them
(other processes, frequency, placement in memory): on the 2-core CPU machine, 40
consecutive sessions of one ``np.sort`` cell in a Jupyter kernel had medians whose
ratio to the previous one's moved by up to 5 % in a quiet hour and up to 15-25 % in
a busy one, well outside intervals from 200 runs each, beside steps of 20-40 % that
the host probe names (``benchmarks/results/cpu_session_drift.json``). So the interval
of a *timed* row (durations and rates made from them) is widened on the log scale,
in quadrature, by :data:`SESSION_DRIFT` of the sessions' backend; counters (bytes,
cycles) are not. On the H200 (``../shared/device/FACTS.md``, 2026-12-02: one
12-region cell, 6 sessions x 3 processes per backend) same-code session medians
moved by p50 0.1 %, p95 0.5 % (cupti, pm) to 0.9 % (events), max 1.6-2.2 %: the
p95 of each backend is its drift (a 95 % term, as the interval is).

**Threshold.** A change smaller than the practical threshold is "no change" whatever
its interval: :func:`verdict` says "slower"/"faster" (or "higher"/"lower") only when
the interval excludes 1 *and* the ratio lies beyond ``1 + threshold`` or below
``1 - threshold``; a row beyond noise but within the threshold says so in its note.
The default, :data:`DEFAULT_THRESHOLD` (2.2 %), is the largest same-code move
measured on the H200: none of those rows (the bar is at most 1 %) would be called
changed, the pm pair that read "slower" at 1.021x reads "no change", and a 3 %
slowdown at 1 % RSD and 20 runs a side is still "slower" in 97.7 % of simulated
pairs (``tests/test_verdicts.py``). ``threshold=0`` judges by the interval alone.

**Clocks and throttling.** A ratio of durations measured at different clocks is
partly the clocks'. Each row carries the median SM clock of each side's runs (NVML,
read around each run; ``None`` where no backend reads it, the cpu backend) and how
many runs of each side were throttled. A timed row whose medians differ by more
than :data:`CLOCK_TOLERANCE` (2 %), or with a throttled run on either side, is
flagged (``clock_differs``, ``throttled_a``/``throttled_b``) and its note says so.
Two cases are **inconclusive: clocks** (:data:`INCONCLUSIVE`) rather than a verdict
that may be the clocks': the runs of one session were throttled and the other's not
(throttled fractions :data:`THROTTLE_APART` or more apart: NVML's clock, read
between runs, does not show a power cap's clock during them), and clocks apart
where the ratio per SM cycle (``cycle_ratio``: the time ratio times the clocks'
ratio, the question a locked clock would answer) reads otherwise than the ratio of
times. Either says both sessions' clocks and what to do (``--clock-control base``,
``--thermal auto``); ``--fail-on-regression`` fails on it only with ``--strict``.
The host has no clock to read; the cpu backend times a fixed probe instead
(:mod:`nsight_lab.host_speed`), and a timed row whose sides' median probes differ by
more than :data:`~nsight_lab.host_speed.HOST_TOLERANCE` is flagged the same way
(``host_differs``).
:func:`session_verdict` folds the rows into one verdict of session b against a.

**Units:** each row names its unit (``ns``, ``bytes``, ``FLOP``, ``cycles``, ``%``,
``bytes/s``...; see :func:`metric_unit`) so that views format its values.

**What is compared:** configs match by equal dicts (not by index), regions by name.
:func:`compare_scope` says which regions and configs both sessions have, which only
one has, and, when nothing is shared, why.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nsight_lab.contract.records import TIME_METRIC, JsonScalar, RunRecord
from nsight_lab.host_speed import HOST_TOLERANCE, PROBE_METRIC
from nsight_lab.host_speed import PREFIX as HOST_PREFIX
from nsight_lab.stats import CONFIDENCE, median_ratio_ci, summarize

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = [
    "CLOCK_TOLERANCE",
    "CONFIDENCE",
    "DEFAULT_THRESHOLD",
    "GPU_SESSION_DRIFT",
    "INCONCLUSIVE",
    "METHOD",
    "SESSION_DRIFT",
    "Comparison",
    "Scope",
    "SessionVerdict",
    "compare_runs",
    "compare_scope",
    "config_text",
    "metric_label",
    "metric_unit",
    "session_verdict",
    "verdict",
    "widen",
]

METHOD = "median-ratio-price-bonett"
"""Names the interval method in payloads (see :mod:`nsight_lab.stats`)."""

MODEL_PREFIX = "model__"
"""Metrics of the work model: counted, not measured, so never judged for noise."""

DETERMINISTIC = "deterministic"
NO_CHANGE = "no change"
SLOWER = "slower"
FASTER = "faster"
INCONCLUSIVE = "inconclusive: clocks"
"""A timed row whose sessions' clocks may explain it (see the module docstring)."""
CHANGED = frozenset({SLOWER, FASTER, "higher", "lower"})

DEFAULT_THRESHOLD = 0.022
"""The practical threshold (a fraction): 2.2 %, the largest between-session move of
a same-code region's median measured on the H200 (module docstring)."""

MIN_TIME_CHANGE_NS = 1_000.0
"""A region's median must move by more than this (1 µs) to be a change: below it, CUDA
events' resolution and launch jitter decide. Measured on the H200
(``benchmarks/results/verdict_calibration_h200.json``): between same-code sessions on
the events backend a ~5 µs add moved by up to 19 % and a 24 µs bmm by 3 % (under
0.8 µs each), 12 of 180 timed rows past the 2.2 % threshold; with this floor, none."""

THROTTLE_APART = 0.5
"""Throttled fractions of two sides this far apart (all runs of one side throttled,
none of the other's, say) make a timed row inconclusive."""

CLOCK_TOLERANCE = 0.02
"""Median SM clocks of two sides that differ by more than this (a fraction) flag a
row: at a locked clock a kernel's time scales with the clock, so 2 % of clock is as
large as the changes a baseline is meant to catch."""

SESSION_DRIFT: dict[str, float] = {
    "cpu": 0.15,
    "events": 0.009,
    "cupti": 0.005,
    "pm": 0.005,
}
"""Between-session uncertainty of timed rows, as a fraction, per backend (95 %).

cpu: 15 %, calibrated on the shared 2-core machine (``benchmarks/cpu_session_drift.py``:
78 pairs of consecutive sessions of one ``np.sort`` cell in a Jupyter kernel, the
intervals also cut into batches, see :func:`nsight_lab.stats.median_ratio_ci`): with
15 %, 3 of the pairs the host probe did not flag were judged other than "no change" in
a busy hour (4 %, what a 95 % interval allows; with 10 %, 10 of them; with 5 %, 14),
1 of 66 in the committed run. Host timings on a shared machine resolve no less; the
host probe names the larger steps.
GPU backends: the p95 of same-code session medians' moves measured on the H200
(``../shared/device/FACTS.md``, 2026-12-02): events 0.9 %, cupti and pm 0.5 %; any
other GPU backend (ncu) :data:`GPU_SESSION_DRIFT`, the largest of them."""
GPU_SESSION_DRIFT = 0.009

_Key = tuple[str, str, str]
"""(annotation, metric, canonical config JSON)."""


def metric_unit(metric: str) -> str:
    """Return the unit of a metric's per-run values, from its name.

    Durations are ``ns`` (every backend reports nanoseconds), the work model's are
    ``FLOP`` and ``bytes``; Nsight Compute names carry their quantity (``bytes``,
    ``cycles``, ``inst``, ``sectors``, ``pct``) and ``per_second`` rates add ``/s``.
    ``""`` when the name does not say.
    """
    if metric == TIME_METRIC:
        return "ns"
    name = metric.lower()
    if name.startswith(MODEL_PREFIX):
        return "FLOP" if "flop" in name else "bytes" if "bytes" in name else ""
    if "pct" in name or name.endswith(".ratio"):
        return "%" if "pct" in name else ""
    base = ""
    for needle, unit in (
        ("bytes", "bytes"),
        ("byte", "bytes"),
        ("cycles", "cycles"),
        ("sectors", "sectors"),
        ("requests", "requests"),
        ("inst", "inst"),
        ("ops", "ops"),
        ("time", "ns"),
    ):
        if needle in name:
            base = unit
            break
    if "per_second" in name:
        return f"{base or '1'}/s"
    return base


def metric_label(metric: str, backend: str = "") -> str:
    """The name a person reads for a metric: what was timed, not a counter's name.

    The duration is ncu's ``gpu__time_duration.sum`` in the DataFrame (nsight-python's
    name), but only ncu reads that counter: the cpu backend times the host, events
    and the others time the GPU.

    Raises:
        Nothing.
    """
    if metric != TIME_METRIC:
        return metric
    if backend == "cpu":
        return "duration (host timer)"
    return "duration (gpu__time_duration)" if backend == "ncu" else "duration"


def verdict(  # noqa: PLR0913  (the interval, then keyword-only settings)
    metric: str,
    unit: str,
    low: float | None,
    high: float | None,
    *,
    deterministic: bool,
    threshold: float = 0.0,
    ratio: float | None = None,
) -> str | None:
    """Return the row's verdict from its ratio and interval (the module docstring).

    Args:
        metric: The metric's name (durations read "slower" upwards).
        unit: Its unit (``.../s`` rates read "faster" upwards).
        low: The interval's lower bound of the ratio b/a.
        high: Its upper bound.
        deterministic: The row has no noise to judge.
        threshold: A change no larger than this fraction is "no change" whatever
            its interval: the ratio must lie above ``1 + threshold`` or below
            ``1 - threshold`` (and the interval exclude 1).
        ratio: The ratio b/a; the interval's geometric middle when not given.

    Raises:
        ValueError: ``threshold`` is negative, not finite or 1 and more.
    """
    if not 0 <= threshold < 1:
        msg = f"threshold {threshold!r} is outside [0, 1); give a fraction (0.03 = 3 %)"
        raise ValueError(msg)
    if deterministic:
        return DETERMINISTIC
    if low is None or high is None:
        return None
    middle = ratio if ratio is not None else math.sqrt(max(low, 0.0) * high)
    if low > 1 and middle > 1 + threshold:
        up = True
    elif high < 1 and middle < 1 - threshold:
        up = False
    else:
        return NO_CHANGE
    if metric == TIME_METRIC or unit == "ns":
        return SLOWER if up else FASTER
    if unit.endswith("/s"):
        return FASTER if up else SLOWER
    return "higher" if up else "lower"


@dataclass(frozen=True)
class Comparison:
    """One (annotation, metric, config) present in both sessions."""

    annotation: str
    metric: str
    unit: str
    """The unit of the values (medians, means, std): ``ns``, ``bytes``, ``FLOP``..."""
    config: dict[str, JsonScalar]
    config_index_a: int
    config_index_b: int
    n_a: int
    n_b: int
    median_a: float
    median_b: float
    mean_a: float
    mean_b: float
    std_a: float
    std_b: float
    ratio: float
    """``median_b / median_a``: below 1 means b is smaller (faster, for durations)."""
    ci_low: float | None
    ci_high: float | None
    significant: bool
    """Whether the change counts: the 95% interval of the ratio excludes 1 *and* the
    ratio is beyond the threshold (never for deterministic rows; a 0.1 % move of
    DRAM bytes is not significant)."""
    verdict: str | None
    """``faster``, ``slower``, ``higher``, ``lower``, ``no change``,
    ``inconclusive: clocks``, ``deterministic``, or ``None`` (too few runs)."""
    threshold: float = 0.0
    """The threshold the verdict was judged with (a fraction)."""
    sm_clock_mhz_a: float | None = None
    """Median SM clock of a's runs of this region and config; ``None`` if not read."""
    sm_clock_mhz_b: float | None = None
    clock_differs: bool = False
    """The medians differ by more than :data:`CLOCK_TOLERANCE`."""
    throttled_a: int = 0
    """Runs of a (this region and config) that NVML said were throttled."""
    throttled_b: int = 0
    host_probe_ns_a: float | None = None
    """Median host probe (ns) of a's runs, timed rows of the cpu backend only; ``None``
    where no probe was taken (see :mod:`nsight_lab.host_speed`)."""
    host_probe_ns_b: float | None = None
    host_differs: bool = False
    """The probes differ by more than :data:`~nsight_lab.host_speed.HOST_TOLERANCE`."""
    note: str = ""
    """What qualifies the verdict, in words: clocks, throttling, the host, the
    threshold."""
    label: str = ""
    """The metric as a person reads it (:func:`metric_label`); the metric if empty."""
    timed: bool = False
    """A duration or a rate made from one: what clocks and drift move."""
    cycle_ratio: float | None = None
    """The ratio per SM cycle (the time ratio times ``sm_clock_mhz_b /
    sm_clock_mhz_a``), timed rows whose sides' clocks were both read."""
    measured: str | None = None
    """The verdict the ratio and its interval alone give; differs from ``verdict``
    when the row is inconclusive."""

    @property
    def flagged(self) -> bool:
        """Whether clocks, throttling or the host's speed may explain the ratio.

        Timed rows only: counted bytes and instructions do not move with the clock.
        """
        return self.timed and (
            self.clock_differs
            or self.host_differs
            or self.throttled_a > 0
            or self.throttled_b > 0
        )

    @property
    def folded(self) -> bool:
        """Whether views fold the row away: a deterministic one (nothing to judge)."""
        return self.verdict == DETERMINISTIC

    def to_json(self) -> dict[str, Any]:
        """Return the wire shape of this row (NaN is the caller's to replace)."""
        return {
            "annotation": self.annotation,
            "metric": self.metric,
            "unit": self.unit,
            "config": dict(self.config),
            "config_index_a": self.config_index_a,
            "config_index_b": self.config_index_b,
            "n_a": self.n_a,
            "n_b": self.n_b,
            "median_a": self.median_a,
            "median_b": self.median_b,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "std_a": self.std_a,
            "std_b": self.std_b,
            "ratio": self.ratio,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "significant": self.significant,
            "verdict": self.verdict,
            "threshold": self.threshold,
            "sm_clock_mhz_a": self.sm_clock_mhz_a,
            "sm_clock_mhz_b": self.sm_clock_mhz_b,
            "clock_differs": self.clock_differs,
            "throttled_a": self.throttled_a,
            "throttled_b": self.throttled_b,
            "host_probe_ns_a": self.host_probe_ns_a,
            "host_probe_ns_b": self.host_probe_ns_b,
            "host_differs": self.host_differs,
            "flagged": self.flagged,
            "note": self.note,
            "label": self.label or self.metric,
            "timed": self.timed,
            "cycle_ratio": self.cycle_ratio,
            "measured": self.measured,
            "folded": self.folded,
        }


def compare_runs(
    runs_a: Iterable[RunRecord],
    runs_b: Iterable[RunRecord],
    *,
    threshold: float = DEFAULT_THRESHOLD,
) -> list[Comparison]:
    """Compare two sessions' runs per (annotation, metric, config).

    Configs match when their dicts are equal (not by index). The metrics are
    ``gpu__time_duration.sum`` (each run's ``duration_ns``) and every per-run metric
    that both sides report. Non-finite values are left out.

    Args:
        runs_a: The baseline session's runs.
        runs_b: The candidate session's runs.
        threshold: The verdicts' threshold, a fraction (see :func:`verdict`).

    Returns:
        One row per key present in both, in the baseline's order of first appearance
        (the time metric first within each region and config).

    Raises:
        ValueError: ``threshold`` is outside ``[0, 1)``.
    """
    return _compare(_Series.of(runs_a), _Series.of(runs_b), threshold)


def _compare(
    a: _Series, b: _Series, threshold: float = DEFAULT_THRESHOLD
) -> list[Comparison]:
    rows: list[Comparison] = []
    host = _Host.of(a, b)
    for key, values_a in a.values.items():
        values_b = b.values.get(key)
        if not values_b:
            continue
        annotation, metric, config_json = key
        sa, sb = summarize(values_a), summarize(values_b)
        deterministic = metric.startswith(MODEL_PREFIX) or (
            sa.min == sa.max and sb.min == sb.max and min(sa.n, sb.n) >= 2  # noqa: PLR2004
        )
        if deterministic:
            ratio = sb.median / sa.median if sa.median != 0 else math.nan
            low = high = None
        else:
            ratio, low, high = median_ratio_ci(values_a, values_b, ordered=True)
        unit = metric_unit(metric)
        timed = not deterministic and _timed(metric, unit)
        if timed:
            drift = max(_drift(a.backend), _drift(b.backend))
            low, high = widen(ratio, low, high, drift)
        measured = verdict(
            metric,
            unit,
            low,
            high,
            deterministic=deterministic,
            threshold=threshold,
            ratio=ratio,
        )
        beyond_noise = (
            not deterministic
            and low is not None
            and high is not None
            and not low <= 1 <= high
        )
        clocks = _Clocks.of(a, b, (annotation, config_json))
        judged, cycle_ratio = measured, None
        notes: list[str] = []
        if timed:
            judged, cycle_ratio, notes = clocks.judge(
                measured, (ratio, low, high), (metric, unit, threshold)
            )
        if (
            judged in CHANGED
            and unit == "ns"
            and abs(sb.median - sa.median) <= MIN_TIME_CHANGE_NS
        ):
            judged = NO_CHANGE
            notes.insert(
                0,
                f"moved {abs(sb.median - sa.median):.0f} ns: within the "
                f"{MIN_TIME_CHANGE_NS / 1e3:g} µs the timers and launches decide",
            )
        host_differs = timed and host.differ
        if host_differs:
            notes.append(host.note())
        if beyond_noise and judged == NO_CHANGE:
            notes.insert(
                0, f"beyond noise but within the ±{threshold * 100:g} % threshold"
            )
        rows.append(
            Comparison(
                annotation=annotation,
                metric=metric,
                unit=unit,
                config=a.configs[config_json],
                config_index_a=a.index[config_json],
                config_index_b=b.index[config_json],
                n_a=sa.n,
                n_b=sb.n,
                median_a=sa.median,
                median_b=sb.median,
                mean_a=sa.mean,
                mean_b=sb.mean,
                std_a=sa.std,
                std_b=sb.std,
                ratio=ratio,
                ci_low=low,
                ci_high=high,
                significant=judged in CHANGED,
                verdict=judged,
                threshold=threshold,
                sm_clock_mhz_a=clocks.median_a,
                sm_clock_mhz_b=clocks.median_b,
                clock_differs=timed and clocks.differ,
                throttled_a=clocks.throttled_a,
                throttled_b=clocks.throttled_b,
                host_probe_ns_a=host.median_a if timed else None,
                host_probe_ns_b=host.median_b if timed else None,
                host_differs=host_differs,
                note="; ".join(notes),
                label=metric_label(metric, a.backend),
                timed=timed,
                cycle_ratio=cycle_ratio,
                measured=measured,
            )
        )
    return rows


def _apart(a: float | None, b: float | None, tolerance: float) -> bool:
    """Whether two sides' medians (clocks, probes) differ by more than ``tolerance``."""
    return a is not None and b is not None and a > 0 and abs(b / a - 1) > tolerance


@dataclass(frozen=True)
class _Clocks:
    """The SM clocks and throttled runs of both sides of one region and config."""

    median_a: float | None
    median_b: float | None
    runs_a: int
    runs_b: int
    throttled_a: int
    throttled_b: int
    reasons_a: tuple[str, ...] = ()
    reasons_b: tuple[str, ...] = ()

    @classmethod
    def of(cls, a: _Series, b: _Series, pair: tuple[str, str]) -> _Clocks:
        def median(series: _Series) -> float | None:
            values = series.clocks.get(pair)
            return summarize(values).median if values else None

        return cls(
            median_a=median(a),
            median_b=median(b),
            runs_a=a.run_counts.get(pair, 0),
            runs_b=b.run_counts.get(pair, 0),
            throttled_a=a.throttled.get(pair, 0),
            throttled_b=b.throttled.get(pair, 0),
            reasons_a=tuple(a.reasons.get(pair, {})),
            reasons_b=tuple(b.reasons.get(pair, {})),
        )

    @property
    def differ(self) -> bool:
        return _apart(self.median_a, self.median_b, CLOCK_TOLERANCE)

    @property
    def throttle_apart(self) -> bool:
        """One side's runs throttled and the other's not (fractions far apart)."""
        fa = self.throttled_a / self.runs_a if self.runs_a else 0.0
        fb = self.throttled_b / self.runs_b if self.runs_b else 0.0
        return abs(fa - fb) >= THROTTLE_APART

    def sides(self) -> str:
        """Both sessions' clocks in words: median SM clock, throttled runs, why."""

        def side(
            name: str, mhz: float | None, n: int, runs: int, why: tuple[str, ...]
        ) -> str:
            clock = f"{mhz:.0f} MHz" if mhz is not None else "SM clock not read"
            reasons = f" ({', '.join(why)})" if n and why else ""
            return f"{name} at {clock}, throttled in {n} of {runs} runs{reasons}"

        return "; ".join((
            side("a", self.median_a, self.throttled_a, self.runs_a, self.reasons_a),
            side("b", self.median_b, self.throttled_b, self.runs_b, self.reasons_b),
        ))  # fmt: skip

    def judge(
        self,
        measured: str | None,
        interval: tuple[float, float | None, float | None],
        how: tuple[str, str, float],
    ) -> tuple[str | None, float | None, list[str]]:
        """A timed row's verdict given the clocks: the verdict, cycle ratio, notes.

        ``interval`` is (ratio, low, high); ``how`` the (metric, unit, threshold)
        of :func:`verdict`, to judge the ratio per cycle the same way.
        """
        ratio, low, high = interval
        metric, unit, threshold = how
        cycle: float | None = None
        if self.median_a and self.median_b:
            scale = self.median_b / self.median_a
            cycle = ratio * scale
        notes = self.notes()
        if measured is None:
            return measured, cycle, notes
        todo = "profile both with --clock-control base --thermal auto"
        if self.throttle_apart:
            why = (
                f"one session's runs throttled, the other's not: {self.sides()}; {todo}"
            )
            return INCONCLUSIVE, cycle, [why]
        if self.differ and cycle is not None and low is not None and high is not None:
            scale = cycle / ratio
            per_cycle = verdict(
                metric,
                unit,
                low * scale,
                high * scale,
                deterministic=False,
                threshold=threshold,
                ratio=cycle,
            )
            if per_cycle != measured:
                why = (
                    f"per SM cycle {cycle:.3f}x reads {per_cycle}, per time "
                    f"{measured}: {self.sides()}; {todo}"
                )
                return INCONCLUSIVE, cycle, [why]
            notes.append(f"per SM cycle {cycle:.3f}x: {per_cycle} too")
        return measured, cycle, notes

    def notes(self) -> list[str]:
        out: list[str] = []
        if self.differ:
            a, b = self.median_a or 0.0, self.median_b or 0.0
            out.append(
                f"SM clocks differ: median {a:.0f} MHz in a, {b:.0f} MHz in b "
                f"({(b / a - 1) * 100:+.1f} %, more than "
                f"{CLOCK_TOLERANCE * 100:g} %): the ratio may be the clocks', "
                "not the code's; lock them (--clock-control base)"
            )
        throttled = [
            f"{n} of {runs} runs of {side}"
            for side, n, runs in (
                ("a", self.throttled_a, self.runs_a),
                ("b", self.throttled_b, self.runs_b),
            )
            if n
        ]
        if throttled:
            out.append(f"throttled: {' and '.join(throttled)}")
        return out


@dataclass(frozen=True)
class _Host:
    """The host's speed on both sides: each session's median probe."""

    median_a: float | None
    median_b: float | None

    @classmethod
    def of(cls, a: _Series, b: _Series) -> _Host:
        def median(series: _Series) -> float | None:
            values = list(series.host_probe.values())
            return summarize(values).median if values else None

        return cls(median_a=median(a), median_b=median(b))

    @property
    def differ(self) -> bool:
        return _apart(self.median_a, self.median_b, HOST_TOLERANCE)

    def note(self) -> str:
        a, b = self.median_a or 0.0, self.median_b or 0.0
        return (
            f"host speed differs: a fixed probe took {a / 1e3:.1f} µs in a, "
            f"{b / 1e3:.1f} µs in b ({(b / a - 1) * 100:+.0f} %, more than "
            f"{HOST_TOLERANCE * 100:g} %): the ratio may be the host's, not the "
            "code's; profile both on an otherwise idle machine"
        )


@dataclass(frozen=True)
class SessionVerdict:
    """Session b against a in one word, from its timed rows (durations and rates)."""

    verdict: str | None
    """``slower`` when any timed row is slower (a regression), else ``inconclusive:
    clocks`` when any is, else ``faster`` when any is faster, else ``no change``;
    ``None`` when no timed row could be judged."""
    slower: int = 0
    """Timed rows judged slower."""
    faster: int = 0
    unchanged: int = 0
    """Timed rows judged "no change"."""
    inconclusive: int = 0
    """Timed rows judged "inconclusive: clocks"."""
    folded: int = 0
    """Deterministic rows (folded away in the views)."""
    flagged: int = 0
    """Rows whose clocks or host speeds differ or that have throttled runs."""
    threshold: float = 0.0
    note: str = ""
    """One line: the counts, and the clock and throttling caveats."""

    def to_json(self) -> dict[str, Any]:
        """Return the wire shape."""
        return {
            "verdict": self.verdict,
            "slower": self.slower,
            "faster": self.faster,
            "unchanged": self.unchanged,
            "inconclusive": self.inconclusive,
            "folded": self.folded,
            "flagged": self.flagged,
            "threshold": self.threshold,
            "note": self.note,
        }


def session_verdict(
    rows: Sequence[Comparison], threshold: float = DEFAULT_THRESHOLD
) -> SessionVerdict:
    """Fold :func:`compare_runs` rows into one verdict of session b against a.

    Only timed rows count (a duration, or a rate made from one): counters read
    "higher"/"lower", which is no regression by itself. A flagged row (clocks,
    throttling) still counts; an inconclusive one is no regression, and the
    session is inconclusive only when nothing is slower.
    """
    timed = [r for r in rows if _timed(r.metric, r.unit)]
    slower = sum(r.verdict == SLOWER for r in timed)
    faster = sum(r.verdict == FASTER for r in timed)
    unchanged = sum(r.verdict == NO_CHANGE for r in timed)
    inconclusive = sum(r.verdict == INCONCLUSIVE for r in timed)
    flagged = sum(r.flagged for r in rows)
    judged: str | None = None
    if slower:
        judged = SLOWER
    elif inconclusive:
        judged = INCONCLUSIVE
    elif faster:
        judged = FASTER
    elif unchanged:
        judged = NO_CHANGE
    parts = [
        f"{n} {word}"
        for n, word in (
            (slower, "slower"),
            (faster, "faster"),
            (inconclusive, "inconclusive (clocks)"),
            (unchanged, "no change"),
        )
        if n
    ]
    note = ", ".join(parts) if parts else "no timed row could be judged"
    if flagged:
        clock = sum(r.clock_differs for r in rows)
        host = sum(r.host_differs for r in rows)
        throttle = sum(
            r.flagged and (r.throttled_a > 0 or r.throttled_b > 0) for r in rows
        )
        why = [
            f"{n} {what}"
            for n, what in (
                (clock, "with SM clocks apart"),
                (host, "with host speeds apart"),
                (throttle, "throttled"),
            )
            if n
        ]
        whose = "the host's" if host and not clock and not throttle else "the clocks'"
        note += f"; flagged rows: {', '.join(why)} (the ratio may be {whose})"
    if inconclusive:
        note += (
            "; to judge the inconclusive rows, profile both sessions with "
            "--clock-control base --thermal auto"
        )
    return SessionVerdict(
        verdict=judged,
        slower=slower,
        faster=faster,
        unchanged=unchanged,
        inconclusive=inconclusive,
        folded=sum(r.folded for r in rows),
        flagged=flagged,
        threshold=threshold,
        note=note,
    )


def _timed(metric: str, unit: str) -> bool:
    """A duration, or a rate made from one (FLOP/s, bytes/s): what drifts."""
    return metric == TIME_METRIC or unit == "ns" or unit.endswith("/s")


def _drift(backend: str) -> float:
    return SESSION_DRIFT.get(backend, GPU_SESSION_DRIFT)


def widen(
    ratio: float, low: float | None, high: float | None, drift: float
) -> tuple[float | None, float | None]:
    """``[low, high]`` around ``ratio`` widened on the log scale by ``drift``.

    Each side's distance from ``log(ratio)`` is combined in quadrature with
    ``log(1 + drift)``: a statistical and a systematic uncertainty, both at 95 %.
    """
    if low is None or high is None or drift <= 0 or not ratio > 0:
        return low, high
    d = math.log1p(drift)
    centre = math.log(ratio)
    below = math.hypot(centre - math.log(low), d)
    above = math.hypot(math.log(high) - centre, d)
    return math.exp(centre - below), math.exp(centre + above)


@dataclass(frozen=True)
class Scope:
    """What two sessions have in common, and what only one of them has."""

    regions: list[str] = field(default_factory=list)
    regions_only_a: list[str] = field(default_factory=list)
    regions_only_b: list[str] = field(default_factory=list)
    configs: list[dict[str, JsonScalar]] = field(default_factory=list)
    """Configs both sessions ran (of a region both ran), in a's order."""
    configs_only_a: list[dict[str, JsonScalar]] = field(default_factory=list)
    configs_only_b: list[dict[str, JsonScalar]] = field(default_factory=list)
    note: str = ""
    """One line: what was compared and what only one side has ("" when identical)."""
    reason: str | None = None
    """Why there is nothing to compare; ``None`` when there is."""

    def to_json(self) -> dict[str, Any]:
        """Return the wire shape."""
        return {
            "regions": list(self.regions),
            "regions_only_a": list(self.regions_only_a),
            "regions_only_b": list(self.regions_only_b),
            "configs": [dict(c) for c in self.configs],
            "configs_only_a": [dict(c) for c in self.configs_only_a],
            "configs_only_b": [dict(c) for c in self.configs_only_b],
            "note": self.note,
            "reason": self.reason,
        }


def config_text(config: dict[str, JsonScalar]) -> str:
    """A config as ``n=1024, dtype=fp16``; ``no parameters`` when empty."""
    if not config:
        return "no parameters"
    return ", ".join(f"{key}={value}" for key, value in config.items())


def compare(
    runs_a: Iterable[RunRecord],
    runs_b: Iterable[RunRecord],
    *,
    threshold: float = DEFAULT_THRESHOLD,
) -> tuple[list[Comparison], Scope]:
    """:func:`compare_runs` and :func:`compare_scope` over one read of the runs.

    Raises:
        ValueError: ``threshold`` is outside ``[0, 1)``.
    """
    a, b = _Series.of(runs_a), _Series.of(runs_b)
    return _compare(a, b, threshold), _scope(a, b)


def compare_scope(runs_a: Iterable[RunRecord], runs_b: Iterable[RunRecord]) -> Scope:
    """Say which regions and configs two sessions share, and why nothing is if so.

    A config is shared when both sessions ran it (equal dicts) for some region both
    ran. ``reason`` names the cause when no row can be compared: a session without
    runs, no region in common, or common regions run with different configs.
    """
    return _scope(_Series.of(runs_a), _Series.of(runs_b))


def _scope(a: _Series, b: _Series) -> Scope:
    regions = [r for r in a.regions if r in b.regions]
    only_a = [r for r in a.regions if r not in b.regions]
    only_b = [r for r in b.regions if r not in a.regions]
    pairs_b = b.pairs
    shared = [c for c in a.config_order if any((r, c) in pairs_b for r in regions)]
    configs_only_a = [c for c in a.config_order if c not in b.configs]
    configs_only_b = [c for c in b.config_order if c not in a.configs]
    reason: str | None = None
    if not a.regions or not b.regions:
        empty = [name for name, s in (("a", a), ("b", b)) if not s.regions]
        reason = (
            f"session {empty[0]} has no runs yet"
            if len(empty) == 1
            else "neither session has runs yet"
        )
    elif not regions:
        reason = (
            f"no region in common: a ran {_names(list(a.regions))}; "
            f"b ran {_names(list(b.regions))}"
        )
    elif not shared:
        reason = (
            f"no config in common for {_names(regions)}: "
            f"a ran {_configs(a.configs, a.config_order)}; "
            f"b ran {_configs(b.configs, b.config_order)}"
        )
    parts: list[str] = []
    if reason is None:
        if configs_only_a or configs_only_b:
            parts.append(f"compared on {_configs(a.configs, shared)}")
        if configs_only_a:
            parts.append(f"only in a: {_configs(a.configs, configs_only_a)}")
        if configs_only_b:
            parts.append(f"only in b: {_configs(b.configs, configs_only_b)}")
        if only_a:
            parts.append(f"regions only in a: {_names(only_a)}")
        if only_b:
            parts.append(f"regions only in b: {_names(only_b)}")
    return Scope(
        regions=regions,
        regions_only_a=only_a,
        regions_only_b=only_b,
        configs=[a.configs[c] for c in shared],
        configs_only_a=[a.configs[c] for c in configs_only_a],
        configs_only_b=[b.configs[c] for c in configs_only_b],
        note="; ".join(parts),
        reason=reason,
    )


def _names(names: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _configs(
    configs: dict[str, dict[str, JsonScalar]], keys: Sequence[str], limit: int = 6
) -> str:
    """``n=512, n=1024`` for one parameter; ``(n=1, m=2), (n=2, m=2)`` for more."""
    texts = [config_text(configs[k]) for k in keys]
    if any(", " in t for t in texts):
        texts = [f"({t})" for t in texts]
    return _names(texts, limit)


@dataclass
class _Series:
    """One session's finite per-run values by key, its regions and configs."""

    values: dict[_Key, list[float]] = field(default_factory=dict)
    index: dict[str, int] = field(default_factory=dict)
    configs: dict[str, dict[str, JsonScalar]] = field(default_factory=dict)
    config_order: list[str] = field(default_factory=list)
    regions: dict[str, None] = field(default_factory=dict)
    pairs: dict[tuple[str, str], None] = field(default_factory=dict)
    backend: str = ""
    """The backend of the session's runs (the first run's)."""
    clocks: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    """SM clocks (MHz) read with the runs, per (annotation, config JSON)."""
    throttled: dict[tuple[str, str], int] = field(default_factory=dict)
    reasons: dict[tuple[str, str], dict[str, None]] = field(default_factory=dict)
    """The clock-event reasons NVML gave for throttled runs, per pair, in order."""
    run_counts: dict[tuple[str, str], int] = field(default_factory=dict)
    host_probe: dict[tuple[str, int], float] = field(default_factory=dict)
    """The host probe of each run, by (config JSON, run index): one per run."""

    @classmethod
    def of(cls, runs: Iterable[RunRecord]) -> _Series:
        """Group finite per-run values by key; remember each config's index, dict."""
        out = cls()
        for r in runs:
            out.backend = out.backend or r.backend
            config_json = json.dumps(r.config, sort_keys=True, default=str)
            if config_json not in out.configs:
                out.configs[config_json] = dict(r.config)
                out.index[config_json] = r.config_index
                out.config_order.append(config_json)
            out.regions.setdefault(r.annotation, None)
            pair = (r.annotation, config_json)
            out.pairs.setdefault(pair, None)
            out.run_counts[pair] = out.run_counts.get(pair, 0) + 1
            clock = r.telemetry.sm_clock_mhz
            if clock is not None and math.isfinite(clock):
                out.clocks.setdefault(pair, []).append(clock)
            if r.telemetry.throttled:
                out.throttled[pair] = out.throttled.get(pair, 0) + 1
                seen = out.reasons.setdefault(pair, {})
                seen.update(dict.fromkeys(r.telemetry.clock_event_reasons))
            probe = r.metrics.get(PROBE_METRIC)
            if probe is not None and math.isfinite(probe) and probe > 0:
                out.host_probe[(config_json, r.run_index)] = probe
            values = {TIME_METRIC: r.duration_ns, **r.metrics}
            for metric, value in values.items():
                if metric.startswith(HOST_PREFIX):
                    continue  # it qualifies the rows; it is no row of its own
                if math.isfinite(value):
                    key = (r.annotation, metric, config_json)
                    out.values.setdefault(key, []).append(value)
        return out
