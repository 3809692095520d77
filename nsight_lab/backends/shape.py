"""Each region's shape in one run (:mod:`nsight_lab.contract.shape`), from its records.

Computed where every activity record of the region is at hand (``cupti``, ``pm``):
how much of its span the GPU was busy, on how many streams and threads, how many of
its launches came from other threads, how many records CUPTI delivered twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.contract import shape

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nsight_lab.backends.activity import KernelActivity
    from nsight_lab.backends.causes import Causes


def busy_and_span(spans: Sequence[tuple[int, int]]) -> tuple[float, float]:
    """The time the union of ``spans`` covers, and from its first start to last end.

    ``pm.attribution.merge_spans``'s union (empty and reversed spans dropped, touching
    ones joined), in plain Python: a region has a few records per run, and numpy's
    arrays cost 20-30 µs of each run's collection (issue 32).
    """
    rows = sorted((start, end) for start, end in spans if end > start)
    if not rows:
        return 0.0, 0.0
    first, end = rows[0]
    start, busy = first, 0
    for s, e in rows[1:]:
        if s > end:  # after every earlier span ended: a new block
            busy += end - start
            start, end = s, e
        elif e > end:
            end = e
    return float(busy + end - start), float(end - first)


def one_shape(
    records: Sequence[KernelActivity], host_ns: int | None, causes: Causes
) -> dict[str, float]:
    """The shape metrics of one region's records (``host_ns``: its open time)."""
    busy, span = busy_and_span([(k.start_ns, k.end_ns) for k in records])
    threads = {
        call.thread_id
        for k in records
        if (call := causes.launches.get(k.correlation_id)) is not None
    }
    out = {
        shape.BUSY_NS: busy,
        shape.SPAN_NS: span,
        shape.LAUNCHES: float(len(records)),
        shape.STREAMS: float(len({(k.device_id, k.stream_id) for k in records})),
        shape.THREADS: float(len(threads)),
        shape.FOREIGN: float(
            sum(1 for k in records if k.correlation_id in causes.foreign)
        ),
        shape.DUPLICATES: float(
            sum(
                causes.duplicates.get(c, 0) for c in {k.correlation_id for k in records}
            )
        ),
    }
    if host_ns is not None:
        out[shape.HOST_NS] = float(host_ns)
    return out


def region_shapes(
    regions: Mapping[str, Sequence[KernelActivity]],
    host_ns: Mapping[str, int],
    causes: Causes,
) -> dict[str, dict[str, float]]:
    """Region name -> its shape (``host_ns``: each region's open time)."""
    return {
        name: one_shape(records, host_ns.get(name), causes)
        for name, records in regions.items()
    }
