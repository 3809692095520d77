"""Which region caused each kernel: the one open in the process when it was launched.

CUPTI's external correlation ids (the ``cupti`` and ``pm`` backends push one per region)
are a per-*thread* stack: a kernel launched by another thread than the one that opened
the region carries no id. PyTorch's autograd launches every kernel of
``loss.backward()`` from its own engine threads, so by ids alone a training step's
backward read 1 µs (its one main-thread kernel) instead of 8 ms on an H100.

The rule here is attribution by cause: a kernel, memcpy or memset belongs to the region
that was open *in the process* when the API call that launched it started, whichever
thread made the call and whatever stream or CUDA graph ran it (a graph's kernels carry
the correlation id of its ``cudaGraphLaunch``). Launches of the thread that opened the
region keep the id CUPTI stamped on them; every other launch is looked up by its API
record's start time (CUPTI's runtime and driver activity records: the thread and the
host time of each call) in :class:`RegionTimeline`, the regions' open and close times
on the same clock (``cuptiGetTimestamp``).

What the rule cannot tell apart: GPU work that an unrelated thread launches while a
region is open (a data loader's prefetch, another notebook thread) is counted to that
region. The README says so.

The records are plain data, so CI replays streams recorded on the GPU (threads, side
streams, graph nodes, duplicates) through these functions.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from nsight_lab.backends.activity import KernelActivity, LaunchCall


@dataclass
class RegionTimeline:
    """The external id of the innermost open run or region over time, process-wide.

    Marked by the thread that opens regions, at each open and close, in CUPTI's clock.
    """

    times: list[int] = field(default_factory=list)
    tops: list[int | None] = field(default_factory=list)

    def mark(self, at_ns: int, top: int | None) -> None:
        """From ``at_ns`` on, ``top`` is open (``None``: nothing is)."""
        if self.times and at_ns < self.times[-1]:  # a clock that stepped back
            at_ns = self.times[-1]
        self.times.append(at_ns)
        self.tops.append(top)

    def open_at(self, at_ns: int) -> int | None:
        """The id open at ``at_ns`` (``None`` before the first mark or between runs)."""
        i = bisect.bisect_right(self.times, at_ns) - 1
        return self.tops[i] if i >= 0 else None

    def forget_before(self, at_ns: int) -> None:
        """Drop the marks no launch at or after ``at_ns`` needs (the one open stays)."""
        i = bisect.bisect_right(self.times, at_ns) - 1
        if i > 0:
            del self.times[:i]
            del self.tops[:i]


@dataclass(frozen=True)
class Causes:
    """Every activity record of one collection, each given the region that caused it."""

    kernels: list[KernelActivity]
    """The records, each once (duplicates CUPTI delivered twice dropped)."""
    external_ids: dict[int, int]
    """Correlation id -> the external id of the run or region that caused it."""
    launches: Mapping[int, LaunchCall]
    """Correlation id -> the API call that launched it (where CUPTI recorded it)."""
    foreign: frozenset[int] = frozenset()
    """Correlation ids attributed by time: launched by another thread."""
    duplicates: Counter[int] = field(default_factory=Counter)
    """Correlation id -> records dropped as duplicates of one already kept."""


def _identity(k: KernelActivity) -> tuple[str, int, int, int]:
    # One launch makes one record per graph node (0 outside graphs) and device; a
    # second record with the same identity is the same activity delivered again.
    return (k.kind, k.correlation_id, k.graph_node_id, k.device_id)


def unique_records(
    kernels: Iterable[KernelActivity],
) -> tuple[list[KernelActivity], Counter[int]]:
    """Each activity once, and how many extra records each correlation id had.

    Another CUPTI client in the process (Kineto after ``torch.profiler``) can leave
    CUPTI delivering an activity twice; summing both doubled every region.
    """
    seen: set[tuple[str, int, int, int]] = set()
    kept: list[KernelActivity] = []
    dropped: Counter[int] = Counter()
    for k in kernels:
        key = _identity(k)
        if key in seen:
            dropped[k.correlation_id] += 1
            continue
        seen.add(key)
        kept.append(k)
    return kept, dropped


def attribute_causes(
    kernels: Sequence[KernelActivity],
    stamped: Mapping[int, int],
    launches: Mapping[int, LaunchCall],
    timeline: RegionTimeline,
) -> Causes:
    """Give each record the run or region open in the process when it was launched.

    ``stamped`` holds the ids CUPTI stamped on the opening thread's calls; a record
    without one is looked up by its launch's start in ``timeline``. A record whose
    launch CUPTI did not record, or that was launched while nothing was open, stays
    without an id (outside every run).
    """
    kept, dropped = unique_records(kernels)
    ids = dict(stamped)
    foreign: set[int] = set()
    for k in kept:
        corr = k.correlation_id
        if corr in ids:
            continue
        call = launches.get(corr)
        if call is None:
            continue
        top = timeline.open_at(call.start_ns)
        if top is not None:
            ids[corr] = top
            foreign.add(corr)
    return Causes(
        kernels=kept,
        external_ids=ids,
        launches=launches,
        foreign=frozenset(foreign),
        duplicates=dropped,
    )
