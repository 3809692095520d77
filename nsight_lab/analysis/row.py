"""One compared row: a region, metric and config present in both sessions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nsight_lab.analysis.rules import DETERMINISTIC

if TYPE_CHECKING:
    from nsight_lab.contract.records import JsonScalar


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
