"""Per region and config: the running statistics the summary tables show.

:class:`RegionStats` takes a region's records one at a time (O(1) each, amortised)
and keeps what :mod:`nsight_lab.viewmodel.summary` turns into rows: the duration's
and every counter's :class:`~nsight_lab.viewmodel.streaming.StreamingSummary`, the
SM clock's mean, the throttled runs, and the region's latest runs (a bounded window)
from which the roofline columns and charts are drawn.
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING

from nsight_lab.contract.shape import PREFIX as SHAPE_PREFIX
from nsight_lab.distributed import metrics as rank_metrics
from nsight_lab.viewmodel.streaming import StreamingSummary

if TYPE_CHECKING:
    from collections.abc import Mapping

    from nsight_lab.contract.records import JsonScalar, RunRecord

__all__ = ["NOT_ROWS", "RankStats", "RegionStats"]

NOT_ROWS = ("model__", "rank__", "host__", SHAPE_PREFIX)
"""Metric prefixes that are no counter row (as the results frame): the work model
(its own columns), the ranks, the host's speed and a region's shape (its GPU busy
column and flags, :mod:`nsight_lab.analysis.validity`)."""


class RankStats:
    """One rank's statistics in a region of a multi-rank session (its summary row)."""

    __slots__ = ("device", "duration", "sm_n", "sm_sum", "throttled")

    def __init__(self, device: str) -> None:
        """Start with no runs; ``device`` is the rank's label (``cuda:1``)."""
        self.device = device
        self.duration = StreamingSummary()
        self.sm_sum = 0.0
        self.sm_n = 0
        self.throttled = 0.0

    @property
    def sm_clock_mhz(self) -> float | None:
        """The rank's mean SM clock, or None without telemetry."""
        return self.sm_sum / self.sm_n if self.sm_n else None


class RegionStats:
    """One (annotation, config) of a session: running statistics and its latest runs.

    Attributes:
        annotation: The region's name.
        config_index: The config's index.
        config: The config's parameters (its first record's).
        runs: Records taken (NaN durations included).
        duration: The duration's statistics (ns; NaN durations left out).
        metrics: Each counter's statistics, in the order they first came.
        derived: Each ``--derive`` metric's statistics (:meth:`add_derived`).
        throttled: Runs NVML saw throttled.
        window: The latest records, at most the view model's window.
        ranks: Each rank's statistics (a multi-rank session's), by rank.
        ranked: Whether any record was measured in ranks.
    """

    __slots__ = (
        "_sm_n",
        "_sm_sum",
        "annotation",
        "config",
        "config_index",
        "derived",
        "duration",
        "metrics",
        "ranked",
        "ranks",
        "runs",
        "throttled",
        "window",
    )

    def __init__(self, record: RunRecord, window: int) -> None:
        """Start with no runs; ``record`` (the first) names the region and config."""
        self.annotation = record.annotation
        self.config_index = record.config_index
        self.config: Mapping[str, JsonScalar] = dict(record.config)
        self.runs = 0
        self.duration = StreamingSummary()
        self.metrics: dict[str, StreamingSummary] = {}
        self.derived: dict[str, StreamingSummary] = {}
        self.throttled = 0
        self._sm_sum = 0.0
        self._sm_n = 0
        self.window: deque[RunRecord] = deque(maxlen=max(window, 1))
        self.ranks: dict[int, RankStats] = {}
        self.ranked = False

    def _add_ranks(self, record: RunRecord) -> None:
        """Each rank's duration, clock and throttling of a multi-rank record."""
        self.ranked = True
        for rank, ordinal in rank_metrics.per_rank(record, rank_metrics.DEVICE).items():
            if rank not in self.ranks:
                self.ranks[rank] = RankStats(rank_metrics.device_label(ordinal))
        durations = rank_metrics.per_rank(record, rank_metrics.DURATION)
        clocks = rank_metrics.per_rank(record, rank_metrics.SM_CLOCK)
        throttled = rank_metrics.per_rank(record, rank_metrics.THROTTLED)
        for rank, stats in self.ranks.items():
            stats.duration.add(durations.get(rank, math.nan))
            clock = clocks.get(rank, math.nan)
            if not math.isnan(clock):
                stats.sm_sum += clock
                stats.sm_n += 1
            flag = throttled.get(rank, math.nan)
            if not math.isnan(flag):
                stats.throttled += flag

    def add(self, record: RunRecord) -> None:
        """Take one record of this region and config.

        Raises:
            Nothing.
        """
        self.runs += 1
        self.duration.add(record.duration_ns)
        for metric, value in record.metrics.items():
            if metric.startswith(NOT_ROWS):
                continue
            stats = self.metrics.get(metric)
            if stats is None:
                stats = self.metrics[metric] = StreamingSummary()
            stats.add(value)
        telemetry = record.telemetry
        if telemetry.sm_clock_mhz is not None:
            self._sm_sum += telemetry.sm_clock_mhz
            self._sm_n += 1
        self.throttled += bool(telemetry.throttled)
        self.window.append(record)
        if rank_metrics.is_multi_rank(record):
            self._add_ranks(record)

    def add_derived(self, values: Mapping[str, tuple[float, float | str]]) -> None:
        """Take one run's derived values (name -> (value, unit)); NaN ones count none.

        Raises:
            Nothing.
        """
        for name, (value, _unit) in values.items():
            stats = self.derived.get(name)
            if stats is None:
                stats = self.derived[name] = StreamingSummary()
            stats.add(value)

    @property
    def sm_clock_mhz(self) -> float | None:
        """The mean SM clock NVML read during the runs, or None without telemetry."""
        return self._sm_sum / self._sm_n if self._sm_n else None
