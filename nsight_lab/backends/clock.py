"""CUPTI's clock, read in nanoseconds whoever set it.

CUPTI stamps activity records (and ``cuptiGetTimestamp``) in nanoseconds unless a
client of the process registered a timestamp callback of its own. Kineto does:
after one ``torch.profiler.profile()`` block, every CUPTI timestamp of the process is
a CPU TSC tick (about 2.1 per ns on the H100's host), and every cupti and pm region
read 2.04-2.12x its time (H100, ``benchmarks/results/realwork_h100_before_fix.md``).
Unregistering Kineto's callback would break torch.profiler's next trace, so the
measurement instead measures the tick rate against the host's ``perf_counter_ns`` and
converts: 1:1 (nothing converted) when the rate is within :data:`NATIVE_TOLERANCE` of
one tick per ns.
The PM samples' times follow the same callback (2 ticks per ns on the H100):
:mod:`nsight_lab.backends.pm.decoding` converts them with :meth:`CuptiClock.ns_array`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Callable

    from numpy.typing import NDArray

NATIVE_TOLERANCE = 1e-3
"""A rate this close to 1 tick/ns is CUPTI's own nanosecond clock."""
GLANCE_NS = 200_000
"""How long the first look at the rate waits: enough to tell 1 from 2 ticks/ns."""
PAIR_TRIES = 5
"""Readings per pair of clocks, the narrowest kept."""
CALIBRATE_NS = 2_000_000
"""How long a clock that is not CUPTI's own is timed before the first conversion."""


class CuptiClock:
    """Ticks of CUPTI's clock to nanoseconds (since the epoch, like CUPTI's own)."""

    def __init__(self, ticks: Callable[[], int]) -> None:
        """Take the first reading; tell at a glance whether the clock is CUPTI's own."""
        self._ticks = ticks
        self._tick0, self._perf0 = self._pair()
        self._epoch0 = time.time_ns()
        self.rate = 1.0
        """CUPTI ticks per nanosecond."""
        self._wait_and_update(GLANCE_NS)
        if not self.native:
            self._wait_and_update(CALIBRATE_NS)

    def _pair(self) -> tuple[int, int]:
        # The tick read between two perf_counter reads: the pair is off by at most
        # half the bracket. The narrowest of a few brackets (a few hundred ns): one
        # the OS preempted would be tens of microseconds wide.
        readings = []
        for _ in range(PAIR_TRIES):
            before = time.perf_counter_ns()
            tick = int(self._ticks())
            after = time.perf_counter_ns()
            readings.append((after - before, tick, (before + after) // 2))
        _, tick, perf = min(readings)
        return tick, perf

    def _wait_and_update(self, span_ns: int) -> None:
        while time.perf_counter_ns() - self._perf0 < span_ns:
            pass
        self.update()

    def update(self) -> None:
        """Measure the rate again over everything since the first reading."""
        tick, perf = self._pair()
        if perf > self._perf0 and tick > self._tick0:
            self.rate = (tick - self._tick0) / (perf - self._perf0)
        if abs(self.rate - 1.0) < NATIVE_TOLERANCE:
            self.rate = 1.0

    @property
    def native(self) -> bool:
        """Whether CUPTI's timestamps are nanoseconds already."""
        return self.rate == 1.0

    def ns(self, tick: int) -> int:
        """A CUPTI timestamp in nanoseconds since the epoch."""
        if self.native:
            return tick
        return self._epoch0 + round((tick - self._tick0) / self.rate)

    def ns_array(self, ticks: NDArray[np.int64]) -> NDArray[np.int64]:
        """:meth:`ns` of every timestamp in ``ticks`` (PM samples' times)."""
        if self.native:
            return ticks
        since = (ticks - self._tick0).astype(np.float64) / self.rate
        return self._epoch0 + np.rint(since).astype(np.int64)

    def ticks(self, ns: int) -> int:
        """The CUPTI timestamp of ``ns`` (the inverse of :meth:`ns`)."""
        if self.native:
            return ns
        return self._tick0 + round((ns - self._epoch0) * self.rate)

    def duration_ns(self, ticks: int) -> int:
        """A length of time in CUPTI ticks, in nanoseconds."""
        return ticks if self.native else round(ticks / self.rate)
