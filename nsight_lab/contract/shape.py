"""A region's *shape* in one run: how its GPU work sat in time, not how long it took.

Per-kernel backends (``cupti``, ``pm``) know each activity record a region caused, so
beside the duration they hand over, per region and run, the quantities below as
metrics under :data:`PREFIX`. They are never results rows of their own; the views read
them to tell a number that cannot be true (kernel time past its span, kernels covering
a sliver of the region) and a launch-bound region (the GPU idle most of the span) from
a measured one. Times are in ns, in CUPTI's clock (host and GPU share it).
"""

from __future__ import annotations

PREFIX = "region__"
"""Every shape metric starts with this; none is a results row."""

BUSY_NS = f"{PREFIX}gpu_busy_ns"
"""The union of the region's activity intervals: time some work of it ran."""
SPAN_NS = f"{PREFIX}gpu_span_ns"
"""First activity start to last activity end on the GPU."""
HOST_NS = f"{PREFIX}host_span_ns"
"""The region's open time on the host (enter to exit), CUPTI's clock."""
LAUNCHES = f"{PREFIX}launches"
"""Kernels, memcpys and memsets attributed to the region."""
STREAMS = f"{PREFIX}streams"
"""Distinct CUDA streams the region's activity ran on."""
THREADS = f"{PREFIX}threads"
"""Distinct host threads that launched the region's activity (0 where not known)."""
FOREIGN = f"{PREFIX}foreign_thread_launches"
"""Launches made by another thread than the one that opened the region (autograd's
engine threads, a user's or a data loader's), attributed by the time they were made."""
DUPLICATES = f"{PREFIX}duplicate_records"
"""Activity records CUPTI delivered twice (another CUPTI client in the process);
dropped from the duration, counted here."""

ENQUEUE_NS = f"{PREFIX}host_enqueue_ns"
"""The events backend's only shape metric: the host's time from the region's entry to
its exit (``perf_counter``). Each region runs behind a head start as long as its last
enqueue, so its GPU span is the GPU's time with every launch queued; a region whose
enqueue is as long as that span or longer is launch-bound: the cell waits on Python,
and events see no idle gap to show it."""

ALL = (
    BUSY_NS,
    SPAN_NS,
    HOST_NS,
    LAUNCHES,
    STREAMS,
    THREADS,
    FOREIGN,
    DUPLICATES,
    ENQUEUE_NS,
)
