"""Each region's shape in one run (:mod:`nsight_lab.contract.shape`), from its records.

Computed where every activity record of the region is at hand (``cupti``, ``pm``):
how much of its span the GPU was busy, on how many streams and threads, how many of
its launches came from other threads, how many records CUPTI delivered twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.backends.pm.attribution import merge_spans
from nsight_lab.contract import shape

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nsight_lab.backends.activity import KernelActivity
    from nsight_lab.backends.causes import Causes


def one_shape(
    records: Sequence[KernelActivity], host_ns: int | None, causes: Causes
) -> dict[str, float]:
    """The shape metrics of one region's records (``host_ns``: its open time)."""
    spans = merge_spans([(k.start_ns, k.end_ns) for k in records])
    busy = float((spans[:, 1] - spans[:, 0]).sum()) if len(spans) else 0.0
    span = float(spans[-1, 1] - spans[0, 0]) if len(spans) else 0.0
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
