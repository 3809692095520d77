"""Per region and config: the running statistics the summary tables show.

:class:`RegionStats` takes a region's records one at a time (O(1) each, amortised)
and keeps what :mod:`nsight_lab.viewmodel.summary` turns into rows: the duration's
and every counter's :class:`~nsight_lab.viewmodel.streaming.StreamingSummary`, the
SM clock's statistics (its median and range: the one clock every view shows),
the throttled runs, and the region's latest runs (a bounded window)
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

    __slots__ = ("device", "duration", "sm_clock", "throttled")

    def __init__(self, device: str) -> None:
        """Start with no runs; ``device`` is the rank's label (``cuda:1``)."""
        self.device = device
        self.duration = StreamingSummary()
        self.sm_clock = StreamingSummary()
        """The rank's SM clock (MHz) over its runs: median and range are shown."""
        self.throttled = 0.0


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
        sm_clock: The SM clock (MHz) NVML read with the runs: its median and
            range are what every view shows (never a mean).
        throttled: Runs NVML saw throttled.
        window: The latest records, at most the view model's window.
        ranks: Each rank's statistics (a multi-rank session's), by rank.
        ranked: Whether any record was measured in ranks.
    """

    __slots__ = (
        "annotation",
        "config",
        "config_index",
        "derived",
        "duration",
        "metrics",
        "ranked",
        "ranks",
        "runs",
        "sm_clock",
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
        self.sm_clock = StreamingSummary()
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
            stats.sm_clock.add(clocks.get(rank, math.nan))
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
            self.sm_clock.add(telemetry.sm_clock_mhz)
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
