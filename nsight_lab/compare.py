"""The comparison of two sessions: per region, metric and config, the ratio b/a.

Pure: records in, rows out; the server only reads the store and serialises
the rows. Every t quantile comes from :mod:`nsight_lab.stats`.

The 95% interval of the ratio of means ``R = mean_b / mean_a`` uses the delta method
on the log scale (not Fieller): with per-run values ``x`` (``n`` runs, sample std
``s``, mean ``m``), ``Var(log m) ~= s**2 / (n * m**2)``, so

    se = sqrt(s_a**2 / (n_a * m_a**2) + s_b**2 / (n_b * m_b**2))
    CI = R * exp(-+ t(0.975, df) * se)

with the Welch-Satterthwaite degrees of freedom of the two log-scale variance terms
``v = s**2 / (n * m**2)``:  ``df = (v_a + v_b)**2 / (v_a**2/(n_a-1) + v_b**2/(n_b-1))``.
The interval is positive and multiplicative (symmetric in log), which is how timing
ratios behave; it needs two runs per side and positive means, else it is ``None``.
A ratio is ``significant`` when its interval excludes 1.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nsight_lab.records import TIME_METRIC, JsonScalar, RunRecord
from nsight_lab.stats import CONFIDENCE, summarize, t_quantile

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = ["CONFIDENCE", "METHOD", "Comparison", "compare_runs", "ratio_ci"]

METHOD = "delta-log-welch"
"""Names the interval method in payloads (see the module docstring)."""

_Key = tuple[str, str, str]
"""(annotation, metric, canonical config JSON)."""


@dataclass(frozen=True)
class Comparison:
    """One (annotation, metric, config) present in both sessions."""

    annotation: str
    metric: str
    config: dict[str, JsonScalar]
    config_index_a: int
    config_index_b: int
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    std_a: float
    std_b: float
    ratio: float
    """``mean_b / mean_a``: below 1 means b is smaller (faster, for durations)."""
    ci_low: float | None
    ci_high: float | None
    df: float | None
    """Welch-Satterthwaite degrees of freedom of the interval."""
    significant: bool
    """Whether the 95% interval of the ratio excludes 1."""

    def to_json(self) -> dict[str, Any]:
        """Return the wire shape of this row (NaN is the caller's to replace)."""
        return {
            "annotation": self.annotation,
            "metric": self.metric,
            "config": dict(self.config),
            "config_index_a": self.config_index_a,
            "config_index_b": self.config_index_b,
            "n_a": self.n_a,
            "n_b": self.n_b,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "std_a": self.std_a,
            "std_b": self.std_b,
            "ratio": self.ratio,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "df": self.df,
            "significant": self.significant,
        }


def ratio_ci(
    a: Sequence[float], b: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, float | None, float | None, float | None]:
    """Return ``(ratio, low, high, df)`` for ``mean(b) / mean(a)``.

    Args:
        a: Per-run values of the baseline.
        b: Per-run values of the candidate.
        confidence: Two-sided confidence level of the interval.

    Returns:
        The ratio of means (NaN when ``mean(a)`` is 0) and its interval and degrees of
        freedom, each ``None`` when undefined (fewer than two values on a side, or a
        non-positive mean). With no spread on either side the interval is the ratio.

    Raises:
        ValueError: ``a`` or ``b`` is empty.
    """
    sa, sb = summarize(a), summarize(b)
    ratio = sb.mean / sa.mean if sa.mean != 0 else math.nan
    if (
        min(sa.n, sb.n) < 2  # noqa: PLR2004
        or not (sa.mean > 0 and sb.mean > 0)
        or not (math.isfinite(sa.std) and math.isfinite(sb.std))
    ):
        return ratio, None, None, None
    va = sa.std**2 / (sa.n * sa.mean**2)
    vb = sb.std**2 / (sb.n * sb.mean**2)
    if va + vb == 0:
        return ratio, ratio, ratio, None
    df = (va + vb) ** 2 / (va**2 / (sa.n - 1) + vb**2 / (sb.n - 1))
    t = t_quantile(df, confidence)
    half = t * math.sqrt(va + vb)
    return ratio, ratio * math.exp(-half), ratio * math.exp(half), df


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
    series_a, index_a, configs = _series(runs_a)
    series_b, index_b, _ = _series(runs_b)
    rows: list[Comparison] = []
    for key, values_a in series_a.items():
        values_b = series_b.get(key)
        if not values_b:
            continue
        annotation, metric, config_json = key
        ratio, low, high, df = ratio_ci(values_a, values_b)
        excludes_one = low is not None and high is not None and not low <= 1 <= high
        sa, sb = summarize(values_a), summarize(values_b)
        rows.append(
            Comparison(
                annotation=annotation,
                metric=metric,
                config=configs[config_json],
                config_index_a=index_a[config_json],
                config_index_b=index_b[config_json],
                n_a=sa.n,
                n_b=sb.n,
                mean_a=sa.mean,
                mean_b=sb.mean,
                std_a=sa.std,
                std_b=sb.std,
                ratio=ratio,
                ci_low=low,
                ci_high=high,
                df=df,
                significant=excludes_one,
            )
        )
    return rows


def _series(
    runs: Iterable[RunRecord],
) -> tuple[dict[_Key, list[float]], dict[str, int], dict[str, dict[str, JsonScalar]]]:
    """Group finite per-run values by key; remember each config's index and dict."""
    series: dict[_Key, list[float]] = {}
    index: dict[str, int] = {}
    configs: dict[str, dict[str, JsonScalar]] = {}
    for r in runs:
        config_json = json.dumps(r.config, sort_keys=True, default=str)
        index.setdefault(config_json, r.config_index)
        configs.setdefault(config_json, dict(r.config))
        values = {TIME_METRIC: r.duration_ns, **r.metrics}
        for metric, value in values.items():
            if math.isfinite(value):
                series.setdefault((r.annotation, metric, config_json), []).append(value)
    return series, index, configs
