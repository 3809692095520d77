# ruff: noqa: SLF001  (a measurement is built around fakes: its private state is set)
"""The pm collector without a GPU: its quiet gaps, counters, series, probe and plan.

A :class:`PmMeasurement` is built around fakes (CUPTI's activity calls, torch's spin
kernel, the GPU context, a sampler that hands out prepared chunks); the kernels and
samples of a batch are written here with known byte rates, so each region's counters
are known numbers.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pytest

from nsight_lab.backends.causes import Causes, RegionTimeline
from nsight_lab.backends.clock import CuptiClock
from nsight_lab.backends.cupti import (
    IDS_PER_RUN,
    ActivityBuffer,
    KernelActivity,
    PendingRun,
)
from nsight_lab.backends.pm import availability, decoding, errors, interval
from nsight_lab.backends.pm import backend as pm_backend
from nsight_lab.backends.pm import collector as pm
from nsight_lab.backends.pm.attribution import covered, merge_spans
from nsight_lab.backends.pm.metrics import DEFAULT_OPTION_METRICS
from nsight_lab.backends.pm.sampler import Chunk
from nsight_lab.backends.pm.series import unpack
from nsight_lab.contract.collector import Availability, RunKey
from nsight_lab.contract.probe import MetricVerdict, ProbeResult
from nsight_lab.contract.registry import registered
from nsight_lab.errors import BackendUnavailableError, PlanError
from nsight_lab.options import parse_options
from nsight_lab.plan import make_plan
from nsight_lab.regions import CELL_REGION

US = 1_000
METRICS = (
    "dram__bytes_read.sum",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
)


@dataclass
class Calls:
    log: list[str] = field(default_factory=list)


class FakeCupti:
    def __init__(self, calls: Calls) -> None:
        self.calls = calls

    def activity_push_external_correlation_id(self, _kind: Any, ext: int) -> None:
        self.calls.log.append(f"push {ext}")

    def activity_pop_external_correlation_id(self, _kind: Any) -> None:
        self.calls.log.append("pop")

    def get_timestamp(self) -> int:
        self.clock = getattr(self, "clock", 0) + 1_000
        return self.clock


class FakeGpu:
    def __init__(self, calls: Calls) -> None:
        self.calls = calls

    def flush_l2(self) -> None:
        self.calls.log.append("flush")

    def telemetry(self) -> Any:
        from nsight_lab.contract.records import Telemetry

        return Telemetry()


class FakeTorch:
    def __init__(self, calls: Calls) -> None:
        self.calls = calls
        outer = self

        class CudaEvent:
            def record(self) -> None:
                outer.calls.log.append("event")

            def query(self) -> bool:
                return True

        class Cuda:
            @staticmethod
            def _sleep(cycles: int) -> None:
                outer.calls.log.append(f"spin {cycles}")

            Event = CudaEvent

            @staticmethod
            def synchronize() -> None:
                outer.calls.log.append("synchronize")

        self.cuda = Cuda()


class FakeSampler:
    limit = 10_000
    interval_ns = 20 * US
    live = False

    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks = chunks
        self.closed = False
        self.drains = 0

    def sampled_s(self) -> float:
        return 0.001

    def reconfigure(self, interval_ns: int) -> None:
        self.interval_ns = interval_ns

    def drain(self, until_ns: int | None = None) -> list[Chunk]:  # noqa: ARG002
        self.drains += 1
        chunks, self.chunks = self.chunks, []
        return chunks

    def close(self) -> None:
        self.closed = True


def measurement(
    calls: Calls | None = None, metrics: tuple[str, ...] = METRICS
) -> pm.PmMeasurement:
    calls = calls or Calls()
    m = pm.PmMeasurement.__new__(pm.PmMeasurement)
    m._torch = FakeTorch(calls)
    m._cupti = FakeCupti(calls)
    m._activity = ActivityBuffer()
    m._gpu = FakeGpu(calls)
    m._kind = "CUSTOM2"
    m._combine = "sum"
    m._seq = 0
    m._depth = 0
    m._timeline = RegionTimeline()
    m._clock = CuptiClock(time.perf_counter_ns)  # CUPTI's own: 1 tick per ns
    m._opened_ns = 0
    m._current = None
    m._pending = []
    m._last_flush = 0.0
    m._setup()
    m._quiet_cycles = 44_000
    m._max_clock_mhz = 1980.0
    m._chip = "GH100"
    m.metrics = metrics
    m.interval_ns = 20 * US
    m.notes = []
    return m


def test_each_region_gets_a_flush_and_a_quiet_spin_on_each_side() -> None:
    calls = Calls()
    m = measurement(calls)
    m.begin_run(RunKey(0, 0))  # first run: the cell's shape is not known yet
    m.enter_region("a")
    m.exit_region("a")
    m.enter_region("b")
    m.exit_region("b")
    m.end_run(0.0)
    run_id = 1 * IDS_PER_RUN
    wb = run_id + pm.WRITEBACK_SLOT
    quiet = [f"push {pm.QUIET_EXTERNAL_ID}", "spin 44000", "pop"]
    # After each region its write-back sweep, tagged as the region's, between spins.
    flush = [f"push {pm.FLUSH_EXTERNAL_ID}", "flush", "pop"]
    assert calls.log == [
        "flush", *quiet, f"push {run_id}",  # before the run (shape unknown)
        *flush, *quiet, f"push {run_id + 1}", "pop",  # region a
        *quiet, f"push {wb + 1}", "flush", "pop", *quiet,  # a's write-back window
        *flush, *quiet, f"push {run_id + 2}", "pop",  # region b
        *quiet, f"push {wb + 2}", "flush", "pop", *quiet,  # b's write-back window
        "pop", "event",
    ]  # fmt: skip
    calls.log.clear()
    m.begin_run(RunKey(0, 1))  # the cell has regions: no span of its own
    assert calls.log == [f"push {2 * IDS_PER_RUN}"]
    # Where the cell launches nothing before a region, its write-back window before
    # it stands for its flush and gap.
    m._clean_entry = {2}
    calls.log.clear()
    m.enter_region("a")
    m.exit_region("a")
    m.enter_region("b")
    assert calls.log.count("flush") == 2  # a's flush and a's write-back sweep only


def test_a_cell_without_regions_is_one_quiet_delimited_span() -> None:
    calls = Calls()
    m = measurement(calls)
    m.begin_run(RunKey(0, 0))
    m.end_run(0.0)
    quiet = [f"push {pm.QUIET_EXTERNAL_ID}", "spin 44000", "pop"]
    wb = IDS_PER_RUN + pm.WRITEBACK_SLOT
    assert calls.log == [
        "flush", *quiet, f"push {IDS_PER_RUN}", "pop",
        *quiet, f"push {wb}", "flush", "pop", *quiet, "event",
    ]  # fmt: skip


def kernel(name: str, start: int, end: int, corr: int) -> KernelActivity:
    return KernelActivity(name=name, start_ns=start, end_ns=end, correlation_id=corr)


def batch() -> tuple[list[KernelActivity], dict[int, int], list[PendingRun], Chunk]:
    """Two runs of a cell with regions 'copy' (3 B/ns, 100 µs) and 'tiny' (1 B/ns,
    8 µs), each after a flush (4 B/ns) and between quiet spins; samples of 20 µs.
    The tensor pipe is 50 % busy in 'copy' (a rate), warps 70 % active (a ratio)."""
    kernels: list[KernelActivity] = []
    ext: dict[int, int] = {}
    rates: list[tuple[int, int, float]] = []
    runs = []
    corr = 0
    t = 0

    def launch(name: str, length: int, tag: int | None, rate: float) -> None:
        nonlocal corr, t
        corr += 1
        kernels.append(kernel(name, t, t + length, corr))
        if tag is not None:
            ext[corr] = tag
        rates.append((t, t + length, rate))
        t += length

    for seq in (1, 2):
        base = seq * IDS_PER_RUN
        runs.append(
            PendingRun(key=RunKey(0, seq - 1), seq=seq, regions=["copy", "tiny"])
        )
        for slot, (name, length, rate) in enumerate(
            [("copy", 100 * US, 3.0), ("tiny", 8 * US, 1.0)], start=1
        ):
            launch("flush", 25 * US, base, 4.0)
            launch("spin", 22 * US, pm.QUIET_EXTERNAL_ID, 0.0)
            launch(name, length, base + slot, rate)
            launch("spin", 22 * US, pm.QUIET_EXTERNAL_ID, 0.0)
    starts = np.arange(-5 * US, t + 20 * US, 20 * US)
    ends = starts + 20 * US
    dram = np.zeros(len(starts))
    tensor_ns = np.zeros(len(starts))
    for start, end, rate in rates:
        span = covered(merge_spans([(start, end)]), starts, ends)
        dram += rate * span
        if rate == 3.0:  # the copy region's tensor pipe: 50 % of its time
            tensor_ns += 0.5 * span
    values = np.stack(
        [dram, 100.0 * tensor_ns / (ends - starts), np.full(len(starts), 70.0)], axis=1
    )
    chunk = Chunk(
        metrics=METRICS,
        starts=starts.astype(np.int64),
        ends=ends.astype(np.int64),
        _data=Evaluates(values),  # type: ignore[arg-type]
    )
    return kernels, ext, runs, chunk


class Evaluates:
    """Stands in for CUPTI's CounterData: a sample's values when asked for."""

    def __init__(self, values: np.ndarray) -> None:
        self.table = values

    def __getitem__(self, index: int) -> Any:
        return type("Sample", (), {"metric_values": list(self.table[index])})()


def test_counters_per_region_and_run_are_the_known_numbers() -> None:
    kernels, ext, runs, chunk = batch()
    m = measurement()
    m._sampler = FakeSampler([chunk])
    first, second = m._timings(Causes(kernels, ext, {}), runs)
    for timing in (first, second):
        assert timing.regions == {"copy": 100.0 * US, "tiny": 8.0 * US}
        copy, tiny = timing.counters["copy"], timing.counters["tiny"]
        assert copy["dram__bytes_read.sum"] == pytest.approx(3.0 * 100 * US)
        assert tiny["dram__bytes_read.sum"] == pytest.approx(1.0 * 8 * US)
        # A rate over the region's kernel time, not diluted by quiet or idle time.
        pct = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
        assert copy[pct] == pytest.approx(50.0)
        assert tiny[pct] == pytest.approx(0.0)
        assert copy["sm__warps_active.avg.pct_of_peak_sustained_active"] == 70.0
        series = unpack(timing.series["copy"])
        assert series.units == ("GB/s", "%", "%")
        assert min(series.t_us) >= 0.0
        assert max(series.t_us) <= 100.0
        # While the copy ran it moved 3 bytes/ns: 3 GB/s at every point.
        assert set(np.round(series.values[0], 3)) == {3.0}


def test_a_dirty_write_back_in_the_regions_sweep_is_its_write_and_only_that() -> None:
    # 'sum' reads 300 B and leaves 50 B dirty in the L2; its write-back sweep reads
    # 900 B (its own traffic) and writes the 50 B back. Samples of 20 µs.
    metrics = ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum")
    m = measurement(metrics=metrics)
    run = PendingRun(key=RunKey(0, 0), seq=1, regions=["sum"])
    base = IDS_PER_RUN
    kernels = [
        kernel("sum", 0, 40 * US, 1),
        kernel("spin", 40 * US, 62 * US, 2),
        kernel("flush", 62 * US, 82 * US, 3),
        kernel("spin", 82 * US, 104 * US, 4),
    ]
    ext = {1: base + 1, 2: pm.QUIET_EXTERNAL_ID, 3: base + pm.WRITEBACK_SLOT + 1, 4: 1}
    starts = np.arange(0, 120 * US, 20 * US)
    values = np.array(
        [[150, 0, 150], [150, 0, 150], [0, 0, 0], [0, 0, 0], [900, 50, 950], [0, 0, 0]],
        dtype=float,
    )
    chunk = Chunk(
        metrics=metrics, starts=starts, ends=starts + 20 * US,
        _values=dict(enumerate(values)),
    )  # fmt: skip
    m._sampler = FakeSampler([chunk])
    (timing,) = m._timings(Causes(kernels, ext, {}), [run])
    assert timing.counters["sum"] == {
        "dram__bytes_read.sum": 300.0,  # the sweep's reads are not the region's
        "dram__bytes_write.sum": 0.0,  # written while its kernels ran, as ncu counts
        "dram__bytes_write.sum.writeback": 50.0,  # its dirty lines, beside it
        "lts__t_bytes.sum": 300.0,
    }


def test_regions_entered_with_nothing_of_the_cells_before_them_are_learned() -> None:
    m = measurement()
    base = IDS_PER_RUN
    run = PendingRun(key=RunKey(0, 0, warmup=True), seq=1, regions=["a", "b", "c"])
    kernels = [
        kernel("flush", 0, 10, 1),
        kernel("a", 20, 30, 2),
        kernel("wb", 40, 50, 3),
        kernel("b", 60, 70, 4),
        kernel("alloc", 80, 85, 5),  # the cell's own kernel, between b and c
        kernel("c", 90, 95, 6),
    ]
    ext = {1: pm.FLUSH_EXTERNAL_ID, 2: base + 1, 3: base + pm.WRITEBACK_SLOT + 1,
           4: base + 2, 5: base, 6: base + 3}  # fmt: skip
    m._learn_entries(kernels, ext, [run])
    assert m._clean_entry == {1, 2}
    # A later run with the cell's kernel before 'a': 'a' gets its flush back.
    later = PendingRun(key=RunKey(0, 0), seq=2, regions=["a"])
    m._learn_entries(
        [kernel("x", 0, 5, 7), kernel("a", 10, 20, 8)],
        {7: 2 * base, 8: 2 * base + 1},
        [later],
    )
    assert m._clean_entry == {2}
    assert "before region 'a'" in m.notes[-1]


def test_the_first_run_of_each_config_is_collected_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = Calls()
    m = measurement(calls)
    sampler = FakeSampler([])
    m._sampler = sampler
    drained = [0]
    monkeypatch.setattr(m._activity, "drain", lambda: drained.append(1) or ([], {}, {}))
    for config in (0, 1):
        m.begin_run(RunKey(config, 0, warmup=True))
        assert m._sizing == RunKey(config, 0, warmup=True)
        m.end_run(0.0)
        m.completed(wait=False)  # not due, but the first run of a config
        assert m._sizing is None
        assert config in m._run_s
        m.begin_run(RunKey(config, 0))
        assert m._sizing is None  # the config's later runs are not
        m.end_run(0.0)
        m.completed(wait=True)
    assert sampler.drains == 4


def test_a_collection_comes_before_the_backlog_could_pass_half_an_image() -> None:
    m = measurement()
    sampler = FakeSampler([])
    m._sampler = sampler
    m._run_s = {0: 0.004}
    m._pending = [PendingRun(key=RunKey(0, 0), seq=1)]
    sampler.sampled_s = lambda: 0.05  # type: ignore[method-assign]
    assert not m._backlog_full()  # 2,500 + 300 samples of 10,000: not yet
    sampler.sampled_s = lambda: 0.094  # type: ignore[method-assign]
    assert m._backlog_full()  # 4,700 + 300 more would pass 5,000


def test_the_whole_cell_is_one_region_when_it_has_none() -> None:
    m = measurement(metrics=("dram__bytes_read.sum",))
    run = PendingRun(key=RunKey(0, 0), seq=1)
    kernels = [kernel("k", 100 * US, 150 * US, 1), kernel("flush", 0, 30 * US, 2)]
    ext = {1: IDS_PER_RUN}
    chunk = Chunk(
        metrics=("dram__bytes_read.sum",),
        starts=np.array([0, 60 * US, 120 * US]),
        ends=np.array([60 * US, 120 * US, 180 * US]),
        _values={0: np.array([7.0]), 1: np.array([5.0]), 2: np.array([6.0])},
    )
    m._sampler = FakeSampler([chunk])
    (timing,) = m._timings(Causes(kernels, ext, {}), [run])
    assert timing.counters == {CELL_REGION: {"dram__bytes_read.sum": 11.0}}
    assert CELL_REGION in timing.series


def test_without_quiet_gaps_no_spin_is_launched() -> None:
    calls = Calls()
    m = measurement(calls)
    m.quiet_gaps = False
    m.begin_run(RunKey(0, 0))
    m.enter_region("a")
    m.exit_region("a")
    m.end_run(0.0)
    assert not any(c.startswith("spin") for c in calls.log)


def test_the_host_cost_is_counted() -> None:
    kernels, ext, runs, chunk = batch()
    m = measurement()
    m._sampler = FakeSampler([chunk])
    m._timings(Causes(kernels, ext, {}), runs)
    assert m.cost.drains == 1
    assert m.cost.samples_decoded == len(chunk)
    # Only the samples that overlap a region were needed (not the flush-only ones).
    assert 0 < m.cost.samples_evaluated < len(chunk)


def test_raw_batches_keep_what_a_fixture_needs() -> None:
    kernels, ext, runs, chunk = batch()
    m = measurement()
    m._sampler = FakeSampler([chunk])
    m.keep_raw = True
    m._timings(Causes(kernels, ext, {}), runs)
    (raw,) = m.raw
    assert [r[:2] for r in raw.writeback] == [r[:2] for r in raw.regions]
    assert raw.metrics == list(METRICS)
    assert len(raw.samples) == len(chunk)
    assert [r[:2] for r in raw.regions] == [
        (1, "copy"),
        (1, "tiny"),
        (2, "copy"),
        (2, "tiny"),
    ]
    assert len(raw.quiet) == 8
    assert len(raw.busy) == 4  # the flushes


def test_close_stops_sampling_even_when_cupti_fails() -> None:
    m = measurement()
    sampler = FakeSampler([])
    m._sampler = sampler
    with pytest.raises(AttributeError):
        m.close()  # the fakes have no CUPTI activity to stop
    assert sampler.closed


# ------------------------------------------------------------------ probe and plan


def test_probe_without_cupti_python_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pm_backend, "cupti_version", lambda: None)
    found = pm_backend.PmBackend().probe()
    assert not found.ok
    assert found.reason == "cupti-python is not installed"
    assert "pip install 'nsight-lab[pm]'" in found.hint


def test_probe_with_an_old_cupti_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pm_backend, "cupti_version", lambda: "13.0.2")
    found = pm_backend.PmBackend().probe()
    assert not found.ok
    assert "predates PM sampling" in found.reason


def test_probe_without_counter_permission_says_what_to_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nsight_lab.gpu import stack

    monkeypatch.setattr(pm_backend, "cupti_version", lambda: "13.4.0")
    monkeypatch.setattr(pm_backend, "require_cuda", lambda _: None)
    monkeypatch.setattr(
        stack, "counter_permission", lambda: stack.StackStatus(ok=False, detail="")
    )
    found = pm_backend.PmBackend().probe()
    assert not found.ok
    assert "ERR_NVGPUCTRPERM" in found.reason
    assert found.hint == errors.PERMISSION


def test_probe_that_can_run_asks_about_metrics_lazily(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nsight_lab.gpu import stack

    monkeypatch.setattr(pm_backend, "cupti_version", lambda: "13.4.0")
    monkeypatch.setattr(pm_backend, "require_cuda", lambda _: None)
    monkeypatch.setattr(
        stack, "counter_permission", lambda: stack.StackStatus(ok=True, detail="")
    )
    found = pm_backend.PmBackend().probe()
    assert found.ok
    assert found.reason.startswith("CUPTI PM sampling")


def test_the_verdict_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_gpu(_: str) -> None:
        msg = "backend 'pm' is unavailable: no CUDA GPU visible"
        raise BackendUnavailableError(msg)

    monkeypatch.setattr(availability, "require_cuda", no_gpu)
    asked = ("dram__bytes_read.sum",)
    given = availability.PmChecks().verdict(asked, given=True)
    assert given.refused == "backend 'pm' is unavailable: no CUDA GPU visible"
    defaults = availability.PmChecks().verdict(asked, given=False)
    assert defaults.refused is None
    assert defaults.chosen == asked
    assert defaults.unchecked == (
        "BackendUnavailableError: backend 'pm' is unavailable: no CUDA GPU visible"
    )


def pm_probe(refused: str | None, asked: tuple[str, ...]) -> ProbeResult:
    verdict = MetricVerdict(asked, given=True, refused=refused, chosen=asked)
    return ProbeResult(
        backends={**PROBES, "pm": Availability(ok=True, reason="pm")},
        verdicts={"pm": verdict},
    )


OK = Availability(ok=True, reason="here")
PROBES = {"cpu": OK, "events": OK, "cupti": OK, "ncu": OK}


def test_auto_takes_pm_for_metrics_it_can_sample() -> None:
    probe = pm_probe(None, ("dram__bytes_read.sum",))
    plan = make_plan(parse_options("--metrics dram__bytes_read.sum"), probe)
    assert plan.backend == "pm"
    assert plan.backend_reason == (
        "metrics dram__bytes_read.sum are PM-sampled in this process (CUPTI)"
    )
    assert plan.metric_verdict is probe.verdicts["pm"]  # the collector's choice


def test_auto_keeps_ncu_and_says_why_pm_could_not() -> None:
    refusal = "--metrics: PM sampling on GH100 (NVIDIA H200) cannot sample x__y.sum"
    plan = make_plan(
        parse_options("--metrics x__y.sum"), pm_probe(refusal, ("x__y.sum",))
    )
    assert plan.backend == "ncu"
    assert plan.backend_reason.endswith(f"not PM sampling: {refusal}")
    assert plan.metric_verdict is None  # ncu checks nothing ahead
    probes = {
        **PROBES,
        "pm": Availability(ok=False, reason="GPU performance counters need permission"),
    }
    plan = make_plan(parse_options("--metrics x__y.sum"), probes)
    assert plan.backend_reason.endswith(
        "not PM sampling: GPU performance counters need permission"
    )


def test_pm_by_name_refuses_metrics_it_cannot_take_in_one_line() -> None:
    refusal = "--metrics: these 9 metrics need 2 passes ... fit together: a,b | c"
    with pytest.raises(PlanError) as caught:
        make_plan(
            parse_options("--backend pm --metrics a__b.sum"),
            pm_probe(refusal, ("a__b.sum",)),
        )
    assert str(caught.value) == refusal


def test_pm_by_name_without_metrics_samples_the_defaults() -> None:
    from nsight_lab.backends.probe import metrics_to_check

    options = parse_options("--backend pm")
    assert metrics_to_check(options) == (DEFAULT_OPTION_METRICS[1:], False)
    trimmed = MetricVerdict(
        DEFAULT_OPTION_METRICS[1:], given=False, chosen=DEFAULT_OPTION_METRICS[1:3]
    )
    probe = ProbeResult(
        backends={**PROBES, "pm": Availability(ok=True, reason="pm")},
        verdicts={"pm": trimmed},
    )
    plan = make_plan(options, probe)
    assert plan.options.metrics == DEFAULT_OPTION_METRICS
    assert plan.metric_verdict is trimmed  # the defaults that fit, chosen by the probe
    entry = next(e for e in registered() if e.id == "pm")
    assert entry.counters
    assert not entry.isolated
    assert entry.auto_order is not None


class Host:
    chip = "GH100"

    def __init__(self, per_pass: int, refused: frozenset[str] = frozenset()) -> None:
        self.per_pass, self.refused = per_pass, refused

    def passes(self, metrics: Any) -> int:
        if set(metrics) & self.refused:
            msg = "invalid or not supported"
            raise ValueError(msg)
        return -(-len(metrics) // self.per_pass)

    def names(self) -> list[str]:
        return []


def verdict(host: Any, options: Any) -> MetricVerdict:
    """The prober's verdict on ``options``' metrics with ``host`` as the host API."""
    from nsight_lab.backends.pm.metrics import MetricCheck
    from nsight_lab.backends.probe import metrics_to_check

    checks = availability.PmChecks()
    checks.startable[0] = None

    def check(_torch: Any, _index: int) -> Any:
        if isinstance(host, Exception):
            raise host
        return MetricCheck("NVIDIA H200", host)

    checks.check = check  # type: ignore[method-assign]
    torch = type("T", (), {"cuda": type("C", (), {"current_device": lambda: 0})})
    wanted, given = metrics_to_check(options)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(availability, "require_cuda", lambda _: torch)
        return checks.verdict(wanted, given=given)


def test_the_defaults_are_trimmed_to_one_pass_and_the_rest_noted() -> None:
    host = Host(per_pass=3, refused=frozenset({"pcie__read_bytes.sum"}))
    m = measurement()
    planned = replace(parse_options("--backend pm"), metrics=DEFAULT_OPTION_METRICS)
    chosen, chip = m._choose_metrics(planned, verdict(host, planned))
    assert chip == "GH100"
    assert chosen == list(DEFAULT_OPTION_METRICS[1:4])
    (note,) = m.notes
    assert "left out" in note
    assert "pcie__read_bytes.sum" in note


def test_asked_for_metrics_that_do_not_fit_are_refused_in_one_line() -> None:
    options = parse_options(
        "--backend pm --metrics dram__bytes_read.sum,dram__bytes_write.sum"
    )
    with pytest.raises(PlanError, match="fit together") as caught:
        measurement()._choose_metrics(options, verdict(Host(per_pass=1), options))
    assert "\n" not in str(caught.value)


def test_when_the_host_api_fails_cupti_checks_when_configuring() -> None:
    failed = RuntimeError("CUPTI could not load the nvperf* libraries")
    m = measurement()
    options = parse_options("--backend pm")  # the defaults: taken unchecked
    planned = replace(options, metrics=DEFAULT_OPTION_METRICS)
    chosen, chip = m._choose_metrics(planned, verdict(failed, options))
    assert (chosen, chip) == (list(DEFAULT_OPTION_METRICS[1:]), "this GPU")
    assert "not checked ahead (RuntimeError: CUPTI could not" in m.notes[0]
    # Named metrics the check could not judge are refused with the reason.
    named = parse_options("--backend pm --metrics dram__bytes_read.sum")
    assert verdict(failed, named).refused == (
        "RuntimeError: CUPTI could not load the nvperf* libraries"
    )


def test_without_a_verdict_the_metrics_are_sampled_as_asked() -> None:
    m = measurement()
    options = parse_options("--backend pm --metrics dram__bytes_read.sum")
    assert m._choose_metrics(options, None) == (["dram__bytes_read.sum"], "this GPU")
    assert "not checked ahead (no probe)" in m.notes[0]


def test_the_sample_interval_reaches_the_sampler_and_sizes_the_quiet_spin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nsight_lab.backends.pm.metrics import MetricCheck
    from nsight_lab.options.profile import DEFAULT_SAMPLE_INTERVAL_US
    from tests.backends.pm.test_metrics import FakeHost

    # The default: a 100 µs region spans at least 5 samples.
    assert (
        parse_options("--backend pm").sample_interval_us == DEFAULT_SAMPLE_INTERVAL_US
    )
    assert 100 / DEFAULT_SAMPLE_INTERVAL_US >= 5
    opened: list[tuple[int, tuple[str, ...], int]] = []

    def open_sampler(api: Any, metrics: Any, ns: int, **_: Any) -> FakeSampler:
        opened.append((api, tuple(metrics), ns))
        sampler = FakeSampler([])
        sampler.interval_ns = ns
        return sampler

    monkeypatch.setattr(decoding, "new_cupti_api", lambda index, _metrics: index)
    monkeypatch.setattr(decoding, "open_sampler", open_sampler)
    check = MetricCheck("fake H200", FakeHost())
    m = measurement()
    m._gpu.device = 0
    m._gpu.max_sm_clock_mhz = 1980
    options = parse_options(
        "--backend pm --sample-interval 50 --metrics dram__bytes_read.sum"
    )
    m._open_sampler(
        options, availability.judged(check, options.extra_metrics, given=True)
    )
    assert opened == [(0, ("dram__bytes_read.sum",), 50_000)]
    assert m.interval_ns == 50_000
    assert not m._tune  # given: not tuned, only lengthened where a run needs it
    # The quiet spin covers one interval, with its margin, at the SM clock.
    assert m._quiet_cycles == math.ceil(50_000 * 1980 / 1e3 * interval.QUIET_MARGIN)
    m._run_s = {0: 0.01}
    m._fit_interval(0, first=True)
    assert "PM sampling every 50 µs on" in m.notes[-1]
