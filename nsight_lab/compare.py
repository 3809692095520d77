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
excludes 1, ``no change`` when it holds 1 ("within noise"), ``deterministic`` for
rows that have no noise to judge (a ``model__*`` metric of the work model, or the
same value in every run on both sides: the plain ratio, no interval), and ``None``
when there are too few runs for an interval.

**Between sessions.** The order-statistic interval knows only the noise *within*
each session. Two sessions of the same code also differ by what changed between them
(other processes, frequency, placement in memory): on the 2-core CPU machine, 8
sessions of one 2.4 ms cell had medians within 1 % of each other, and a 3 µs body's
drifted by up to 4 %, well outside intervals from 200 runs each. So the interval of a
*timed* row (durations and rates made from them) is widened on the log scale, in
quadrature, by :data:`SESSION_DRIFT` of the sessions' backend; counters (bytes,
cycles) are not. The verdict then says "faster"/"slower" only for what is beyond both.

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

from nsight_lab.records import TIME_METRIC, JsonScalar, RunRecord
from nsight_lab.stats import CONFIDENCE, median_ratio_ci, summarize

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = [
    "CONFIDENCE",
    "GPU_SESSION_DRIFT",
    "METHOD",
    "SESSION_DRIFT",
    "Comparison",
    "Scope",
    "compare_runs",
    "compare_scope",
    "config_text",
    "metric_unit",
    "verdict",
    "widen",
]

METHOD = "median-ratio-price-bonett"
"""Names the interval method in payloads (see :mod:`nsight_lab.stats`)."""

MODEL_PREFIX = "model__"
"""Metrics of the work model: counted, not measured, so never judged for noise."""

DETERMINISTIC = "deterministic"
NO_CHANGE = "no change"

SESSION_DRIFT: dict[str, float] = {"cpu": 0.02}
"""Between-session uncertainty of timed rows, as a fraction, per backend (95 %).

cpu: 2 % (see the module docstring: up to 1-4 % seen on a shared 2-core machine).
GPU backends: :data:`GPU_SESSION_DRIFT`, the spread of session medians of one kernel
on the H200 (events within 0.5 % of ``triton.testing.do_bench``)."""
GPU_SESSION_DRIFT = 0.005

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


def verdict(
    metric: str,
    unit: str,
    low: float | None,
    high: float | None,
    *,
    deterministic: bool,
) -> str | None:
    """Return the row's verdict from its interval (see the module docstring)."""
    if deterministic:
        return DETERMINISTIC
    if low is None or high is None:
        return None
    if low <= 1 <= high:
        return NO_CHANGE
    up = low > 1
    if metric == TIME_METRIC or unit == "ns":
        return "slower" if up else "faster"
    if unit.endswith("/s"):
        return "faster" if up else "slower"
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
    """Whether the 95% interval of the ratio excludes 1 (never for deterministic)."""
    verdict: str | None
    """``faster``, ``slower``, ``higher``, ``lower``, ``no change``,
    ``deterministic``, or ``None`` (too few runs for an interval)."""

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
        }


def compare_runs(
    runs_a: Iterable[RunRecord], runs_b: Iterable[RunRecord]
) -> list[Comparison]:
    """Compare two sessions' runs per (annotation, metric, config).

    Configs match when their dicts are equal (not by index). The metrics are
    ``gpu__time_duration.sum`` (each run's ``duration_ns``) and every per-run metric
    that both sides report. Non-finite values are left out.

    Args:
        runs_a: The baseline session's runs.
        runs_b: The candidate session's runs.

    Returns:
        One row per key present in both, in the baseline's order of first appearance
        (the time metric first within each region and config).
    """
    return _compare(_Series.of(runs_a), _Series.of(runs_b))


def _compare(a: _Series, b: _Series) -> list[Comparison]:
    rows: list[Comparison] = []
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
            ratio, low, high = median_ratio_ci(values_a, values_b)
        unit = metric_unit(metric)
        if not deterministic and _timed(metric, unit):
            drift = max(_drift(a.backend), _drift(b.backend))
            low, high = widen(ratio, low, high, drift)
        judged = verdict(metric, unit, low, high, deterministic=deterministic)
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
                significant=judged not in (None, NO_CHANGE, DETERMINISTIC),
                verdict=judged,
            )
        )
    return rows


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
    runs_a: Iterable[RunRecord], runs_b: Iterable[RunRecord]
) -> tuple[list[Comparison], Scope]:
    """:func:`compare_runs` and :func:`compare_scope` over one read of the runs."""
    a, b = _Series.of(runs_a), _Series.of(runs_b)
    return _compare(a, b), _scope(a, b)


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
            out.pairs.setdefault((r.annotation, config_json), None)
            values = {TIME_METRIC: r.duration_ns, **r.metrics}
            for metric, value in values.items():
                if math.isfinite(value):
                    key = (r.annotation, metric, config_json)
                    out.values.setdefault(key, []).append(value)
        return out
