"""Which region each PM sample's counts belong to: pro rata by overlap with kernels.

Pure functions over plain data: PM samples (``start_ns``, ``end_ns`` and one value per
metric, in the GPU global-timer timebase) and the kernel intervals CUPTI's activity
records give for each region of each run (the same timebase). Nothing here touches
CUPTI, so CI drives it with recorded and synthetic samples.

**The method.** A sample covers ``[a, b)`` and counted ``v`` (bytes, cycles, ...)
in it. Its *weights* are the time it overlaps each region's kernels (the union of the
region's kernel intervals, ``w_r``) and the time it overlaps every other kernel that
moves data (the L2 flush, kernels launched between regions: ``w_o``). The region gets
``v * w_r / (sum_r w_r + w_o)``; the rest goes to *outside*. Time in which no kernel
runs (idle GPU, or the *quiet* spin kernels the collector launches around each region)
weighs nothing: no DRAM traffic happens without a kernel running, so a sample that
overlaps a region for 5 µs of its 20 and is idle the rest carries that region's
5 µs of traffic, not a quarter of it. A sample that overlaps no weighted kernel at all
goes wholly to outside. By construction the regions' shares plus outside equal the
sum of the samples, for every metric.

**The error bound.** Within one sample the method assumes every overlapping kernel
moved data at the same rate. For a region ``r`` and another kernel ``o`` sharing a
sample with overlaps ``w_r`` and ``w_o`` and true mean rates ``p_r`` and ``p_o``, the
region's share is off by ``w_r * w_o / (w_r + w_o) * (p_o - p_r)``, at most
``L / 2 * |p_o - p_r|`` for a sample interval ``L``. Only *boundary* samples (those
that overlap the region and another weighted kernel) contribute, at most one at each
edge of each contiguous run of the region's kernels, so
``|error_r| <= edges_r * L / 2 * max|p_o - p_r|`` and never more than ``edges_r * L *
peak DRAM bandwidth / 2``. Concretely, at ``L = 20 µs`` on an H200 (4.8 TB/s), a
region next to the L2 flush (which reads twice the L2, ~100 MB, just before it) can be
off by up to 48 MB per edge: 19 % of the 512 MB ``x * 2`` over 256 MB moves.

That is why the collector keeps a **DRAM-quiet gap** of at least one sample interval
on each side of every region (a spin kernel, ``torch.cuda._sleep``, that moves no
data): then no sample can overlap both a region and its neighbours, no sample is a
boundary sample, and the attribution adds no error at all, whatever the region's
length -- a 30 µs region shorter than ``L`` is counted in full by the one or two
samples that overlap it. What remains is the counters' own accuracy (0.002 % over
2,000 launches on the H200) and traffic the region caused outside its kernels' time:
dirty L2 lines written back later (by the next region's flush, which Nsight Compute
does not count against the kernel either). Back-to-back regions without a gap
between them (another stream, or the gap disabled) fall back to the bound above.

Idle time weighs nothing only if nothing else moves data then: a ``cudaMemcpy`` is no
kernel, so its traffic goes to the kernels sharing its samples (or outside).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Hashable, Mapping, Sequence

    from numpy.typing import ArrayLike, NDArray

K = TypeVar("K", bound="Hashable")
"""A region's key: ``(run sequence, region name)`` in the collector."""

Span = tuple[int, int]
"""One kernel's ``[start_ns, end_ns)``."""


def merge_spans(spans: Sequence[Span]) -> NDArray[np.int64]:
    """The union of ``spans`` as sorted, disjoint ``[start, end)`` rows (n x 2).

    Empty and reversed spans are dropped; touching spans are joined.
    """
    rows = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    rows = rows[rows[:, 1] > rows[:, 0]]
    if len(rows) == 0:
        return rows
    rows = rows[np.argsort(rows[:, 0], kind="stable")]
    # A new block starts where a span begins after every earlier span has ended.
    ends_so_far = np.maximum.accumulate(rows[:, 1])
    starts_block = np.ones(len(rows), dtype=bool)
    starts_block[1:] = rows[1:, 0] > ends_so_far[:-1]
    block = np.cumsum(starts_block) - 1
    merged = np.empty((int(block[-1]) + 1, 2), dtype=np.int64)
    merged[:, 0] = rows[starts_block, 0]
    merged[:, 1] = np.maximum.reduceat(rows[:, 1], np.flatnonzero(starts_block))
    return merged


def covered(
    merged: NDArray[np.int64], a: ArrayLike, b: ArrayLike
) -> NDArray[np.float64]:
    """Time of each ``[a_i, b_i)`` covered by the disjoint sorted rows of ``merged``.

    Through the covered-time function ``C(t)``: time covered before ``t``;
    the overlap of ``[a, b)`` is ``C(b) - C(a)``. O((n + m) log m).
    """
    a_arr = np.asarray(a, dtype=np.float64)
    b_arr = np.asarray(b, dtype=np.float64)
    if len(merged) == 0:
        return np.zeros(np.broadcast(a_arr, b_arr).shape)
    starts = merged[:, 0].astype(np.float64)
    lengths = (merged[:, 1] - merged[:, 0]).astype(np.float64)
    before = np.concatenate(([0.0], np.cumsum(lengths)))

    def cover(t: NDArray[np.float64]) -> NDArray[np.float64]:
        i = np.searchsorted(starts, t, side="right") - 1  # the last row starting <= t
        inside = np.clip(t - starts[np.maximum(i, 0)], 0.0, lengths[np.maximum(i, 0)])
        return np.where(i < 0, 0.0, before[np.maximum(i, 0)] + inside)

    return np.maximum(cover(b_arr) - cover(a_arr), 0.0)


@dataclass(frozen=True)
class Layout(Generic[K]):
    """Where the kernels of a batch of runs were, by region.

    Attributes:
        regions: Region key -> its kernels' intervals (from CUPTI activity records).
        busy: Every other kernel that may move data (the L2 flush, kernels launched
            between regions); their share of a sample goes to outside. Quiet spin
            kernels are left out: they weigh nothing, like idle time.
        writeback: Region key -> its write-back sweep (an L2 read sweep after the
            region): DRAM writes there are the region's dirty lines; for every other
            counter the sweep is busy like any flush (see :meth:`for_writes`).
    """

    regions: Mapping[K, Sequence[Span]]
    busy: Sequence[Span] = ()
    writeback: Mapping[K, Sequence[Span]] = field(default_factory=dict)

    def for_reads(self) -> Layout[K]:
        """The layout for every counter but DRAM writes: write-back sweeps are busy."""
        sweeps = [span for spans in self.writeback.values() for span in spans]
        return Layout(regions=self.regions, busy=[*self.busy, *sweeps])

    def for_writes(self) -> Layout[K]:
        """The layout of the write-back windows: each region's sweep stands for it.

        The regions' own kernels are busy here (their writes are counted by
        :meth:`for_reads`).
        """
        kernels = [span for spans in self.regions.values() for span in spans]
        return Layout(regions=self.writeback, busy=[*self.busy, *kernels])


@dataclass(frozen=True)
class Weights(Generic[K]):
    """How much of which sample goes to which region (only the nonzero pairs).

    Attributes:
        keys: The regions, in :attr:`Layout.regions` order; ``region`` indexes it.
        sample: Sample index of each pair.
        region: Region index of each pair.
        overlap_ns: Time the sample overlaps the region's kernels.
        share: The fraction of the sample's value that goes to the region.
        busy_ns: Each region's kernel time (the union of its intervals).
        first_ns: Each region's first kernel start (the origin of its timeline).
        last_ns: Each region's last kernel end.
    """

    keys: tuple[K, ...]
    sample: NDArray[np.intp]
    region: NDArray[np.intp]
    overlap_ns: NDArray[np.float64]
    share: NDArray[np.float64]
    busy_ns: NDArray[np.float64]
    first_ns: NDArray[np.float64]
    last_ns: NDArray[np.float64]

    def needed(self) -> NDArray[np.intp]:
        """The samples some region has a share of, sorted: only those need values."""
        return np.unique(self.sample)


def _merged_by_region(
    spans: Mapping[K, Sequence[Span]], keys: tuple[K, ...]
) -> tuple[NDArray[np.int64], NDArray[np.intp]]:
    """Each region's union of spans, all regions at once: rows and region indices.

    The rows come sorted by region, then start. Each region's times are shifted by
    its index times a stride longer than the batch, so one :func:`merge_spans` over
    all of them never joins two regions' spans.
    """
    rows = [
        (i, int(a), int(b))
        for i, key in enumerate(keys)
        for a, b in spans[key]
        if b > a
    ]
    if not rows:
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.intp)
    table = np.array(rows, dtype=np.int64)
    origin = int(table[:, 1].min())
    stride = int(table[:, 2].max()) - origin + 1
    if stride * len(keys) >= 2**62:  # pragma: no cover - a batch of years
        msg = "kernel times span more than int64 can shift"
        raise OverflowError(msg)
    shift = table[:, 0] * stride - origin
    merged = merge_spans(table[:, 1:] + shift[:, None])  # type: ignore[arg-type]
    region = (merged[:, 0] // stride).astype(np.intp)
    merged -= (region * stride - origin)[:, None]
    return merged, region


def weigh(starts: ArrayLike, ends: ArrayLike, layout: Layout[K]) -> Weights[K]:
    """Weigh every sample against the regions of ``layout`` (see the module doc).

    Every region at once: each region's merged span meets the samples in a
    contiguous run of the samples sorted by start, so the (sample, span) pairs are
    laid out with ``repeat`` and their overlaps summed per (sample, region).

    Args:
        starts: Sample start times (ns, the GPU global timer).
        ends: Sample end times; a sample with ``end <= start`` weighs nothing.
        layout: The regions' kernel intervals and the other busy kernels.

    Returns:
        The nonzero (sample, region) pairs with their overlap and share.
    """
    a = np.asarray(starts, dtype=np.float64)
    b = np.maximum(a, np.asarray(ends, dtype=np.float64))
    keys = tuple(layout.regions)
    count = len(keys)
    spans, labels = _merged_by_region(layout.regions, keys)
    total = covered(merge_spans(layout.busy), a, b)
    order = np.argsort(a, kind="stable")
    sorted_a = a[order]
    latest_end = np.maximum.accumulate(b[order]) if len(b) else b
    # Candidates of each span: samples starting before its end whose end (or an
    # earlier sample's, the running maximum) reaches past its start.
    lo = np.searchsorted(latest_end, spans[:, 0], side="right")
    hi = np.searchsorted(sorted_a, spans[:, 1], side="left")
    counts = np.maximum(hi - lo, 0)
    span_of = np.repeat(np.arange(len(spans)), counts)
    first_pair = np.cumsum(counts) - counts
    within = np.arange(int(counts.sum())) - np.repeat(first_pair, counts)
    candidate = order[np.repeat(lo, counts) + within]
    overlap = np.minimum(b[candidate], spans[span_of, 1]) - np.maximum(
        a[candidate], spans[span_of, 0]
    )
    hit = overlap > 0
    pair_key = candidate[hit].astype(np.int64) * max(count, 1) + labels[span_of[hit]]
    unique, inverse = np.unique(pair_key, return_inverse=True)
    overlap_ns = np.bincount(inverse, weights=overlap[hit], minlength=len(unique))
    sample = (unique // max(count, 1)).astype(np.intp)
    region = (unique % max(count, 1)).astype(np.intp)
    np.add.at(total, sample, overlap_ns)
    share = overlap_ns / total[sample] if len(sample) else np.zeros(0)
    busy, first, last = _span_bounds(spans, labels, count)
    return Weights(
        keys=keys,
        sample=sample,
        region=region,
        overlap_ns=overlap_ns.astype(np.float64),
        share=share,
        busy_ns=busy,
        first_ns=first,
        last_ns=last,
    )


def _span_bounds(
    spans: NDArray[np.int64], labels: NDArray[np.intp], count: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per region: its kernel time, its first kernel start and last kernel end."""
    lengths = (spans[:, 1] - spans[:, 0]).astype(np.float64)
    first = np.full(count, np.nan)
    last = np.full(count, np.nan)
    if len(spans):
        np.fmin.at(first, labels, spans[:, 0].astype(np.float64))
        np.fmax.at(last, labels, spans[:, 1].astype(np.float64))
    busy = np.bincount(labels, weights=lengths, minlength=count).astype(np.float64)
    return busy, first, last


def _rows_of_pairs(
    weights: Weights[K], rows: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The value row of each (sample, region) pair, from rows in ``needed()`` order."""
    table = np.asarray(rows, dtype=np.float64)
    needed = weights.needed()
    if table.shape[0] != len(needed):
        msg = (
            f"got values for {table.shape[0]} samples, expected {len(needed)} "
            "(one row per sample of Weights.needed(), in that order)"
        )
        raise ValueError(msg)
    return table[np.searchsorted(needed, weights.sample)]


def region_sums(
    weights: Weights[K], rows: NDArray[np.float64]
) -> dict[K, NDArray[np.float64]]:
    """Each region's share of additive values: ``sum_s share_rs * v_s`` per metric.

    Args:
        weights: From :func:`weigh`.
        rows: The values (one column per metric) of the samples of
            :meth:`Weights.needed`, in that order.

    Returns:
        Region key -> its totals, for every region of the layout (zeros for a region
        with no kernels or no sample).

    Raises:
        ValueError: ``rows`` has not one row per needed sample.
    """
    width = np.asarray(rows).shape[1] if np.ndim(rows) == 2 else 0  # noqa: PLR2004
    totals = np.zeros((len(weights.keys), width))
    if len(weights.sample):
        np.add.at(
            totals,
            weights.region,
            weights.share[:, None] * _rows_of_pairs(weights, rows),
        )
    return {key: totals[i] for i, key in enumerate(weights.keys)}


def region_means(
    weights: Weights[K], rows: NDArray[np.float64]
) -> dict[K, NDArray[np.float64]]:
    """Each region's overlap-weighted mean of ratio values (``%``, ratios).

    A ratio measured over a sample cannot be split; the samples overlapping a
    region are averaged, each weighted by how long it overlaps the region's kernels.

    Returns:
        Region key -> its means (NaN for a region no sample overlaps).

    Raises:
        ValueError: ``rows`` has not one row per needed sample.
    """
    width = np.asarray(rows).shape[1] if np.ndim(rows) == 2 else 0  # noqa: PLR2004
    sums = np.zeros((len(weights.keys), width))
    time = np.zeros(len(weights.keys))
    if len(weights.sample):
        pairs = _rows_of_pairs(weights, rows)
        np.add.at(sums, weights.region, weights.overlap_ns[:, None] * pairs)
        np.add.at(time, weights.region, weights.overlap_ns)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / time[:, None]
    return {key: means[i] for i, key in enumerate(weights.keys)}


@dataclass(frozen=True)
class Attribution(Generic[K]):
    """Every sample's value, split between the regions and outside."""

    regions: dict[K, NDArray[np.float64]]
    outside: NDArray[np.float64]


def attribute(
    starts: ArrayLike, ends: ArrayLike, values: ArrayLike, layout: Layout[K]
) -> Attribution[K]:
    """Split additive sample values (n samples x m metrics) between regions and outside.

    ``sum(regions) + outside == values.sum(axis=0)`` up to rounding.
    """
    table = np.asarray(values, dtype=np.float64)
    table = table.reshape(len(table), -1) if table.ndim != 2 else table  # noqa: PLR2004
    weights = weigh(starts, ends, layout)
    regions = region_sums(weights, table[weights.needed()].reshape(-1, table.shape[1]))
    shared = sum(regions.values(), np.zeros(table.shape[1]))
    return Attribution(regions=regions, outside=table.sum(axis=0) - shared)
