"""How finely to sample and when to collect: PM sampling's budget, as pure arithmetic.

PM sampling counts every ``interval`` of GPU time while it runs, busy or idle, so the
samples waiting to be decoded grow with the wall time since the last collection, not
with the work done. CUPTI decodes them into an image of at most :data:`MAX_SAMPLES`
samples, and after a decode has filled an image what it decodes next has no
timestamps (``benchmarks/README.md``). So the sampler's backlog must never reach an
image. Two rules make that hold by construction, whatever the cell does:

- **Backpressure** (:func:`must_collect`): at every run boundary, before the next run
  is launched, the measurement collects (synchronizes, stops sampling, decodes, starts
  again) if the samples pending by the end of that run could pass half an image:
  the time sampled since the last start, plus the GPU work still queued, plus one more
  run, with a margin. The other half of the image is the slack for a run that takes
  longer than the ones before it.
- **An interval that fits** (:func:`choose_interval`): one run must fit in a quarter
  of an image (so that the run in flight and the next fit in the half). The warm-up
  run of each config measures a run; a run too long for the interval in use gets a
  longer one, said in the session notes. Only a run that no interval up to
  :data:`MAX_INTERVAL_NS` fits is an error.

Where the user did not fix ``--sample-interval``, the interval also balances the two
costs PM sampling adds to a run: decoding (``run_s * per_sample_s / interval``) and
the DRAM-quiet spins around each region (``spins * regions * interval``, GPU time).
Decoded stopped, the decode is paid while the GPU waits: their sum is least at
``sqrt(run_s * per_sample_s / (spins * regions))`` (:func:`choose_interval`).
Decoded while sampling (:mod:`.rolling`), the decode is host work beside the GPU's: a
run takes the longer of the two, and :func:`choose_live_interval` takes the interval
at which that is least (the shortest where the decode hides behind the GPU).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_SAMPLES = 10_000
"""The most samples one decode takes (``max_samples=100000`` raised ERROR_UNKNOWN)."""
MAX_IMAGE_BYTES = 256 << 20
"""An image's host memory at most (the seven default counters: ~32 KB a sample)."""
LIVE_IMAGE_BYTES = 64 << 20
"""A live decode's image at most (the DRAM pair: 10,000 samples; the seven defaults
~2,100): it is initialised at every start and every time it is half read, at a cost
in proportion to its size (186 ms for 10,000 samples of the seven on the H200)."""
MIN_SAMPLES = 256
"""An image holds at least this many samples."""
RUN_MARGIN = 1.5
"""A run is taken to last this multiple of the longest one measured."""
RUN_SHARE = 0.25
"""One run (with its margin) may fill at most this share of an image."""
MAX_INTERVAL_NS = 10_000_000
"""The longest interval chosen (10 ms): a run of more than ~25 s cannot be sampled."""
ROUND_NS = 1_000
"""Intervals are whole microseconds."""


def capacity(bytes_per_sample: int) -> int:
    """The samples one image may hold for a metric set of ``bytes_per_sample``."""
    by_memory = MAX_IMAGE_BYTES // max(1, bytes_per_sample)
    return max(MIN_SAMPLES, min(MAX_SAMPLES, by_memory))


def live_capacity(bytes_per_sample: int) -> int:
    """The samples a live decode's image holds (:data:`LIVE_IMAGE_BYTES`)."""
    by_memory = LIVE_IMAGE_BYTES // max(1, bytes_per_sample)
    return min(capacity(bytes_per_sample), max(MIN_SAMPLES, by_memory))


def samples_in(seconds: float, interval_ns: int) -> int:
    """Samples taken in ``seconds`` (rounded up, plus the one in progress)."""
    return math.ceil(max(0.0, seconds) * 1e9 / interval_ns) + 1


def image_size(waiting: int, limit: int) -> int:
    """An image's capacity for ``waiting`` samples: room to spare, at most ``limit``."""
    return min(limit, max(MIN_SAMPLES, math.ceil(waiting * 1.25) + 64))


def must_collect(
    *,
    sampled_s: float,
    queued_s: float,
    next_run_s: float,
    interval_ns: int,
    limit: int,
) -> bool:
    """Whether to collect before the next run (see the module doc).

    Args:
        sampled_s: Wall time since sampling last started.
        queued_s: GPU time of the work launched and not finished yet.
        next_run_s: How long the next run is expected to take (with its margin).
        interval_ns: The sampling interval.
        limit: The image's capacity (samples).
    """
    pending = samples_in(sampled_s + queued_s + next_run_s, interval_ns)
    return pending > limit // 2


@dataclass(frozen=True)
class Choice:
    """A sampling interval and why it is that one.

    Attributes:
        interval_ns: The interval.
        reason: ``"asked"`` (the user's or the default, kept), ``"fit"`` (longer, so
            that one run fits), or ``"pace"`` (longer, balancing decode and spins).
    """

    interval_ns: int
    reason: str


class TooLongError(ValueError):
    """A run is too long for PM sampling at any interval."""


def fit_interval(run_s: float, limit: int) -> int:
    """The shortest interval at which one run (with its margin) fits its share."""
    return _round_up(run_s * RUN_MARGIN * 1e9 / (RUN_SHARE * limit))


def choose_interval(  # noqa: PLR0913  (the measured inputs)
    *,
    floor_ns: int,
    run_s: float,
    regions: int,
    spins_per_region: float,
    per_sample_s: float,
    limit: int,
    tune: bool,
) -> Choice:
    """The interval for runs like the one measured (see the module doc).

    Args:
        floor_ns: The interval asked for (``--sample-interval``, or its default).
        run_s: The longest run measured (wall seconds sampled per run).
        regions: Regions per run (at least 1: a cell without regions is one).
        spins_per_region: DRAM-quiet spin intervals launched per region.
        per_sample_s: Host time to decode and evaluate one sample.
        limit: The image's capacity.
        tune: Whether the interval may be longer than ``floor_ns`` to lower the cost
            (False when the user gave ``--sample-interval``).

    Raises:
        TooLongError: No interval up to :data:`MAX_INTERVAL_NS` fits one run.
    """
    fit = fit_interval(run_s, limit)
    if fit > MAX_INTERVAL_NS:
        longest = RUN_SHARE * limit * MAX_INTERVAL_NS / 1e9 / RUN_MARGIN
        msg = (
            f"one run of the cell took {run_s:.3g} s; PM sampling can attribute at "
            f"most {longest:.3g} s a run: profile fewer regions or a smaller config "
            "per cell, or use --backend ncu"
        )
        raise TooLongError(msg)
    chosen = Choice(max(floor_ns, fit), "fit" if fit > floor_ns else "asked")
    if tune and per_sample_s > 0:
        best = math.sqrt(
            run_s * per_sample_s / (max(1, regions) * max(spins_per_region, 1e-9))
        )
        best_ns = min(_round_up(best * 1e9), MAX_INTERVAL_NS)
        if best_ns > chosen.interval_ns:
            chosen = Choice(best_ns, "pace")
    return chosen


@dataclass(frozen=True)
class RunShape:
    """One run as its measured warm-up showed it (the live decode's interval).

    Attributes:
        host_s: Host time to launch it (the cell's Python and the launches).
        gpu_s: GPU time of its kernels (their union: flushes and spins included).
        spin_s: The quiet spins' part of ``gpu_s``.
        at_ns: The interval the spins were sized for.
    """

    host_s: float
    gpu_s: float
    spin_s: float
    at_ns: int

    def wall_s(self, interval_ns: int, per_sample_s: float) -> float:
        """A run's wall at ``interval_ns``: the slower of the GPU and the host.

        The host launches and decodes what is sampled meanwhile, every interval of
        the run's wall, busy or idle (host-bound, its own decoding lengthens the
        run it decodes); the spins scale with the interval.
        """
        gpu = self.gpu_s - self.spin_s + self.spin_s * interval_ns / self.at_ns
        share = per_sample_s * 1e9 / interval_ns  # decode time per sampled second
        if self.host_s + per_sample_s + share * gpu <= gpu:
            return gpu
        return (self.host_s + per_sample_s) / (1 - share) if share < 1 else math.inf


KEEP_UP = 1.5
"""Decoded live, the interval is at least this multiple of a sample's decode cost:
the decode keeps up with sampling whatever the run does."""
GRID_STEP = 1.03
"""The live interval is sought on a grid of this ratio."""
TIE = 1.005
"""Within this factor of the least wall, the shortest interval is taken."""


def choose_live_interval(  # noqa: PLR0913  (the measured inputs)
    *,
    floor_ns: int,
    run_s: float,
    shape: RunShape,
    per_sample_s: float,
    limit: int,
    tune: bool,
) -> Choice:
    """The interval for a live decode of runs like ``shape`` (see the module doc).

    Args:
        floor_ns: The interval asked for (``--sample-interval``, or its default).
        run_s: The longest run's wall (what one run may leave waiting).
        shape: The warm-up run's host and GPU times.
        per_sample_s: Host time to decode and evaluate one sample.
        limit: The image's capacity.
        tune: Whether the interval may be longer than asked, to lower the cost.

    It is never shorter than :data:`KEEP_UP` samples' decode cost (reason
    ``"keep"``).

    Raises:
        TooLongError: No interval up to :data:`MAX_INTERVAL_NS` fits one run.
    """
    kept = choose_interval(
        floor_ns=floor_ns, run_s=run_s, regions=1, spins_per_region=1.0,
        per_sample_s=0.0, limit=limit, tune=False,
    )  # fmt: skip
    keep_up = _round_up(KEEP_UP * per_sample_s * 1e9)
    if keep_up > kept.interval_ns:
        if keep_up > MAX_INTERVAL_NS:
            msg = "decoding a sample takes longer than the longest interval"
            raise TooLongError(msg)
        kept = Choice(keep_up, "keep")
    if not tune or per_sample_s <= 0:
        return kept
    grid = [kept.interval_ns]
    while grid[-1] < MAX_INTERVAL_NS:
        grid.append(min(MAX_INTERVAL_NS, _round_up(grid[-1] * GRID_STEP)))
    walls = [shape.wall_s(ns, per_sample_s) for ns in grid]
    least = min(walls)
    chosen = next(ns for ns, w in zip(grid, walls, strict=True) if w <= least * TIE)
    return kept if chosen == kept.interval_ns else Choice(chosen, "pace")


def _round_up(ns: float) -> int:
    return max(ROUND_NS, math.ceil(ns / ROUND_NS) * ROUND_NS)
