"""One session's runs as the comparison reads them, and what qualifies a ratio.

:class:`Series` groups a session's finite per-run values by (region, metric, config)
with its regions, configs, SM clocks, throttled runs and host probes;
:class:`Clocks` and :class:`Host` say whether two sides ran at clocks or host speeds
that may explain their ratio (:mod:`nsight_lab.analysis.compare`'s docstring).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nsight_lab.analysis.rules import (
    CLOCK_TOLERANCE,
    INCONCLUSIVE,
    THROTTLE_APART,
    verdict,
)
from nsight_lab.contract.records import TIME_METRIC, JsonScalar
from nsight_lab.contract.shape import PREFIX as SHAPE_PREFIX
from nsight_lab.host_speed import HOST_TOLERANCE, PROBE_METRIC
from nsight_lab.host_speed import PREFIX as HOST_PREFIX
from nsight_lab.stats import summarize
from nsight_lab.text.units import format_clock

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from nsight_lab.contract.records import RunRecord

Key = tuple[str, str, str]
"""(annotation, metric, canonical config JSON)."""


@dataclass
class Series:
    """One session's finite per-run values by key, its regions and configs."""

    values: dict[Key, list[float]] = field(default_factory=dict)
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
    def of(cls, runs: Iterable[RunRecord]) -> Series:
        """Group finite per-run values by key; remember each config's index, dict."""
        out = cls()
        # A config's canonical JSON, once per config index (checked equal): a
        # json.dumps per run was a third of comparing a million runs (issue 29).
        canonical: dict[int, tuple[Mapping[str, JsonScalar], str]] = {}
        for r in runs:
            out.backend = out.backend or r.backend
            known = canonical.get(r.config_index)
            if known is not None and known[0] == r.config:
                config_json = known[1]
            else:
                config_json = json.dumps(r.config, sort_keys=True, default=str)
                canonical[r.config_index] = (r.config, config_json)
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
                if metric.startswith((HOST_PREFIX, SHAPE_PREFIX)):
                    continue  # it qualifies the rows; it is no row of its own
                if math.isfinite(value):
                    key = (r.annotation, metric, config_json)
                    out.values.setdefault(key, []).append(value)
        return out


def apart(a: float | None, b: float | None, tolerance: float) -> bool:
    """Whether two sides' medians (clocks, probes) differ by more than ``tolerance``."""
    return a is not None and b is not None and a > 0 and abs(b / a - 1) > tolerance


@dataclass(frozen=True)
class Clocks:
    """The SM clocks and throttled runs of both sides of one region and config."""

    median_a: float | None
    median_b: float | None
    runs_a: int
    runs_b: int
    throttled_a: int
    throttled_b: int
    reasons_a: tuple[str, ...] = ()
    reasons_b: tuple[str, ...] = ()
    range_a: tuple[float, float] | None = None
    range_b: tuple[float, float] | None = None
    """Each side's lowest and highest SM clock: shown beside its median, as every
    view shows a clock (:func:`nsight_lab.text.units.format_clock`)."""

    @classmethod
    def of(cls, a: Series, b: Series, pair: tuple[str, str]) -> Clocks:
        """Both sides' clocks and throttled runs of one (region, config JSON)."""

        def median(series: Series) -> float | None:
            values = series.clocks.get(pair)
            return summarize(values).median if values else None

        def spread(series: Series) -> tuple[float, float] | None:
            values = series.clocks.get(pair)
            return (min(values), max(values)) if values else None

        return cls(
            median_a=median(a),
            median_b=median(b),
            runs_a=a.run_counts.get(pair, 0),
            runs_b=b.run_counts.get(pair, 0),
            throttled_a=a.throttled.get(pair, 0),
            throttled_b=b.throttled.get(pair, 0),
            reasons_a=tuple(a.reasons.get(pair, {})),
            reasons_b=tuple(b.reasons.get(pair, {})),
            range_a=spread(a),
            range_b=spread(b),
        )

    @property
    def differ(self) -> bool:
        """The median SM clocks differ by more than :data:`CLOCK_TOLERANCE`."""
        return apart(self.median_a, self.median_b, CLOCK_TOLERANCE)

    @property
    def throttleapart(self) -> bool:
        """One side's runs throttled and the other's not (fractions far apart)."""
        fa = self.throttled_a / self.runs_a if self.runs_a else 0.0
        fb = self.throttled_b / self.runs_b if self.runs_b else 0.0
        return abs(fa - fb) >= THROTTLE_APART

    def sides(self) -> str:
        """Both sessions' clocks in words: median SM clock, throttled runs, why."""

        def side(name: str, clock: str, n: int, runs: int, why: tuple[str, ...]) -> str:
            reasons = f" ({', '.join(why)})" if n and why else ""
            return f"{name} at {clock}, throttled in {n} of {runs} runs{reasons}"

        return "; ".join((
            side("a", self.clock_a, self.throttled_a, self.runs_a, self.reasons_a),
            side("b", self.clock_b, self.throttled_b, self.runs_b, self.reasons_b),
        ))  # fmt: skip

    @property
    def clock_a(self) -> str:
        """Side a's SM clock as every view shows it: median and range."""
        return _clock_text(self.median_a, self.range_a)

    @property
    def clock_b(self) -> str:
        """Side b's SM clock as every view shows it: median and range."""
        return _clock_text(self.median_b, self.range_b)

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
        if self.throttleapart:
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
        """The clocks' and throttling's notes of a timed row (none when alike)."""
        out: list[str] = []
        if self.differ:
            a, b = self.median_a or 0.0, self.median_b or 0.0
            out.append(
                f"SM clocks differ: {self.clock_a} in a, {self.clock_b} in b "
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


def _clock_text(median: float | None, extent: tuple[float, float] | None) -> str:
    if median is None:
        return "SM clock not read"
    low, high = extent or (None, None)
    return format_clock(median, low, high)


@dataclass(frozen=True)
class Host:
    """The host's speed on both sides: each session's median probe."""

    median_a: float | None
    median_b: float | None

    @classmethod
    def of(cls, a: Series, b: Series) -> Host:
        """Each side's median host probe (``None`` where none was taken)."""

        def median(series: Series) -> float | None:
            values = list(series.host_probe.values())
            return summarize(values).median if values else None

        return cls(median_a=median(a), median_b=median(b))

    @property
    def differ(self) -> bool:
        """The median probes differ by more than the host tolerance."""
        return apart(self.median_a, self.median_b, HOST_TOLERANCE)

    def note(self) -> str:
        """The host-speed note of a timed row."""
        a, b = self.median_a or 0.0, self.median_b or 0.0
        return (
            f"host speed differs: a fixed probe took {a / 1e3:.1f} µs in a, "
            f"{b / 1e3:.1f} µs in b ({(b / a - 1) * 100:+.0f} %, more than "
            f"{HOST_TOLERANCE * 100:g} %): the ratio may be the host's, not the "
            "code's; profile both on an otherwise idle machine"
        )
