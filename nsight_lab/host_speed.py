"""How fast the host ran while the cpu backend timed: a fixed probe, timed as it goes.

A GPU comparison knows its clocks (NVML): two sessions at different SM clocks are
flagged. The host has no such reading on a VM (no cpufreq, a constant "cpu MHz"),
yet its speed moves: on the 2-core CI machine the same ``np.sort`` ran at 226 µs or
308 µs for seconds at a time, as the virtual CPU's sibling on the host got busy or
not, and a fixed pure-Python loop moved with it (correlation 0.90, 49 µs against
88 µs; ``benchmarks/results/cpu_session_drift.json``). Two sessions of the same code
either side of such a step differ by 20-40 %, beyond any interval.

So the cpu backend times :func:`probe_ns` (a fixed loop of 500 multiply-adds, about
12-22 µs) between runs, outside the regions, at most every :data:`PROBE_INTERVAL_NS`,
and each run carries the latest value as the metric :data:`PROBE_METRIC`.
:mod:`nsight_lab.analysis.compare` flags a timed row whose sides' median probes differ
by more
than :data:`HOST_TOLERANCE`, as it flags SM clocks that differ. The probe is never a
results row of its own (:data:`PREFIX`).

What it does not see: in a Jupyter kernel the same machine also moved ``np.sort`` by
up to 15 % between sessions with the probe unmoved. A memory-copy probe did not follow
those moves either (copies of 1 MB and 8 MB: correlation 0.03 and 0.11 with the sort's
time at one host speed, in a plain process where the sort then held within 3 %), so
what moved it in the kernel is not known. That is left to the
comparison's
between-session drift for the cpu backend
(:data:`nsight_lab.analysis.compare.SESSION_DRIFT`),
measured by the same benchmark.
"""

from __future__ import annotations

import time

__all__ = [
    "HOST_TOLERANCE",
    "PREFIX",
    "PROBE_INTERVAL_NS",
    "PROBE_METRIC",
    "HostProbe",
    "probe_ns",
]

PREFIX = "host__"
"""Every host-state metric starts with this: not a measurement of the cell."""
PROBE_METRIC = "host__probe_time_ns"
"""The probe's time (ns) last taken before the run: larger is a slower host."""
PROBE_INTERVAL_NS = 5_000_000
"""Re-time the probe before a run once this long (5 ms) has passed since the last.

Its ~20 µs is then 0.4 % of the session's time at most, and a session of 50 ms holds
about ten probes, enough for a median that follows the host through the session
(probed only at a session's start, it pointed the wrong way once in 30 pairs). Every
1 ms it raised the median of a 230 µs ``np.sort`` by 0.35-0.6 % (sessions with and
without it alternated in one kernel, ``benchmarks/host_probe_cost.py``: the loop
evicts some of the next run's cache); every 5 ms by nothing measurable (0.996 and
0.999, ``benchmarks/results/host_probe_cost.json``)."""
HOST_TOLERANCE = 0.15
"""Median probes of two sides that differ by more than this (a fraction) flag a row.

At one speed consecutive sessions' median probes stayed within 12 % of each other;
the steps it is meant to catch moved them by 32-85 %
(``benchmarks/results/cpu_session_drift.json``)."""

_LOOP = 500
_REPEATS = 1


def probe_ns() -> float:
    """Return the time of a fixed pure-Python loop, in ns (the fastest of repeats).

    Pure Python, no numpy: the cpu backend profiles any Python. One repeat per
    probe; a session's many probes are summarised by their median.
    """
    best = None
    for _ in range(_REPEATS):
        start = time.perf_counter_ns()
        total = 0
        for i in range(_LOOP):
            total += i * i
        took = time.perf_counter_ns() - start
        best = took if best is None or took < best else best
    return float(best or 0)


class HostProbe:
    """The latest probe, re-timed when :data:`PROBE_INTERVAL_NS` has passed."""

    def __init__(self) -> None:
        """Nothing is timed until the first :meth:`latest`."""
        self._value = 0.0
        self._at: int | None = None

    def latest(self) -> float:
        """Return the probe's time, timing it anew first when it is due."""
        now = time.perf_counter_ns()
        if self._at is None or now - self._at >= PROBE_INTERVAL_NS:
            self._value = probe_ns()
            self._at = time.perf_counter_ns()
        return self._value
