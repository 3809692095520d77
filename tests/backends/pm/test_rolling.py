"""The live decode (backends/pm/rolling.py) against the stopped one, on CPU replays.

The recorded H200 samples (``tests/fixtures/pm_samples_h200.json``) decoded live in
pieces give every region the bytes and timeline the stopped path gives; on the
replayed GPU (``replay.py``) both decodes give every run the replayed truth, and the
live one takes less of a GPU-bound run's wall; a live evaluation CUPTI refuses goes
on stopped; an interval the decode cannot keep up with is lengthened.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nsight_lab.backends.pm import pacing
from nsight_lab.backends.pm.attribution import Layout
from nsight_lab.backends.pm.counters import region_counters
from nsight_lab.backends.pm.metrics import DEFAULT_METRICS
from nsight_lab.backends.pm.rolling import PumpStats, RollingSampler
from nsight_lab.backends.pm.sampler import Chunk, PmSampler

from .replay import (
    DRAM_PAIR,
    ReplayActivity,
    ReplayGpu,
    ReplaySampling,
    VirtualClock,
    transformer_cell,
)
from .test_replay import cell, configs, profile, replayed

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "pm_samples_h200.json"


class RecordedImage:
    """An image that hands out recorded samples, ``step`` more at each decode."""

    def __init__(self, api: RecordedApi, capacity: int) -> None:
        self.api, self.capacity, self.used = api, capacity, 0
        self.rows: list[int] = []  # slot -> recorded sample index

    def reinit(self) -> None:
        self.used, self.rows = 0, []

    def decode(self) -> tuple[int, bool]:
        api = self.api
        take = min(api.step, len(api.table) - api.next, self.capacity - self.used)
        self.rows += list(range(api.next, api.next + take))
        api.next += take
        self.used += take
        return self.used, self.used >= self.capacity

    def times(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        rows = self.api.table[self.rows[lo:hi]]
        return rows[:, 0].astype(np.int64), rows[:, 1].astype(np.int64)

    def evaluate(self, index: int) -> np.ndarray:
        return self.api.table[self.rows[index], 2:].copy()

    def evaluate_rows(self, indices: np.ndarray) -> np.ndarray:
        return np.array([self.evaluate(int(i)) for i in indices])

    def close(self) -> None:
        pass


class RecordedApi:
    """A SamplingApi over a recorded batch (nothing is sampled: it is all there)."""

    bytes_per_sample = 3_162

    def __init__(self, table: np.ndarray, step: int) -> None:
        self.table, self.step, self.next = table, step, 0

    def configure(self, interval_ns: int) -> None:
        pass

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def image(self, capacity: int) -> RecordedImage:
        return RecordedImage(self, capacity)

    def disable(self) -> None:
        pass

    def release(self) -> None:
        pass


def recorded_batch() -> tuple[dict[str, Any], dict[str, Any]]:
    if not FIXTURE.exists():  # pragma: no cover - committed
        pytest.skip(f"{FIXTURE.name} is not recorded")
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data, next(b for b in data["batches"] if b["quiet_gaps"])


def layout_of(batch: dict[str, Any]) -> Layout[tuple[int, str]]:
    return Layout(
        regions={
            (r["run"], r["name"]): [tuple(k) for k in r["kernels"]]
            for r in batch["regions"]
        },
        busy=[tuple(k) for k in batch["busy"]],
    )


@pytest.mark.parametrize("step", [1, 7, 40])
def test_recorded_h200_samples_give_every_region_the_same_bytes_live(
    step: int,
) -> None:
    data, batch = recorded_batch()
    metrics = tuple(data["metrics"])
    table = np.array(batch["samples"], dtype=np.float64)
    interval = int(data["interval_ns"])
    # Before: one chunk evaluated as the stopped drain hands it out.
    stopped = Chunk(
        metrics=metrics,
        starts=table[:, 0].astype(np.int64),
        ends=table[:, 1].astype(np.int64),
        _values={i: table[i, 2:] for i in range(len(table))},
    )
    # After: decoded live, ``step`` samples a pump, in pieces across pumps.
    now = [0.0]
    api = RecordedApi(table, step)
    sampler = RollingSampler(api, metrics, interval, clock=lambda: now[0])
    while api.next < len(table):
        now[0] += step * interval / 1e9
        sampler.pump()
    (live,) = sampler.drain()
    assert len(live) == len(table)
    np.testing.assert_array_equal(live.starts, stopped.starts)
    layout = layout_of(batch)
    before = region_counters([stopped], layout, metrics)
    after = region_counters([live], layout, metrics)
    assert before.keys() == after.keys()
    for key, found in before.items():
        assert after[key].values(metrics) == found.values(metrics), key
        assert after[key].packed_series(metrics) == found.packed_series(metrics), key


def rolling(interval_ns: int = 20_000) -> tuple[RollingSampler, ReplaySampling]:
    clock = VirtualClock()
    gpu = ReplayGpu(clock, ReplayActivity())
    api = ReplaySampling(gpu, DRAM_PAIR, clock)
    api.costs.start_stop = 0.0
    return RollingSampler(api, DRAM_PAIR, interval_ns, clock=clock.seconds), api


def test_live_pumps_hand_out_every_sample_once_back_to_back() -> None:
    s, api = rolling()
    gpu = api.gpu
    read = 0.0
    for batch in range(12):
        for _ in range(3 + batch % 4):
            gpu.launch("k", 3_000_000, reads=1e8, writes=5e7)
            gpu.clock.advance(1_000_000)  # the host goes on: pumps while the GPU works
            s.pump()
        gpu.launch("spin", 30_000)
        gpu.synchronize()
        (chunk,) = s.drain(until_ns=gpu.busy_until)
        assert chunk.ends[-1] >= gpu.busy_until
        assert (chunk.starts[1:] == chunk.ends[:-1]).all()  # no gap, no overlap
        read += float(chunk.all_values()[:, 0].sum())
    assert read == pytest.approx(sum(3 + b % 4 for b in range(12)) * 1e8)
    assert api.fills == 0
    assert api.live_decodes > 12
    assert api.starts_since_enable == 1  # never stopped: one start
    assert s.pumped.reinits >= 1  # the image started over, read first


def profiled(
    monkeypatch: pytest.MonkeyPatch, mode: str, line: str, **cell_kw: Any
) -> tuple[Any, list[Any], Any]:
    monkeypatch.setenv("NSIGHT_LAB_PM_DECODE", mode)
    replay, truth = replayed(monkeypatch)
    start = replay.clock.now_ns
    m, records = profile(line, cell(replay, transformer_cell(), truth, **cell_kw))
    assert truth.check(records, m.metrics) == len(records)
    return m, records, (replay, (replay.clock.now_ns - start) / 1e9)


@pytest.mark.parametrize("metrics", [DRAM_PAIR, DEFAULT_METRICS], ids=["pair", "seven"])
def test_live_and_stopped_decodes_give_every_run_the_same_bytes(
    monkeypatch: pytest.MonkeyPatch, metrics: tuple[str, ...]
) -> None:
    line = f"--metrics {','.join(metrics)} --runs 20 --warmup 1 {configs(2)}"
    live_m, live, (replay, _) = profiled(monkeypatch, "live", line)
    assert isinstance(replay.samplers[-1], RollingSampler)
    stopped_m, stopped, _ = profiled(monkeypatch, "stopped", line)
    assert len(live) == len(stopped) == 2 * 20 * 12
    for a, b in zip(live, stopped, strict=True):
        assert (a.config_index, a.run_index, a.annotation) == (
            b.config_index,
            b.run_index,
            b.annotation,
        )
        # The bytes the quiet gaps make exact, and the write-back (the replay's
        # cycles and rates take in the spins, which follow the interval each
        # decode chooses; the host's own times differ).
        counters = {k: v for k, v in b.metrics.items() if "bytes" in k}
        assert DRAM_PAIR[0] in counters
        for name, value in counters.items():
            assert a.metrics[name] == pytest.approx(value, rel=1e-9, abs=1.0), name
    assert live_m.lost_runs == stopped_m.lost_runs == 0


def test_decoding_while_the_gpu_works_costs_a_gpu_bound_run_less(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The marginal (virtual) wall per run, 10 to 40 runs: live well under stopped."""
    walls: dict[str, dict[int, float]] = {}
    for mode in ("live", "stopped"):
        for runs in (10, 40):
            line = f"--metrics {','.join(DRAM_PAIR)} --runs {runs} --warmup 1"
            _, _, (_, wall) = profiled(monkeypatch, mode, line, host_ns=20_000)
            walls.setdefault(mode, {})[runs] = wall
    marginal = {mode: (w[40] - w[10]) / 30 for mode, w in walls.items()}
    assert marginal["live"] < 0.85 * marginal["stopped"], marginal


def test_a_live_evaluation_cupti_refuses_goes_on_stopped_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As on the H200 after a stop and a start on one enabled session: samples
    # decoded live evaluate as invalid metric names.
    start = ReplaySampling.start

    def restarted(api: ReplaySampling) -> None:
        start(api)
        api.starts_since_enable += 1

    monkeypatch.setattr(ReplaySampling, "start", restarted)
    line = f"--metrics {','.join(DRAM_PAIR)} --runs 20 --warmup 1"
    m, records, (replay, _) = profiled(monkeypatch, "live", line)
    assert any("decoded with sampling stopped" in n for n in m.notes)
    assert type(m._sampler) is PmSampler  # noqa: SLF001
    assert m._kept is not None  # noqa: SLF001
    assert not m._kept.live_ok  # noqa: SLF001
    counted = [r for r in records if DRAM_PAIR[0] in r.metrics]
    assert len(counted) >= 12 * (20 - m.lost_runs) > 0
    assert replay.apis[-1].fills == 0


def test_a_decode_slower_than_the_interval_gets_a_longer_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Seven counters: ~80 µs of host time a sample on the replayed H200.
    line = f"--metrics {','.join(DEFAULT_METRICS)} --sample-interval 20 --runs 10"
    m, _, (replay, _) = profiled(monkeypatch, "live", line)
    cost = replay.samplers[-1].pumped.per_sample_s
    assert m.interval_ns >= pacing.KEEP_UP * cost * 1e9 * 0.9
    assert any("keeps up with the sampling" in n for n in m.notes)
    assert replay.apis[-1].fills == 0


def shape(host_ms: float, gpu_ms: float) -> pacing.RunShape:
    return pacing.RunShape(
        host_s=host_ms / 1e3, gpu_s=gpu_ms / 1e3, spin_s=0.5e-3, at_ns=20_000
    )


def test_the_live_interval_is_the_shortest_the_gpu_hides() -> None:
    choose = pacing.choose_live_interval
    common: dict[str, Any] = {"floor_ns": 20_000, "run_s": 0.008, "limit": 10_000}
    # GPU-bound: 2 ms of host, 8 of GPU; 400 samples at 13 µs hide behind it.
    hidden = choose(shape=shape(2, 8), per_sample_s=12e-6, tune=True, **common)
    assert hidden == pacing.Choice(20_000, "asked")
    # Host-bound: a longer interval, where the host's decoding meets the GPU.
    longer = choose(shape=shape(7, 8), per_sample_s=13e-6, tune=True, **common)
    assert longer.reason == "pace"
    assert longer.interval_ns > 20_000
    wall = shape(7, 8).wall_s
    assert wall(longer.interval_ns, 13e-6) < wall(20_000, 13e-6)
    # Given (not tuned): kept, unless the decode could not keep up with it.
    assert choose(shape=shape(7, 8), per_sample_s=13e-6, tune=False, **common) == (
        pacing.Choice(20_000, "asked")
    )
    slow = choose(shape=shape(2, 8), per_sample_s=60e-6, tune=False, **common)
    assert slow == pacing.Choice(90_000, "keep")


def test_a_pumps_fixed_cost_is_told_apart_from_its_cost_per_sample() -> None:
    stats = PumpStats()
    for n in (4, 40, 9, 300, 70, 2, 150, 25, 600, 12):
        stats.add(n, 80e-6 + n * 6e-6)  # a decode call, then 6 µs a sample
    assert stats.per_sample_s == pytest.approx(6e-6)
    assert stats.per_pump_s == pytest.approx(80e-6)
    few = PumpStats()
    few.add(40, 40 * 9e-6)
    assert few.per_sample_s == pytest.approx(9e-6)  # one pump: time over samples
