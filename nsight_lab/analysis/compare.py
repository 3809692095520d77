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
cycles) are not. On the H200 (measured 2026-12-02: one 12-region cell, 6 sessions
x 3 processes per backend) same-code session medians moved by p50 0.1 %, p95 0.5 %
(cupti, pm) to 0.9 % (events), max 1.6-2.2 %: the p95 of each backend is its drift
(a 95 % term, as the interval is).

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

One module per part: :mod:`.rules` (units, labels, thresholds, drift, the verdict),
:mod:`.series` (a session's runs by key; clocks and host speed), :mod:`.row` (the
:class:`Comparison` row), :mod:`.scope` (what both sessions ran) and
:mod:`.session_verdict` (the rows folded into one word). This module compares; it
re-exports their public names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nsight_lab.analysis.row import Comparison
from nsight_lab.analysis.rules import (
    CHANGED,
    CLOCK_TOLERANCE,
    DEFAULT_THRESHOLD,
    DETERMINISTIC,
    FASTER,
    GPU_SESSION_DRIFT,
    INCONCLUSIVE,
    METHOD,
    MIN_TIME_CHANGE_NS,
    MODEL_PREFIX,
    NO_CHANGE,
    SESSION_DRIFT,
    SLOWER,
    THROTTLE_APART,
    config_text,
    drift,
    metric_label,
    metric_unit,
    timed,
    verdict,
    widen,
)
from nsight_lab.analysis.scope import Scope, compare_scope, scope_of
from nsight_lab.analysis.series import Clocks, Host, Key, Series
from nsight_lab.analysis.session_verdict import SessionVerdict, session_verdict
from nsight_lab.stats import CONFIDENCE, median_ratio_ci, summarize

if TYPE_CHECKING:
    from collections.abc import Iterable

    from nsight_lab.contract.records import RunRecord
    from nsight_lab.stats import Summary

__all__ = [
    "CHANGED",
    "CLOCK_TOLERANCE",
    "CONFIDENCE",
    "DEFAULT_THRESHOLD",
    "DETERMINISTIC",
    "FASTER",
    "GPU_SESSION_DRIFT",
    "INCONCLUSIVE",
    "METHOD",
    "MIN_TIME_CHANGE_NS",
    "MODEL_PREFIX",
    "NO_CHANGE",
    "SESSION_DRIFT",
    "SLOWER",
    "THROTTLE_APART",
    "Comparison",
    "Scope",
    "SessionVerdict",
    "compare",
    "compare_runs",
    "compare_scope",
    "config_text",
    "metric_label",
    "metric_unit",
    "session_verdict",
    "verdict",
    "widen",
]


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
    return _compare(Series.of(runs_a), Series.of(runs_b), threshold)


@dataclass(frozen=True)
class _Measured:
    """A key's two sides summarised, its ratio and (widened) interval."""

    a: Summary
    b: Summary
    unit: str
    deterministic: bool
    timed: bool
    ratio: float
    low: float | None
    high: float | None

    @property
    def beyond_noise(self) -> bool:
        """The interval excludes 1."""
        return (
            not self.deterministic
            and self.low is not None
            and self.high is not None
            and not self.low <= 1 <= self.high
        )


def _compare(
    a: Series, b: Series, threshold: float = DEFAULT_THRESHOLD
) -> list[Comparison]:
    host = Host.of(a, b)
    rows: list[Comparison] = []
    for key, values_a in a.values.items():
        values_b = b.values.get(key)
        if values_b:
            m = _measured(key[1], values_a, values_b, (a.backend, b.backend))
            rows.append(_row(key, m, (a, b), host, threshold))
    return rows


def _measured(
    metric: str,
    values_a: list[float],
    values_b: list[float],
    backends: tuple[str, str],
) -> _Measured:
    """Both sides' statistics, the ratio of medians and its interval."""
    sa, sb = summarize(values_a), summarize(values_b)
    deterministic = metric.startswith(MODEL_PREFIX) or (
        sa.min == sa.max and sb.min == sb.max and min(sa.n, sb.n) >= 2  # noqa: PLR2004
    )
    low: float | None
    high: float | None
    if deterministic:
        ratio = sb.median / sa.median if sa.median != 0 else math.nan
        low = high = None
    else:
        ratio, low, high = median_ratio_ci(values_a, values_b, ordered=True)
    unit = metric_unit(metric)
    is_timed = not deterministic and timed(metric, unit)
    if is_timed:
        low, high = widen(ratio, low, high, max(drift(backends[0]), drift(backends[1])))
    return _Measured(sa, sb, unit, deterministic, is_timed, ratio, low, high)


def _judged(
    metric: str, m: _Measured, clocks: Clocks, host: Host, threshold: float
) -> tuple[str | None, str | None, float | None, list[str]]:
    """The measured verdict, the verdict given clocks and host, cycle ratio, notes."""
    measured = verdict(
        metric,
        m.unit,
        m.low,
        m.high,
        deterministic=m.deterministic,
        threshold=threshold,
        ratio=m.ratio,
    )
    judged, cycle_ratio = measured, None
    notes: list[str] = []
    if m.timed:
        judged, cycle_ratio, notes = clocks.judge(
            measured, (m.ratio, m.low, m.high), (metric, m.unit, threshold)
        )
    moved = abs(m.b.median - m.a.median)
    if judged in CHANGED and m.unit == "ns" and moved <= MIN_TIME_CHANGE_NS:
        judged = NO_CHANGE
        notes.insert(
            0,
            f"moved {moved:.0f} ns: within the "
            f"{MIN_TIME_CHANGE_NS / 1e3:g} µs the timers and launches decide",
        )
    if m.timed and host.differ:
        notes.append(host.note())
    if m.beyond_noise and judged == NO_CHANGE:
        notes.insert(0, f"beyond noise but within the ±{threshold * 100:g} % threshold")
    return measured, judged, cycle_ratio, notes


def _row(
    key: Key, m: _Measured, sides: tuple[Series, Series], host: Host, threshold: float
) -> Comparison:
    a, b = sides
    annotation, metric, config_json = key
    clocks = Clocks.of(a, b, (annotation, config_json))
    measured, judged, cycle_ratio, notes = _judged(metric, m, clocks, host, threshold)
    return Comparison(
        annotation=annotation,
        metric=metric,
        unit=m.unit,
        config=a.configs[config_json],
        config_index_a=a.index[config_json],
        config_index_b=b.index[config_json],
        n_a=m.a.n,
        n_b=m.b.n,
        median_a=m.a.median,
        median_b=m.b.median,
        mean_a=m.a.mean,
        mean_b=m.b.mean,
        std_a=m.a.std,
        std_b=m.b.std,
        ratio=m.ratio,
        ci_low=m.low,
        ci_high=m.high,
        significant=judged in CHANGED,
        verdict=judged,
        threshold=threshold,
        sm_clock_mhz_a=clocks.median_a,
        sm_clock_mhz_b=clocks.median_b,
        clock_differs=m.timed and clocks.differ,
        throttled_a=clocks.throttled_a,
        throttled_b=clocks.throttled_b,
        host_probe_ns_a=host.median_a if m.timed else None,
        host_probe_ns_b=host.median_b if m.timed else None,
        host_differs=m.timed and host.differ,
        note="; ".join(notes),
        label=metric_label(metric, a.backend),
        timed=m.timed,
        cycle_ratio=cycle_ratio,
        measured=measured,
    )


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
    a, b = Series.of(runs_a), Series.of(runs_b)
    return _compare(a, b, threshold), scope_of(a, b)
