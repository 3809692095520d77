"""A CPU replay of CUPTI PM sampling, with the limits the H200 showed, for CI.

It stands in for the GPU, CUPTI's activity API and CUPTI's PM sampling under the real
:class:`~nsight_lab.backends.pm.collector.PmMeasurement`, its real
:class:`~nsight_lab.backends.pm.sampler.PmSampler` and the real
:class:`~nsight_lab.runner.Runner`:

- **A GPU on a virtual clock.** Kernels run one after another from their launch (or
  when the GPU frees), each moving known DRAM bytes at a constant rate. The host's
  own time (the cell's Python between launches, a stall) and the decode costs below
  advance the same clock, so sample counts follow from time as on the GPU, and a
  loaded CI machine changes nothing.
- **An L2 that keeps dirty lines.** Up to :attr:`ReplayGpu.dirty_max` bytes of what a
  kernel writes stay dirty in the L2 and reach DRAM during the next L2 sweep (the
  flush), as on the H200 (a bmm's 12.6 MB output, a reduction's partial sums).
- **PM sampling as CUPTI does it** (``benchmarks/README.md``, ``FACTS.md``): samples on
  a grid of the interval from each start, idle or busy; the first after a start has no
  start time; the one cut by a stop has no end time; an image holds the capacity it
  was made for (at most 10,000 samples, and its bytes per sample by the metric set);
  after a decode *fills* an image, what is decoded next has zero timestamps and
  counts until PM sampling is enabled again; per-sample costs of making an image,
  decoding, reading timestamps and evaluating (the H200's, on the virtual clock).
- **The truth**: the bytes each region's kernels read and wrote (dirty lines
  included), per run, to check every run's counters against.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

from nsight_lab.backends.cupti import KernelActivity
from nsight_lab.contract.records import Telemetry

if TYPE_CHECKING:
    from collections.abc import Sequence

READ = "dram__bytes_read.sum"
WRITE = "dram__bytes_write.sum"
DRAM_PAIR = (READ, WRITE)
L2_BYTES = 50 * 2**20
SM_MHZ = 1980.0


@dataclass
class VirtualClock:
    """Nanoseconds since an epoch; advanced by the host's work and the GPU's waits."""

    now_ns: int = 1_000_000_000

    def advance(self, ns: float) -> None:
        """Move time on by ``ns``."""
        self.now_ns += max(0, int(ns))

    def seconds(self) -> float:
        """The time in seconds (the sampler's clock)."""
        return self.now_ns / 1e9


@dataclass
class Kernel:
    """One kernel on the replayed GPU."""

    name: str
    start: int
    end: int
    ext: int | None
    corr: int
    reads: float
    writes: float
    """Bytes written to DRAM while it ran (its own and dirty lines it evicted)."""


@dataclass
class Costs:
    """Host time of CUPTI's PM sampling calls, per sample (the H200's)."""

    image: float
    decode: float
    times: float = 0.5e-6
    evaluate: float = 4.7e-6
    start_stop: float = 200e-6

    @staticmethod
    def of(metrics: tuple[str, ...]) -> Costs:
        """The DRAM pair's or a heavier set's (``pm_decode_probe_h200.json``)."""
        if len(metrics) <= 2:
            return Costs(image=2.0e-6, decode=6.5e-6, evaluate=4.7e-6)
        return Costs(image=18.6e-6, decode=42e-6, evaluate=19.6e-6)


def per_bin(
    kernels: Sequence[Kernel], amounts: Sequence[float], edges: np.ndarray
) -> np.ndarray:
    """How much of ``amounts`` (one per kernel) falls in each bin of ``edges``.

    Kernels run one at a time, each spreading its amount evenly over its span: the
    cumulative amount is piecewise linear in time.
    """
    if not kernels:
        return np.zeros(len(edges) - 1)
    times = np.array([t for k in kernels for t in (k.start, k.end)], dtype=np.float64)
    cum = np.concatenate(([0.0], np.cumsum(amounts)))
    at = np.empty(2 * len(kernels))
    at[0::2], at[1::2] = cum[:-1], cum[1:]
    return np.diff(np.interp(edges.astype(np.float64), times, at, left=0.0))


class ReplayGpu:
    """The GPU timeline, the L2's dirty bytes, the truth per external id."""

    launch_ns = 4_000
    """Host time of one launch."""

    def __init__(self, clock: VirtualClock, activity: ReplayActivity) -> None:
        """An idle GPU at ``clock``'s time."""
        self.clock = clock
        self.activity = activity
        self.busy_until = clock.now_ns
        self.dirty = 0.0
        self.dirty_max = 24 * 2**20
        self.kernels: list[Kernel] = []
        self.truth: dict[int, list[float]] = {}
        """External id -> [bytes read, bytes written] by its kernels."""
        self._corr = itertools.count(1)

    def launch(
        self, name: str, duration_ns: float, reads: float = 0.0, writes: float = 0.0
    ) -> Kernel:
        """Launch a kernel that reads and writes these bytes (a sweep if ``flush``)."""
        self.clock.advance(self.launch_ns)
        start = max(self.clock.now_ns, self.busy_until)
        end = start + max(1, int(duration_ns))
        self.busy_until = end
        ext = self.activity.current()
        if name == "flush":  # a read sweep: evicts every dirty line
            dram_writes, self.dirty = self.dirty, 0.0
        else:
            kept = min(writes, max(0.0, self.dirty_max - self.dirty))
            self.dirty += kept
            dram_writes = writes - kept
        kernel = Kernel(name, start, end, ext, next(self._corr), reads, dram_writes)
        self.kernels.append(kernel)
        self.activity.record(kernel)
        if ext is not None and name not in {"flush", "spin"}:
            got = self.truth.setdefault(ext, [0.0, 0.0])
            got[0] += reads
            got[1] += writes
        return kernel

    def synchronize(self) -> None:
        """Wait for the GPU."""
        self.clock.now_ns = max(self.clock.now_ns, self.busy_until)

    def traffic(self, edges: np.ndarray, since: int) -> tuple[np.ndarray, np.ndarray]:
        """Bytes read and written in each ``[edges[i], edges[i+1])`` (kernels run one
        at a time, each at a constant rate: the cumulative bytes are piecewise linear).
        """
        ks = [k for k in self.kernels if k.end > since]
        return (
            per_bin(ks, [k.reads for k in ks], edges),
            per_bin(ks, [k.writes for k in ks], edges),
        )

    def forget_before(self, t: int) -> None:
        """Drop kernels that ended before ``t`` (no later sample can see them)."""
        self.kernels = [k for k in self.kernels if k.end > t]


class ReplayActivity:
    """CUPTI's activity API: the external-id stack, kernel records, the drain."""

    class Kind:
        """``cupti.ExternalCorrelationKind``."""

        CUSTOM2 = "CUSTOM2"

    ExternalCorrelationKind = Kind

    def __init__(self) -> None:
        """No records, no ids pushed."""
        self.stack: list[int] = []
        self.records: list[Kernel] = []

    # the `cupti` module's calls the measurement makes
    def activity_push_external_correlation_id(self, _kind: Any, ext: int) -> None:
        """Push ``ext``."""
        self.stack.append(int(ext))

    def activity_pop_external_correlation_id(self, _kind: Any) -> None:
        """Pop."""
        self.stack.pop()

    def current(self) -> int | None:
        """The id a launch now is tagged with."""
        return self.stack[-1] if self.stack else None

    def record(self, kernel: Kernel) -> None:
        """Keep a kernel's record for the next drain."""
        self.records.append(kernel)

    # an `ActivityBuffer`'s calls
    def load(self) -> ReplayActivity:
        """The `cupti` module: this object."""
        return self

    def start(self) -> None:
        """Nothing to start."""

    def stop(self) -> None:
        """Nothing to stop."""

    def get_timestamp(self) -> int:
        """CUPTI's own clock: nanoseconds (every replayed launch is stamped)."""
        return time.perf_counter_ns()

    def drain(self) -> tuple[list[KernelActivity], dict[int, int], dict[int, Any]]:
        """The kernels since the last drain, their external ids, no API calls.

        Every replayed launch is the measuring thread's own (stamped): the launches of
        other threads are replayed by ``tests/backends/test_causes.py``.
        """
        got, self.records = self.records, []
        kernels = [KernelActivity(k.name, k.start, k.end, k.corr) for k in got]
        return kernels, {k.corr: k.ext for k in got if k.ext is not None}, {}


class ReplayImage:
    """:class:`~nsight_lab.backends.pm.cupti_api.ImageApi` over waiting samples."""

    def __init__(self, api: ReplaySampling, capacity: int) -> None:
        """An initialised image of ``capacity`` samples (initialising costs time)."""
        self.api = api
        self.capacity = capacity
        self.used = 0
        self.starts = np.zeros(capacity, dtype=np.int64)
        self.ends = np.zeros(capacity, dtype=np.int64)
        self.values = np.zeros((capacity, len(api.metrics)))
        self.invalid = np.zeros(capacity, dtype=bool)
        self.closed = False
        self.reinit()

    def reinit(self) -> None:
        """Empty again (CUPTI writes every slot's empty record: time per slot)."""
        self.used = 0
        self.api.inits += 1
        self.api.clock.advance(self.capacity * self.api.costs.image * 1e9)

    def decode(self) -> tuple[int, bool]:
        """Move what waits into the image; a full image breaks what follows.

        While sampling runs, what completed by now waits first (a live decode).
        """
        api = self.api
        if api.running:
            api.emit(api.clock.now_ns, final=False)
            api.live_decodes += 1
        room = self.capacity - self.used
        n = min(room, len(api.waiting_starts))
        if n:
            lo, hi = self.used, self.used + n
            if api.broken:
                self.starts[lo:hi] = 0
                self.ends[lo:hi] = 0
                self.values[lo:hi] = 0.0
            else:
                self.starts[lo:hi] = api.waiting_starts[:n]
                self.ends[lo:hi] = api.waiting_ends[:n]
                self.values[lo:hi] = api.waiting_values[:n]
            # Decoded live after a restart on the same enabled session: on the
            # H200 such samples evaluated as invalid metric names.
            self.invalid[lo:hi] = api.running and api.starts_since_enable > 1
            api.take(n)
            self.used = hi
            api.clock.advance(n * api.costs.decode * 1e9)
        full = self.used >= self.capacity
        if full:
            api.broken = True
            api.fills += 1
        return self.used, full

    def times(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Timestamps of samples lo..hi-1."""
        self.api.clock.advance((hi - lo) * self.api.costs.times * 1e9)
        return self.starts[lo:hi].copy(), self.ends[lo:hi].copy()

    def evaluate(self, index: int) -> np.ndarray:
        """Values of one sample."""
        if self.closed:
            msg = "ERROR_INVALID_PARAMETER: the image was released"
            raise RuntimeError(msg)
        if self.invalid[index]:
            msg = "ERROR_INVALID_METRIC_NAME"
            raise RuntimeError(msg)
        self.api.clock.advance(self.api.costs.evaluate * 1e9)
        self.api.evaluated += 1
        return self.values[index].copy()

    def evaluate_rows(self, indices: np.ndarray) -> np.ndarray:
        """Values of several samples, one row each (as many evaluations)."""
        if self.closed:
            msg = "ERROR_INVALID_PARAMETER: the image was released"
            raise RuntimeError(msg)
        if self.invalid[indices].any():
            msg = "ERROR_INVALID_METRIC_NAME"
            raise RuntimeError(msg)
        self.api.clock.advance(len(indices) * self.api.costs.evaluate * 1e9)
        self.api.evaluated += len(indices)
        return self.values[indices].copy()

    def close(self) -> None:
        """Done with it."""
        self.closed = True


@dataclass
class ReplaySampling:
    """:class:`~nsight_lab.backends.pm.cupti_api.SamplingApi` on the replayed GPU.

    Counts what a session's set-up costs on CUPTI: ``enables``, ``set_configs`` and
    ``config_images`` (made once per api: the kept config image).
    """

    gpu: ReplayGpu
    metrics: tuple[str, ...]
    clock: VirtualClock
    costs: Costs = field(init=False)
    bytes_per_sample: int = 0
    enabled: bool = False
    running: bool = False
    broken: bool = False
    released: bool = False
    interval_ns: int = 20_000
    fills: int = 0
    evaluated: int = 0
    enables: int = 0
    set_configs: int = 0
    config_images: int = 0
    inits: int = 0
    live_decodes: int = 0
    starts_since_enable: int = 0
    cut_bytes: float = 0.0
    """Bytes in samples a stop cut short (the sampler drops those): must stay 0."""
    configured: list[int] = field(default_factory=list)
    waiting_starts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    waiting_ends: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    waiting_values: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    sampled: list[float] = field(default_factory=lambda: [0.0, 0.0])
    """Every byte read and written in a sampled interval (the totals' truth)."""
    _next_edge: int = 0
    _first: bool = False

    def __post_init__(self) -> None:
        """The costs and image size of the metric set."""
        self.costs = Costs.of(self.metrics)
        pair = len(self.metrics) <= 2
        self.bytes_per_sample = 3_162 if pair else 4_540 * len(self.metrics)

    def configure(self, interval_ns: int) -> None:
        """Enable (if not) and set the configuration; the config image made once."""
        if not self.enabled:
            self.enabled, self.broken = True, False
            self.enables += 1
            self.starts_since_enable = 0
            self._clear()
        if not self.config_images:
            self.config_images += 1
        self.set_configs += 1
        self.interval_ns = int(interval_ns)
        self.configured.append(self.interval_ns)

    def start(self) -> None:
        """Sample from now."""
        if not self.enabled or self.running:
            msg = "ERROR_INVALID_OPERATION: not enabled, or started already"
            raise RuntimeError(msg)
        self.clock.advance(self.costs.start_stop * 1e9 / 2)
        self._next_edge = self.clock.now_ns
        self._first = True
        self.running = True
        self.starts_since_enable += 1

    def stop(self) -> None:
        """Stop: the samples since the start wait to be decoded."""
        self.clock.advance(self.costs.start_stop * 1e9 / 2)
        self.emit(self.clock.now_ns, final=True)
        self.running = False

    def emit(self, until: int, *, final: bool) -> None:
        """The samples completed by ``until`` wait (``final``: the cut one too)."""
        first = self._next_edge
        edges = np.arange(first, until + 1, self.interval_ns, dtype=np.int64)
        cut = final and edges[-1] < until
        if cut:
            edges = np.append(edges, until)
        if len(edges) < 2:  # no whole sample yet
            return
        reads, writes = self.gpu.traffic(edges, first)
        self.sampled[0] += float(reads.sum())
        self.sampled[1] += float(writes.sum())
        starts, ends = edges[:-1].copy(), edges[1:].copy()
        if self._first:
            starts[0] = 0  # the first sample after a start has no start time
            self._first = False
        if cut:
            ends[-1] = 0  # cut by the stop: no end time
            self.cut_bytes += float(reads[-1] + writes[-1])
        values = np.zeros((len(starts), len(self.metrics)))
        busy = self._busy(edges)
        for j, name in enumerate(self.metrics):
            if "read" in name:
                values[:, j] = reads
            elif "write" in name:
                values[:, j] = writes
            elif name.startswith("lts__"):
                values[:, j] = reads + writes
            elif "cycles" in name:
                values[:, j] = busy * SM_MHZ / 1e3
        self.waiting_starts = np.concatenate((self.waiting_starts, starts))
        self.waiting_ends = np.concatenate((self.waiting_ends, ends))
        self.waiting_values = (
            values
            if len(self.waiting_values) == 0
            else np.concatenate((self.waiting_values, values))
        )
        self._next_edge = int(edges[-1])
        self.gpu.forget_before(self._next_edge)

    def _busy(self, edges: np.ndarray) -> np.ndarray:
        ks = [k for k in self.gpu.kernels if k.end > edges[0]]
        return per_bin(ks, [k.end - k.start for k in ks], edges)

    def image(self, capacity: int) -> ReplayImage:
        """A new image (CUPTI takes at most 10,000 samples)."""
        if capacity > 10_000:
            msg = "ERROR_UNKNOWN: max_samples above 10,000"
            raise RuntimeError(msg)
        return ReplayImage(self, capacity)

    def take(self, n: int) -> None:
        """``n`` waiting samples were decoded."""
        self.waiting_starts = self.waiting_starts[n:]
        self.waiting_ends = self.waiting_ends[n:]
        self.waiting_values = self.waiting_values[n:]

    def disable(self) -> None:
        """Disable: what waits is dropped."""
        self.enabled = self.running = False
        self._clear()

    def release(self) -> None:
        """Disable; the kept parts are freed."""
        self.disable()
        self.released = True

    def _clear(self) -> None:
        self.waiting_starts = np.zeros(0, np.int64)
        self.waiting_ends = np.zeros(0, np.int64)
        self.waiting_values = np.zeros((0, len(self.metrics)))


class ReplayEvent:
    """``torch.cuda.Event``: done once the GPU is past where it was recorded."""

    def __init__(self, gpu: ReplayGpu) -> None:
        """Not recorded yet."""
        self.gpu = gpu
        self.at = 0

    def record(self) -> None:
        """Record at the end of the work launched so far."""
        self.at = self.gpu.busy_until

    def query(self) -> bool:
        """Whether the GPU got there."""
        return self.gpu.clock.now_ns >= self.at


class ReplayTorch:
    """The parts of ``torch`` the pm measurement calls."""

    def __init__(self, gpu: ReplayGpu) -> None:
        """``torch.cuda`` on the replayed GPU."""
        outer = gpu

        class Cuda:
            @staticmethod
            def _sleep(cycles: int) -> None:
                outer.launch("spin", cycles / SM_MHZ * 1e3)

            @staticmethod
            def synchronize() -> None:
                outer.synchronize()

            @staticmethod
            def Event() -> ReplayEvent:  # noqa: N802  (torch's name)
                return ReplayEvent(outer)

        self.cuda = Cuda()
        self.autograd = SimpleNamespace(
            profiler=SimpleNamespace(_is_profiler_enabled=False)
        )


class ReplayGpuContext:
    """:class:`~nsight_lab.backends.gpu.GpuContext` on the replayed GPU."""

    max_sm_clock_mhz = SM_MHZ
    name = "NVIDIA H200 (replay)"
    device = 0

    def __init__(self, gpu: ReplayGpu) -> None:
        """A flush that sweeps twice the L2."""
        self.gpu = gpu
        self.notes: list[str] = []

    def flush_l2(self) -> None:
        """Read twice the L2 (~25 µs on an H200): dirty lines are written back."""
        self.gpu.launch("flush", 25_000, reads=2 * L2_BYTES)

    def telemetry(self) -> Telemetry:
        """No NVML here."""
        return Telemetry()

    def thermal_wait(self, _on_wait: Any) -> float:
        """Never waits."""
        return 0.0

    def close(self) -> None:
        """Nothing held."""


@dataclass(frozen=True)
class RegionSpec:
    """One region of the replayed cell: its kernels' (ns, bytes read, bytes written)."""

    name: str
    kernels: tuple[tuple[float, float, float], ...]


def transformer_cell(scale: float = 1.0) -> list[RegionSpec]:
    """The issue's 12-region cell, with H200-like times and bytes (``scale`` sizes)."""
    mb = 2**20 * scale
    us = 1_000 * scale
    return [
        RegionSpec("mul", ((128 * us, 256 * mb, 256 * mb),)),
        RegionSpec("addcmul", ((125 * us, 384 * mb, 128 * mb),)),
        RegionSpec(
            "a_plus_b_mul_c",
            ((65 * us, 256 * mb, 128 * mb), (95 * us, 256 * mb, 128 * mb)),
        ),
        RegionSpec("softmax", ((108 * us, 128 * mb, 128 * mb),)),
        RegionSpec("layernorm", ((70 * us, 128 * mb, 128 * mb),)),
        RegionSpec("matmul_bf16", ((340 * us, 96 * mb, 32 * mb),)),
        RegionSpec("matmul_fp32", ((900 * us, 192 * mb, 64 * mb),)),
        RegionSpec("transpose_copy", ((242 * us, 512 * mb, 512 * mb),)),
        RegionSpec("sum", ((68 * us, 256 * mb, 2.5 * mb),)),
        RegionSpec("cumsum", ((140 * us, 256 * mb, 256 * mb),)),
        RegionSpec("tiny_add", ((4 * us, 0.19 * mb, 0.06 * mb),)),
        RegionSpec("bmm_fp16", ((160 * us, 40 * mb, 12.6 * mb),)),
    ]
