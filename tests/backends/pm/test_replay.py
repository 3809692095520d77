"""The pm backend at scale, on a CPU replay of CUPTI PM sampling (``replay.py``).

The real measurement, sampler and runner profile the issue's 12-region cell over
many configs and runs on a replayed GPU with the H200's limits: no cell may fail for
the number of runs, configs or regions it has, no sample may be dropped, and every
run's DRAM bytes, writes included, must be what the replayed kernels moved.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from nsight_lab.backends.pm import collector as pm
from nsight_lab.backends.pm import decoding, pacing
from nsight_lab.backends.pm.metrics import DEFAULT_METRICS, writeback_metric
from nsight_lab.backends.pm.rolling import open_sampler
from nsight_lab.contract.collector import Availability
from nsight_lab.contract.probe import MetricVerdict, ProbeResult
from nsight_lab.options import parse_options
from nsight_lab.plan import make_plan
from nsight_lab.regions import annotate
from nsight_lab.runner import Runner, current_run

from .replay import (
    DRAM_PAIR,
    READ,
    WRITE,
    RegionSpec,
    ReplayActivity,
    ReplayGpu,
    ReplayGpuContext,
    ReplaySampling,
    ReplayTorch,
    VirtualClock,
    transformer_cell,
)

WRITEBACK = writeback_metric(WRITE)

if TYPE_CHECKING:
    from collections.abc import Callable

    from nsight_lab.backends.pm.sampler import PmSampler
    from nsight_lab.contract.records import RunRecord


def _probe(options: Any) -> ProbeResult:
    """The probe on the replayed GH100: every metric is taken, in one pass."""
    extra = options.extra_metrics
    verdict = MetricVerdict(extra, given=True, chosen=extra, where="GH100")
    return ProbeResult(
        backends={"pm": Availability(ok=True, reason="replay")},
        verdicts={"pm": verdict},
    )


@dataclass
class Replay:
    """One replayed device and what a profile on it left."""

    clock: VirtualClock = field(default_factory=VirtualClock)
    activity: ReplayActivity = field(default_factory=ReplayActivity)
    gpu: ReplayGpu = field(init=False)
    apis: list[ReplaySampling] = field(default_factory=list)
    samplers: list[PmSampler] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.gpu = ReplayGpu(self.clock, self.activity)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        torch = ReplayTorch(self.gpu)
        monkeypatch.setattr(pm, "require_cuda", lambda _name: torch)
        monkeypatch.setattr("nsight_lab.backends.cupti.require_cuda", lambda _n: torch)
        monkeypatch.setattr(
            "nsight_lab.backends.cupti.ActivityBuffer", lambda: self.activity
        )
        monkeypatch.setattr(
            "nsight_lab.backends.cupti.GpuContext",
            lambda _torch, _options: ReplayGpuContext(self.gpu),
        )
        monkeypatch.setattr(decoding, "new_cupti_api", self._api)
        monkeypatch.setattr(decoding, "open_sampler", self._open)
        # The quiet spin and the calibration sleep take virtual time.
        monkeypatch.setattr(
            pm.time, "sleep", lambda s: self.clock.advance(s * 1e9), raising=True
        )

    def _api(self, _index: int, metrics: Any) -> ReplaySampling:
        api = ReplaySampling(self.gpu, tuple(metrics), self.clock)
        self.apis.append(api)
        return api

    def _open(self, api: Any, metrics: Any, interval_ns: int, **kw: Any) -> PmSampler:
        sampler = open_sampler(
            api, metrics, interval_ns, clock=self.clock.seconds, **kw
        )
        self.samplers.append(sampler)
        return sampler


@dataclass
class Truth:
    """What each run's regions moved: (config, run, region) -> [read, written]."""

    bytes: dict[tuple[int, int, str], list[float]] = field(default_factory=dict)

    def check(self, records: list[RunRecord], metrics: tuple[str, ...]) -> int:
        """Every timed run's DRAM counters equal the replayed truth; the count."""
        checked = 0
        for record in records:
            read, written = self.bytes[
                (record.config_index, record.run_index, record.annotation)
            ]
            got = dict(record.metrics)
            # What the region wrote: while its kernels ran, and its dirty lines
            # written back in its write-back window, beside it.
            got[WRITE] = got.get(WRITE, 0.0) + got.get(WRITEBACK, 0.0)
            for name, want in ((READ, read), (WRITE, written)):
                if name in metrics:
                    assert got.get(name) == pytest.approx(want, rel=1e-9, abs=1.0), (
                        record.config_index,
                        record.run_index,
                        record.annotation,
                        name,
                    )
            checked += 1
        return checked


def replayed(monkeypatch: pytest.MonkeyPatch) -> tuple[Replay, Truth]:
    """A replayed device installed for the measurement, and an empty truth."""
    replay = Replay()
    replay.install(monkeypatch)
    return replay, Truth()


def cell(  # noqa: PLR0913  (the cell and its perturbations)
    replay: Replay,
    regions: list[RegionSpec],
    truth: Truth,
    *,
    host_ns: float = 250_000,
    stall: Callable[[int], float] | None = None,
    hold_gil_s: float = 0.0,
    between: float = 0.0,
) -> Callable[[dict[str, Any]], None]:
    """The cell body: per region, host work (4,000 regions/s), then its kernels.

    ``stall(call)`` adds host time to a call (a GC pause, a slow Python line);
    ``hold_gil_s`` also spins the real CPU that long per region, holding the GIL;
    ``between`` bytes are written by a kernel of the cell's own before each region
    (an allocation, a copy the user did not annotate).
    """
    calls = [0]

    def body(config: dict[str, Any]) -> None:
        calls[0] += 1
        key = current_run()
        size = 1.0 + 0.25 * (int(config.get("n", 0)) % 4)
        if stall is not None:
            replay.clock.advance(stall(calls[0]))
        for spec in regions:
            replay.clock.advance(host_ns)
            if between:
                replay.gpu.launch("fill", 20_000, 0.0, between)
            if hold_gil_s:
                until = time.perf_counter() + hold_gil_s
                while time.perf_counter() < until:
                    pass
            with annotate(spec.name):
                for duration, reads, writes in spec.kernels:
                    replay.gpu.launch(
                        spec.name, duration * size, reads * size, writes * size
                    )
                    if key is not None and not key.warmup:
                        moved = truth.bytes.setdefault(
                            (key.config_index, key.run_index, spec.name), [0.0, 0.0]
                        )
                        moved[0] += reads * size
                        moved[1] += writes * size

    return body


def profile(
    line: str,
    body: Callable[[dict[str, Any]], None],
) -> tuple[pm.PmMeasurement, list[RunRecord]]:
    """Profile ``body`` with ``--backend pm line`` through the real runner."""
    options = parse_options(f"--backend pm {line}")
    plan = make_plan(options, _probe(options))
    measurement = pm.PmMeasurement(options, plan.metric_verdict)
    batches: list[list[RunRecord]] = []
    try:
        Runner(plan, measurement, 1, batches.append).run(body)
    finally:
        measurement.close()
    return measurement, [r for batch in batches for r in batch]


def test_pacing_keeps_the_backlog_under_half_an_image() -> None:
    assert not pacing.must_collect(
        sampled_s=0.05, queued_s=0.0, next_run_s=0.01, interval_ns=20_000, limit=10_000
    )
    assert pacing.must_collect(
        sampled_s=0.09, queued_s=0.0, next_run_s=0.015, interval_ns=20_000, limit=10_000
    )
    # GPU work still queued counts as sampled time to come.
    assert pacing.must_collect(
        sampled_s=0.01, queued_s=0.09, next_run_s=0.01, interval_ns=20_000, limit=10_000
    )


def test_a_run_too_long_for_the_interval_gets_a_longer_one() -> None:
    choice = pacing.choose_interval(
        floor_ns=20_000, run_s=1.0, regions=12, spins_per_region=3.3,
        per_sample_s=12e-6, limit=10_000, tune=False,
    )  # fmt: skip
    assert choice.reason == "fit"
    # One run (with its margin) fills at most a quarter of the image.
    per_run = 1.0 * pacing.RUN_MARGIN / (choice.interval_ns / 1e9)
    assert per_run <= 10_000 * pacing.RUN_SHARE
    with pytest.raises(pacing.TooLongError, match="--backend ncu"):
        pacing.choose_interval(
            floor_ns=20_000, run_s=100.0, regions=1, spins_per_region=3.3,
            per_sample_s=12e-6, limit=10_000, tune=False,
        )  # fmt: skip


def test_tuning_balances_decode_against_spins_and_never_goes_below_the_floor() -> None:
    tuned = pacing.choose_interval(
        floor_ns=20_000, run_s=0.016, regions=12, spins_per_region=3.3,
        per_sample_s=12e-6, limit=10_000, tune=True,
    )  # fmt: skip
    best = math.sqrt(0.016 * 12e-6 / (12 * 3.3))
    assert tuned.reason == "pace"
    assert tuned.interval_ns == pytest.approx(best * 1e9, abs=1_000)
    kept = pacing.choose_interval(
        floor_ns=20_000, run_s=0.016, regions=12, spins_per_region=3.3,
        per_sample_s=12e-6, limit=10_000, tune=False,
    )  # fmt: skip
    assert kept == pacing.Choice(20_000, "asked")


def configs(n: int) -> str:
    return "--configs " + ",".join(str(i) for i in range(n))


@pytest.mark.parametrize(
    "metrics",
    [DRAM_PAIR, DEFAULT_METRICS],
    ids=["dram-pair", "default-seven"],
)
def test_a_dozen_regions_many_runs_never_fail_drop_or_miscount(
    monkeypatch: pytest.MonkeyPatch, metrics: tuple[str, ...]
) -> None:
    replay, truth = replayed(monkeypatch)
    line = f"--metrics {','.join(metrics)} --runs 50 --warmup 1 {configs(6)}"
    m, records = profile(line, cell(replay, transformer_cell(), truth))
    assert truth.check(records, metrics) == 6 * 50 * 12
    api, sampler = replay.apis[-1], replay.samplers[-1]
    assert api.fills == 0  # no decode ever filled an image
    assert m.lost_runs == 0
    assert sampler.stats.largest_share <= 0.5
    assert sampler.stats.drains > 6  # collected as the backlog asked, not once a config
    assert api.cut_bytes == 0  # the samples a stop cut carried nothing (quiet spins)
    # The bmm's output stays dirty in the L2: its write-back is said beside it.
    bmm = [r for r in records if r.annotation == "bmm_fp16"]
    assert all(r.metrics[WRITEBACK] > 0 for r in bmm)
    assert "PM sampling every" in m.notes[-1]


def test_hundred_configs_by_hundred_runs_of_a_dozen_regions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The issue's scale: 100 configs x 100 runs x 12 regions (120,000 regions)."""
    replay, truth = replayed(monkeypatch)
    line = f"--metrics {','.join(DRAM_PAIR)} --runs 100 --warmup 1 {configs(100)}"
    m, records = profile(line, cell(replay, transformer_cell(), truth))
    assert truth.check(records, DRAM_PAIR) == 100 * 100 * 12
    assert replay.apis[-1].fills == 0
    assert replay.apis[-1].cut_bytes == 0
    assert m.lost_runs == 0
    assert replay.samplers[-1].stats.largest_share <= 0.5


def test_a_busy_main_thread_holding_the_gil_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 250 µs of Python per region that keeps the GIL: 4,000 regions a second.
    replay, truth = replayed(monkeypatch)
    body = cell(replay, transformer_cell(), truth, hold_gil_s=250e-6)
    m, records = profile(f"--metrics {','.join(DRAM_PAIR)} --runs 20", body)
    assert truth.check(records, DRAM_PAIR) == 20 * 12
    assert m.lost_runs == 0


def test_stalls_of_a_run_are_absorbed_by_the_other_half_of_the_image(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every 7th call stalls for 40 ms (a GC pause, a slow line): a run three times
    # longer than the warm-up measured, still within the image's spare half.
    replay, truth = replayed(monkeypatch)
    body = cell(
        replay, transformer_cell(), truth, stall=lambda i: 40e6 if i % 7 == 0 else 0.0
    )
    line = f"--metrics {','.join(DRAM_PAIR)} --sample-interval 20 --runs 60"
    m, records = profile(line, body)
    assert truth.check(records, DRAM_PAIR) == 60 * 12
    assert m.lost_runs == 0
    assert replay.apis[-1].fills == 0


def test_a_warm_up_too_long_for_the_interval_gets_a_longer_one_said_in_the_notes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A 1.2 s run: 60,000 samples at 20 µs, six images. The warm-up's samples are
    # dropped on a fresh session; the timed runs are sampled at a longer interval.
    replay, truth = replayed(monkeypatch)
    long = [RegionSpec("long", ((1.2e9, 4e9, 2e9),))]
    line = f"--metrics {','.join(DRAM_PAIR)} --sample-interval 20 --runs 3"
    m, records = profile(line, cell(replay, long, truth))
    assert truth.check(records, DRAM_PAIR) == 3
    assert m.lost_runs == 0
    assert m.interval_ns > 20_000
    assert any("longer than asked" in n for n in m.notes)
    assert replay.apis[-1].fills == 0


def test_a_run_far_longer_than_its_warm_up_loses_its_counters_not_the_cell(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The 5th call (a timed run) stalls for 2 s: more samples wait than any image
    # holds. Its counters are dropped and said so; the cell completes, and the
    # runs after it are counted right.
    replay, truth = replayed(monkeypatch)
    body = cell(
        replay, transformer_cell(), truth, stall=lambda i: 2e9 if i == 5 else 0.0
    )
    line = f"--metrics {','.join(DRAM_PAIR)} --sample-interval 20 --runs 10"
    m, records = profile(line, body)
    assert m.lost_runs >= 1
    assert any("have no counters" in n for n in m.notes)
    counted = [r for r in records if READ in r.metrics]
    assert truth.check(counted, DRAM_PAIR) == len(counted) >= 12 * (10 - m.lost_runs)
    assert replay.apis[-1].fills == 0


def test_the_cells_own_kernels_between_regions_stay_out_of_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A 48 MB fill before every region: its writes, dirty in the L2 too, are no
    # region's; each region keeps its flush and quiet gap.
    replay, truth = replayed(monkeypatch)
    body = cell(replay, transformer_cell(), truth, between=48 * 2**20)
    m, records = profile(f"--metrics {','.join(DRAM_PAIR)} --runs 20", body)
    assert truth.check(records, DRAM_PAIR) == 20 * 12
    assert m._clean_entry == set()  # noqa: SLF001


def test_without_kernels_between_regions_each_costs_two_quiet_gaps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    replay, truth = replayed(monkeypatch)
    m, records = profile(
        f"--metrics {','.join(DRAM_PAIR)} --runs 20",
        cell(replay, transformer_cell(), truth),
    )
    assert truth.check(records, DRAM_PAIR) == 20 * 12
    assert m._clean_entry == set(range(1, 13))  # noqa: SLF001
    assert m._spins_per_region() == 2  # noqa: SLF001
