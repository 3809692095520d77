"""Kernel attribution of the cupti backend (CPU) and the real CUPTI path (-m gpu)."""

from __future__ import annotations

import importlib.util
import statistics
import textwrap
from typing import TYPE_CHECKING

import pytest

from nsight_lab.backends.cupti import (
    IDS_PER_RUN,
    CuptiBackend,
    KernelActivity,
    PendingRun,
    attribute,
    combine_kernels,
)
from nsight_lab.contract.collector import RunKey
from nsight_lab.options import parse_options
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from collections.abc import Callable

    from IPython.core.interactiveshell import InteractiveShell

    from nsight_lab.contract.collector import RunTiming


def k(name: str, start: int, end: int, corr: int) -> KernelActivity:
    return KernelActivity(name=name, start_ns=start, end_ns=end, correlation_id=corr)


def test_combine_kernels() -> None:
    kernels = [k("b", 300, 700, 2), k("a", 100, 200, 1)]
    assert combine_kernels(kernels, "sum") == 500
    assert combine_kernels(kernels, "max") == 400
    assert combine_kernels(kernels, "first") == 100  # the earliest launched
    assert combine_kernels([], "sum") == 0


def test_attribute_groups_kernels_by_region_and_ignores_untagged() -> None:
    run = PendingRun(key=RunKey(0, 0), seq=3, regions=["mm", "relu"])
    base = 3 * IDS_PER_RUN
    kernels = [
        k("flush", 0, 50, 10),  # the L2 flush: no external id
        k("gemm_a", 100, 300, 11),
        k("gemm_b", 300, 350, 12),
        k("relu_kernel", 400, 420, 13),
        k("setup", 90, 95, 14),  # launched in the run, outside regions
    ]
    ext = {11: base + 1, 12: base + 1, 13: base + 2, 14: base}
    (timing,) = attribute(kernels, ext, [run], "sum")
    assert timing.regions == {"mm": 250.0, "relu": 20.0}
    assert timing.kernels == {"mm": ("gemm_a", "gemm_b"), "relu": ("relu_kernel",)}
    assert timing.whole_ns == 275.0  # every tagged kernel of the run
    (maxed,) = attribute(kernels, ext, [run], "max")
    assert maxed.regions["mm"] == 200.0


def test_attribute_whole_cell_and_several_runs() -> None:
    runs = [PendingRun(key=RunKey(0, i), seq=i + 1) for i in range(2)]
    kernels = [k("x", 0, 10, 1), k("y", 20, 50, 2)]
    ext = {1: 1 * IDS_PER_RUN, 2: 2 * IDS_PER_RUN}
    first, second = attribute(kernels, ext, runs, "sum")
    assert (first.regions, first.whole_ns) == ({}, 10.0)
    assert second.whole_ns == 30.0


@pytest.mark.skipif(
    importlib.util.find_spec("cupti") is not None, reason="cupti-python is installed"
)
def test_probe_says_what_is_missing() -> None:
    available = CuptiBackend().probe()
    assert not available.ok
    assert "cupti-python" in available.reason
    assert "pip install" in available.hint


def _needs_cupti() -> None:
    if importlib.util.find_spec("cupti") is None:
        pytest.skip("cupti-python is not installed (carry its wheel to the GPU host)")


def time_region(
    backend: object, work: Callable[[], object], runs: int
) -> list[RunTiming]:
    """``runs`` runs of one region ``mm`` doing ``work`` on ``backend``: the timings."""
    m = backend.open(parse_options("--cache-control all"))  # type: ignore[attr-defined]
    try:
        for i in range(runs):
            m.begin_run(RunKey(0, i))
            m.enter_region("mm")
            work()
            m.exit_region("mm")
            m.end_run(0.0)
        return m.completed(wait=True)
    finally:
        m.close()


@pytest.mark.gpu
def test_cupti_matches_events_and_names_kernels() -> None:
    _needs_cupti()
    import torch

    from nsight_lab.backends.events import CudaEventsBackend

    a = torch.randn(4096, 4096, device="cuda")

    def measure(backend: object) -> tuple[list[float], tuple[str, ...]]:
        timings = time_region(backend, lambda: a @ a, runs=30)
        return [t.regions["mm"] for t in timings], timings[-1].kernels.get("mm", ())

    cupti_ns, names = measure(CuptiBackend())
    events_ns, _ = measure(CudaEventsBackend())
    assert len(cupti_ns) == 30
    assert names  # the GEMM kernel's name
    assert statistics.median(cupti_ns) == pytest.approx(
        statistics.median(events_ns), rel=0.05
    )
    # CUPTI is released: torch.profiler (Kineto, another CUPTI client) works afterwards.
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CUDA]
    ) as prof:
        a @ a
        torch.cuda.synchronize()
    assert any(e.device_type.name == "CUDA" for e in prof.events())


@pytest.mark.gpu
def test_magic_with_cupti_backend(ip: InteractiveShell) -> None:
    _needs_cupti()
    result = ip.run_cell(
        "%%nsight --backend cupti --runs 5 --quiet --out cupti_res --combine sum\n"
        + textwrap.dedent(
            """\
            import torch, nsight
            x = torch.randn(1 << 24, device="cuda")
            with nsight.annotate("two_kernels"):
                y = x * 2
                z = y + 1
            """
        )
    )
    assert result.error_in_exec is None, result.error_in_exec
    frame = ip.user_ns["cupti_res"]
    assert (frame["Backend"] == "cupti").all()
    assert (
        frame["Kernel"].iloc[0].count("|") == 1
    )  # two kernels, "k1|k2" as nsight-python
    with RunStore() as store:
        runs = store.runs(int(frame["SessionId"].iloc[0]))
    assert all(len(r.kernels) == 2 for r in runs)  # mul and add kernels, per run


class _FakeCupti:
    """cupti-python's ``cupti`` module, as far as a subscription uses it."""

    class ActivityKind:
        CONCURRENT_KERNEL, RUNTIME, DRIVER, EXTERNAL_CORRELATION = 1, 2, 3, 4
        KERNEL, MEMCPY, MEMSET = 5, 6, 7

    class ExternalCorrelationKind:
        CUSTOM2 = 12

    def __init__(self) -> None:
        self.enabled: set[int] = set()

    def activity_register_callbacks(self, _requested, _completed) -> None:
        pass

    def activity_enable(self, kind: int) -> None:
        self.enabled.add(kind)

    def activity_disable(self, kind: int) -> None:
        self.enabled.discard(kind)

    def activity_flush_all(self, _flag: int) -> None:
        self.flushed = getattr(self, "flushed", 0) + 1


def test_one_subscription_at_a_time_each_with_its_own_records() -> None:
    from nsight_lab.backends.activity import SUBSCRIBED, ActivityBuffer
    from nsight_lab.errors import BackendUnavailableError

    first, second = ActivityBuffer(), ActivityBuffer()
    first.cupti, second.cupti = _FakeCupti(), _FakeCupti()
    first.start()
    try:
        with pytest.raises(BackendUnavailableError, match="'cupti' is busy"):
            second.start()
        assert first.cupti.enabled == {1, 2, 3, 4, 6, 7}
        assert second.cupti.enabled == set()  # refused before it enabled anything
    finally:
        first.stop()
    assert not first.cupti.enabled
    assert first.cupti.flushed == 1  # its buffers taken back, not left to Kineto
    assert not SUBSCRIBED.locked()
    second.start()  # the slot is free again
    second.stop()
    second.stop()  # once only: the slot is not released twice
    assert not SUBSCRIBED.locked()
    assert first.kernels is not second.kernels  # the records are the owner's


@pytest.mark.gpu
def test_launches_of_other_threads_and_autograd_belong_to_the_open_region() -> None:
    """backward()'s kernels come from autograd's engine threads; a user's thread too."""
    _needs_cupti()
    import threading

    import torch

    from nsight_lab.contract import shape

    w = torch.randn(2048, 2048, device="cuda", requires_grad=True)
    x = torch.randn(2048, 2048, device="cuda")
    b = torch.randn(4096, 4096, device="cuda")
    m = CuptiBackend().open(parse_options("--cache-control all"))
    try:
        for i in range(5):
            m.begin_run(RunKey(0, i))
            m.enter_region("forward")
            loss = (x @ w).square().sum()
            m.exit_region("forward")
            m.enter_region("backward")
            loss.backward()
            m.exit_region("backward")
            m.enter_region("thread")
            worker = threading.Thread(target=lambda: b @ b)
            worker.start()
            worker.join()
            m.exit_region("thread")
            m.end_run(0.0)
        timings = m.completed(wait=True)
    finally:
        m.close()
    last = timings[-1]
    # backward holds two 2048^3 GEMMs' worth (dW and the square's grad) at least;
    # by ids alone it held only what the main thread launched (a few µs).
    assert last.regions["backward"] > 0.5 * last.regions["forward"]
    assert last.shape["backward"][shape.FOREIGN] >= 1
    assert last.regions["thread"] > 0
    assert last.shape["thread"][shape.FOREIGN] == last.shape["thread"][shape.LAUNCHES]


@pytest.mark.gpu
def test_torch_profiler_before_a_cupti_profile_changes_nothing() -> None:
    """After Kineto ran in the process, each kernel still counts once."""
    _needs_cupti()
    import torch

    a = torch.randn(4096, 4096, device="cuda")

    def median_mm() -> float:
        timings = time_region(CuptiBackend(), lambda: a @ a, runs=20)
        assert all(
            len(t.kernels["mm"]) == len(timings[0].kernels["mm"]) for t in timings
        )
        return statistics.median(t.regions["mm"] for t in timings)

    from nsight_lab.backends.events import CudaEventsBackend

    with torch.profiler.profile(
        activities=[
            torch.profiler.ProfilerActivity.CPU,
            torch.profiler.ProfilerActivity.CUDA,
        ]
    ) as prof:
        a @ a
        torch.cuda.synchronize()
    assert any(e.device_type.name == "CUDA" for e in prof.events())
    # Kineto's clock (TSC ticks) is CUPTI's from now on: held against CUDA events,
    # which no CUPTI client touches (cupti read 2.04-2.12x before the fix).
    after = median_mm()
    timed = time_region(CudaEventsBackend(), lambda: a @ a, runs=20)
    events = statistics.median(t.regions["mm"] for t in timed)
    assert after == pytest.approx(events, rel=0.05)
    with (
        torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]),
        pytest.raises(Exception, match=r"inside a running torch\.profiler"),
    ):
        CuptiBackend().open(parse_options(""))
