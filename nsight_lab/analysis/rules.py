"""The rules a comparison row is judged by: units, labels, thresholds, drift, verdicts.

The numbers are calibrated (:mod:`nsight_lab.analysis.compare`'s docstring says how);
the functions are pure: a metric's unit and label from its name, a row's verdict from
its ratio and interval, an interval widened by the sessions' drift.
"""

from __future__ import annotations

import math

from nsight_lab.contract.records import TIME_METRIC, JsonScalar

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
(2026-12-02, as :mod:`nsight_lab.analysis.compare` says): events 0.9 %, cupti and pm
0.5 %; any
other GPU backend (ncu) :data:`GPU_SESSION_DRIFT`, the largest of them."""
GPU_SESSION_DRIFT = 0.009


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


def timed(metric: str, unit: str) -> bool:
    """A duration, or a rate made from one (FLOP/s, bytes/s): what drifts."""
    return metric == TIME_METRIC or unit == "ns" or unit.endswith("/s")


def drift(backend: str) -> float:
    """The between-session drift of ``backend``'s timed rows (:data:`SESSION_DRIFT`)."""
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


def config_text(config: dict[str, JsonScalar]) -> str:
    """A config as ``n=1024, dtype=fp16``; ``no parameters`` when empty."""
    if not config:
        return "no parameters"
    return ", ".join(f"{key}={value}" for key, value in config.items())
