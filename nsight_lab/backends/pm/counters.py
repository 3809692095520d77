"""One collection's samples -> each region's counter values and timeline (pure).

:func:`region_counters` weighs the samples of each decoded chunk against the
regions' kernels (:mod:`.attribution`), evaluates only the samples some region has a
share of, and adds up per region, by the kind of each metric (:func:`.metrics.kind_of`):

- *counts*: the region's pro-rata share of each sample;
- *rates* (``.per_second``, ``.pct_of_peak_sustained_elapsed``): turned into counts
  by the sample's length, shared, then divided by the region's kernel time -- a rate
  over the time the region ran, not diluted by the quiet gaps around it;
- *ratios*: the overlap-weighted mean of the samples that overlap the region.

The timeline point of a sample is the region's share over the time the sample
overlapped the region's kernels (GB/s for bytes, per second for other counts, the
value itself for ratios), at the sample's midpoint measured from the region's first
kernel start (clamped to the region's span).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypeVar

import numpy as np

from nsight_lab.backends.pm import attribution, metrics, series

if TYPE_CHECKING:
    from collections.abc import Hashable, Sequence

    from numpy.typing import NDArray

K = TypeVar("K", bound="Hashable")


class Samples(Protocol):
    """A decoded chunk (:class:`~.sampler.Chunk`): timestamps, values on demand."""

    @property
    def starts(self) -> NDArray[np.int64]:
        """Sample start times (ns)."""

    @property
    def ends(self) -> NDArray[np.int64]:
        """Sample end times (ns)."""

    def values(self, indices: NDArray[np.intp]) -> NDArray[np.float64]:
        """The metric values of the samples ``indices``, one row each."""


@dataclass
class RegionCounters:
    """What the samples of one collection add up to for one region of one run."""

    sums: NDArray[np.float64]
    """Count and rate columns: the region's share (rates times the sample's ns)."""
    ratio_sums: NDArray[np.float64]
    """Ratio columns: the sum of overlap * value."""
    ratio_ns: float = 0.0
    """The overlap the ratio sums are weighted by."""
    busy_ns: float = 0.0
    """The region's kernel time (the union of its kernels)."""
    t_us: list[float] = field(default_factory=list)
    points: list[NDArray[np.float64]] = field(default_factory=list)
    writeback: NDArray[np.float64] | None = None
    """DRAM writes in the region's write-back window (its dirty lines written back
    after its last kernel), per metric column; zero for all but DRAM writes."""

    @classmethod
    def empty(cls, width: int, busy_ns: float) -> RegionCounters:
        """Nothing added yet for a region of ``busy_ns`` kernel time."""
        return cls(sums=np.zeros(width), ratio_sums=np.zeros(width), busy_ns=busy_ns)

    def add(  # noqa: PLR0913  (one sample batch's parts, each its own column)
        self,
        sums: NDArray[np.float64],
        *,
        writeback: NDArray[np.float64] | None,
        ratio_sums: NDArray[np.float64],
        ratio_ns: float,
        t_us: list[float],
        points: list[NDArray[np.float64]],
    ) -> None:
        """Add one chunk's share of the samples to this region's totals."""
        self.sums += sums
        if writeback is not None:
            if self.writeback is None:
                self.writeback = np.zeros(len(self.sums))
            self.writeback += writeback
        self.ratio_sums += ratio_sums
        self.ratio_ns += ratio_ns
        self.t_us += t_us
        self.points += points

    def values(self, names: Sequence[str]) -> dict[str, float]:
        """The region's value of each metric (only finite ones).

        A DRAM write metric's value is what the region's kernels wrote while they
        ran, as Nsight Compute counts it; the lines they left dirty, written back in
        the region's write-back window, are ``<metric>.writeback``
        (:func:`.metrics.writeback_metric`).
        """
        out: dict[str, float] = {}
        if self.writeback is not None:
            for j, name in enumerate(names):
                if metrics.counts_writeback(name):
                    out[metrics.writeback_metric(name)] = float(self.writeback[j])
        for j, name in enumerate(names):
            kind = metrics.kind_of(name)
            if kind == "count":
                value = float(self.sums[j])
            elif kind == "rate":
                value = float(self.sums[j]) / self.busy_ns if self.busy_ns else math.nan
            else:
                value = (
                    float(self.ratio_sums[j]) / self.ratio_ns
                    if self.ratio_ns
                    else math.nan
                )
            if math.isfinite(value):
                out[name] = value
        return out

    def packed_series(self, names: Sequence[str]) -> bytes | None:
        """The region's timeline, packed (:func:`.series.pack`); None without points."""
        if not self.t_us:
            return None
        order = np.argsort(self.t_us, kind="stable")
        table = np.array(self.points)[order]
        return series.pack(
            series.CounterSeries(
                metrics=tuple(names),
                units=tuple(metrics.timeline_unit(m) for m in names),
                t_us=tuple(float(self.t_us[i]) for i in order),
                values=tuple(
                    tuple(float(v) for v in table[:, j]) for j in range(len(names))
                ),
            )
        )


@dataclass(frozen=True)
class _Columns:
    """How each metric column combines: its kind, timeline scale, write-back."""

    rate: NDArray[np.bool_]
    ratio: NDArray[np.bool_]
    scale: NDArray[np.float64]
    written: NDArray[np.bool_]

    @classmethod
    def of(cls, names: Sequence[str]) -> _Columns:
        kinds = [metrics.kind_of(m) for m in names]
        return cls(
            rate=np.array([k == "rate" for k in kinds]),
            ratio=np.array([k == "ratio" for k in kinds]),
            scale=np.array([metrics.timeline_scale(m) for m in names]),
            written=np.array([metrics.counts_writeback(m) for m in names]),
        )


def region_counters(
    chunks: Sequence[Samples], layout: attribution.Layout[K], names: Sequence[str]
) -> dict[K, RegionCounters]:
    """Each region's counters and timeline points over ``chunks`` (see module doc).

    Args:
        chunks: The decoded samples, in time order.
        layout: The regions' kernel intervals and the other busy kernels.
        names: The metric of each value column.

    Returns:
        Region key -> its counters, for every region some sample overlaps.
    """
    columns = _Columns.of(names)
    reads = layout.for_reads()
    writes = layout.for_writes() if layout.writeback and columns.written.any() else None
    totals: dict[K, RegionCounters] = {}
    for chunk in chunks:
        _add_chunk(totals, chunk, reads, writes, columns)
    return totals


def _add_chunk(
    totals: dict[K, RegionCounters],
    chunk: Samples,
    reads: attribution.Layout[K],
    writes: attribution.Layout[K] | None,
    columns: _Columns,
) -> None:
    """Add one chunk's samples to the regions they overlap (and their sweeps)."""
    weights = attribution.weigh(chunk.starts, chunk.ends, reads)
    swept = (
        attribution.weigh(chunk.starts, chunk.ends, writes)
        if writes is not None
        else None
    )
    needed = weights.needed()
    if swept is not None:
        needed = np.union1d(needed, swept.needed())
    if len(needed) == 0:
        return
    rows = np.nan_to_num(chunk.values(needed))
    lengths = (chunk.ends[needed] - chunk.starts[needed]).astype(np.float64)
    additive = np.where(columns.rate, rows * lengths[:, None], rows)
    sums = attribution.region_sums(weights, _rows_for(weights, needed, additive))
    back = _written_back(swept, needed, additive, columns.written)
    keep = np.isin(needed, weights.needed())
    rows, additive, needed = rows[keep], additive[keep], needed[keep]
    means = attribution.region_means(weights, rows)
    overlap = np.bincount(
        weights.region, weights.overlap_ns, minlength=len(weights.keys)
    )
    pair_rows = np.searchsorted(needed, weights.sample)
    # The region's part of each sample over the time it overlapped the region:
    # its rate while the region's kernels ran (idle and quiet time carried none).
    rates = (
        weights.share[:, None]
        * additive[pair_rows]
        / weights.overlap_ns[:, None]
        * columns.scale
    )
    point_values = np.where(columns.ratio, rows[pair_rows], rates)
    mids = (chunk.starts[weights.sample] + chunk.ends[weights.sample]) / 2
    width = len(columns.scale)
    for i, key in enumerate(weights.keys):
        if overlap[i] <= 0:
            continue
        found = totals.setdefault(
            key, RegionCounters.empty(width, float(weights.busy_ns[i]))
        )
        mine = weights.region == i
        first = float(weights.first_ns[i])
        length = max(float(weights.last_ns[i]) - first, 0.0)
        found.add(
            sums[key],
            writeback=back.get(key),
            ratio_sums=np.nan_to_num(means[key]) * overlap[i],
            ratio_ns=float(overlap[i]),
            t_us=(np.clip(mids[mine] - first, 0.0, length) / 1e3).tolist(),
            points=list(point_values[mine]),
        )


def _written_back(
    swept: attribution.Weights[K] | None,
    needed: NDArray[np.intp],
    additive: NDArray[np.float64],
    written: NDArray[np.bool_],
) -> dict[K, NDArray[np.float64]]:
    """Each region's dirty lines, written back during its sweep (DRAM writes only)."""
    if swept is None:
        return {}
    return {
        key: np.where(written, extra, 0.0)
        for key, extra in attribution.region_sums(
            swept, _rows_for(swept, needed, additive)
        ).items()
    }


def _rows_for(
    weights: attribution.Weights[K],
    needed: NDArray[np.intp],
    rows: NDArray[np.float64],
) -> NDArray[np.float64]:
    """The rows of ``weights.needed()`` out of ``rows`` (one per ``needed`` sample)."""
    return rows[np.searchsorted(needed, weights.needed())]
