"""One pm collection's material: which kernel spans are whose, and what it cost.

The tags (external correlation ids) the pm measurement launches its own kernels
under, each collection's kernels laid out as the attribution takes them (regions,
their write-back sweeps, other busy kernels, the quiet spins: :func:`kernel_layout`),
the raw material kept for fixtures (:class:`RawBatch`) and the host time spent
(:class:`Cost`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nsight_lab.backends.cupti import IDS_PER_RUN, kernels_by_external_id
from nsight_lab.backends.pm import attribution
from nsight_lab.regions import CELL_REGION

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from nsight_lab.backends.cupti import KernelActivity, PendingRun
    from nsight_lab.backends.pm.chunk import Chunk

QUIET_EXTERNAL_ID = 1
"""External correlation id of the quiet spin kernels: below ``IDS_PER_RUN``, so no
run's region ever claims it (run ids start at ``1 * IDS_PER_RUN``)."""
FLUSH_EXTERNAL_ID = 2
"""External correlation id of the L2 flush before a region (busy, like any kernel
outside the regions; tagged so the cell's own kernels between regions are told
apart from it)."""
WRITEBACK_SLOT = IDS_PER_RUN // 2
"""A region's write-back sweep is tagged ``run id + WRITEBACK_SLOT + slot``."""

Key = tuple[int, str]
"""A region of a batch: (run sequence number, region name)."""


@dataclass
class RawBatch:
    """One collection's raw material, kept with ``keep_raw`` (fixtures, benchmarks).

    Attributes:
        metrics: The sampled metrics, in value-column order.
        samples: ``[start_ns, end_ns, *values]`` of every sample.
        regions: ``(run sequence, region name, [[start_ns, end_ns], ...])``.
        busy: Other kernels' ``[start_ns, end_ns]`` (flushes, untagged work).
        quiet: The quiet spin kernels' ``[start_ns, end_ns]``.
        writeback: ``(run sequence, region name, [[start_ns, end_ns], ...])`` of each
            region's write-back sweep.
    """

    metrics: list[str]
    samples: list[list[float]] = field(default_factory=list)
    regions: list[tuple[int, str, list[list[int]]]] = field(default_factory=list)
    busy: list[list[int]] = field(default_factory=list)
    quiet: list[list[int]] = field(default_factory=list)
    writeback: list[tuple[int, str, list[list[int]]]] = field(default_factory=list)


@dataclass
class Cost:
    """Where the pm backend's own host time goes (the benchmark reports it)."""

    drains: int = 0
    drain_s: float = 0.0
    """Stopping, decoding and restarting PM sampling."""
    attribute_s: float = 0.0
    """Weighing the samples and evaluating the ones regions need (CUPTI host API)."""
    samples_decoded: int = 0
    samples_evaluated: int = 0

    def add(self, chunks: Sequence[Chunk], drain_s: float, attribute_s: float) -> None:
        """Count one collection."""
        self.drains += 1
        self.drain_s += drain_s
        self.attribute_s += attribute_s
        self.samples_decoded += sum(len(c) for c in chunks)
        self.samples_evaluated += sum(c.evaluated for c in chunks)


def entry_layout(
    kernels: Sequence[KernelActivity], external_ids: dict[int, int]
) -> tuple[dict[int, list[int]], dict[tuple[int, int], int]]:
    """The cell's own kernels' starts per run, and each region's first kernel start."""
    cell_starts: dict[int, list[int]] = {}  # run seq -> its own kernels' starts
    firsts: dict[tuple[int, int], int] = {}  # (run seq, slot) -> first start
    for k in kernels:
        ext = external_ids.get(k.correlation_id)
        if ext is None or ext < IDS_PER_RUN:
            continue
        seq, slot = divmod(ext, IDS_PER_RUN)
        if slot == 0:
            cell_starts.setdefault(seq, []).append(k.start_ns)
        elif slot < WRITEBACK_SLOT:
            key = (seq, slot)
            firsts[key] = min(firsts.get(key, k.start_ns), k.start_ns)
    return cell_starts, firsts


def kernel_layout(
    kernels: Sequence[KernelActivity],
    external_ids: dict[int, int],
    runs: Sequence[PendingRun],
    keep: Callable[[str], bool],
) -> tuple[attribution.Layout[Key], list[attribution.Span]]:
    """Each region's kernels and write-back sweep, other busy kernels, spins."""
    by_id = kernels_by_external_id(kernels, external_ids)
    # --ignore-kernels (``keep``): an ignored kernel is no part of its region; what
    # it moves goes to outside, as any other kernel's.
    regions: dict[Key, list[attribution.Span]] = {}
    writeback: dict[Key, list[attribution.Span]] = {}
    claimed: set[int] = set()
    for run in runs:
        base = run.seq * IDS_PER_RUN
        slots = enumerate(run.regions, start=1) if run.regions else [(0, CELL_REGION)]
        for slot, name in slots:
            claimed.update((base + slot, base + WRITEBACK_SLOT + slot))
            regions[(run.seq, name)] = [
                (k.start_ns, k.end_ns)
                for k in by_id.get(base + slot, [])
                if keep(k.name)
            ]
            writeback[(run.seq, name)] = [
                (k.start_ns, k.end_ns)
                for k in by_id.get(base + WRITEBACK_SLOT + slot, [])
            ]
    busy = [
        (k.start_ns, k.end_ns)
        for k in kernels
        if (ext := external_ids.get(k.correlation_id)) != QUIET_EXTERNAL_ID
        and (ext not in claimed or not keep(k.name))
        and not (ext is not None and ext % IDS_PER_RUN >= WRITEBACK_SLOT)
    ]
    quiet = [(k.start_ns, k.end_ns) for k in by_id.get(QUIET_EXTERNAL_ID, [])]
    layout = attribution.Layout(regions=regions, busy=busy, writeback=writeback)
    return layout, quiet


def raw_batch(
    metrics: Sequence[str],
    chunks: Sequence[Chunk],
    layout: attribution.Layout[Key],
    quiet: list[attribution.Span],
) -> RawBatch:
    """One collection as plain lists (``keep_raw``: fixtures, benchmarks)."""
    batch = RawBatch(metrics=list(metrics))
    for chunk in chunks:
        values = chunk.all_values()
        batch.samples += [
            [int(a), int(b), *map(float, row)]
            for a, b, row in zip(chunk.starts, chunk.ends, values, strict=True)
        ]
    batch.regions = [
        (seq, name, [[int(a), int(b)] for a, b in spans])
        for (seq, name), spans in layout.regions.items()
    ]
    batch.busy = [[int(a), int(b)] for a, b in layout.busy]
    batch.quiet = [[int(a), int(b)] for a, b in quiet]
    batch.writeback = [
        (seq, name, [[int(a), int(b)] for a, b in spans])
        for (seq, name), spans in layout.writeback.items()
    ]
    return batch
