"""The pm backend on a real GPU (``pytest -m gpu``): CUPTI PM sampling end to end.

Needs an NVIDIA GPU, cupti-python >= 13.4 with its libcupti on the loader's path
(``LD_LIBRARY_PATH=.../nvidia/cu13/lib``) and permission to read the counters (root,
or ``NVreg_RestrictProfilingToAdminUsers=0``); each test says which is missing.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

import pytest

from nsight_lab.backends.base import RunKey
from nsight_lab.options import parse_options
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

MiB = 1 << 20
DRAM = ("dram__bytes_read.sum", "dram__bytes_write.sum")


def _pm_ready() -> None:
    from nsight_lab.backends.pm.availability import diagnose

    found = diagnose()
    if found.status not in {"ok", "warn"}:
        pytest.skip(f"PM sampling is not available here: {found.detail} {found.hint}")


def _drive(measurement: Any, body: Any, regions: list[str], runs: int) -> list[Any]:
    for run in range(runs):
        measurement.begin_run(RunKey(0, run))
        for name in regions:
            measurement.enter_region(name)
            body(name)
            measurement.exit_region(name)
        measurement.end_run(0.0)
    return list(measurement.completed(wait=True))


@pytest.mark.gpu
def test_a_copy_region_reads_what_it_reads() -> None:
    _pm_ready()
    import torch

    from nsight_lab.backends.pm.collector import PmBackend

    x = torch.randn(64 * MiB, device="cuda")  # 64M floats: 256 MiB
    small = torch.randn(MiB // 4, device="cuda")  # 1 MiB: shorter than a sample
    work = {"copy": lambda: x * 2, "tiny": lambda: small * 2}
    m = PmBackend().open(parse_options(f"--backend pm --metrics {','.join(DRAM)}"))
    try:
        timings = _drive(m, lambda name: work[name](), list(work), 5)
    finally:
        m.close()
    assert len(timings) == 5
    for timing in timings:
        copy = timing.counters["copy"]
        assert copy[DRAM[0]] == pytest.approx(256 * MiB, rel=0.03)
        # The last dirty lines may stay in L2 after the region (written back later).
        assert 0.7 * 256 * MiB <= copy[DRAM[1]] <= 1.03 * 256 * MiB
        assert timing.counters["tiny"][DRAM[0]] == pytest.approx(MiB, rel=0.25)
        assert timing.series["copy"]  # a timeline of the copy
    # Two DRAM counters at 20 µs decode faster than they are sampled: live.
    assert m._sampler.mode == "live"  # noqa: SLF001


def _dram_read(chunks: list[Any]) -> float:
    return float(sum(c.all_values()[:, 0].sum() for c in chunks))


@pytest.mark.gpu
def test_more_than_an_image_waiting_for_a_stopped_decode_is_refused_not_cut() -> None:
    """600 launches at a 5 µs interval leave ~15,000 samples for one collection.

    At 5 µs the two DRAM counters decode slower than they are sampled, so the
    sampler is stopped (judged at open); after a decode fills its 10,000-sample
    image CUPTI gives no timestamps (seen on the H200), so the collection says so in
    one line instead of returning 10,000 samples as if they were all.
    """
    _pm_ready()
    import torch

    from nsight_lab.backends.pm.sampler import PmSampler
    from nsight_lab.errors import MeasurementError

    x = torch.randn(64 * MiB, device="cuda")
    sampler = PmSampler(torch.cuda.current_device(), DRAM, 5_000)
    try:
        assert sampler.mode == "stopped"
        for _ in range(600):
            x.mul(2)
        torch.cuda.synchronize()
        with pytest.raises(MeasurementError, match="--sample-interval"):
            sampler.drain(restart=False)
    finally:
        sampler.close()


@pytest.mark.gpu
def test_live_decoding_keeps_every_byte_over_many_drains() -> None:
    """Three batches of 1,000 launches at 20 µs: ~18,000 samples decoded live."""
    _pm_ready()
    import torch

    from nsight_lab.backends.pm.sampler import PmSampler

    x = torch.randn(64 * MiB, device="cuda")
    sampler = PmSampler(torch.cuda.current_device(), DRAM, 20_000)
    chunks: list[Any] = []
    try:
        for _ in range(3):
            for _ in range(1000):
                x.mul(2)
            torch.cuda.synchronize()
            # Past every sample of the batch: the decoder has to reach "now".
            chunks += sampler.drain(until_ns=_gpu_now_ns())
        assert sampler.mode == "live"
    finally:
        sampler.close()
    assert sum(len(c) for c in chunks) > 10_000
    assert _dram_read(chunks) == pytest.approx(3000 * 256 * MiB, rel=0.02)


def _gpu_now_ns() -> int:
    """CUPTI's timestamp now (the timebase of PM samples and kernel records)."""
    from cupti import cupti

    return int(cupti.get_timestamp())


@pytest.mark.gpu
def test_magic_with_pm_backend_stores_counters_and_timelines(
    ip: InteractiveShell,
) -> None:
    _pm_ready()
    result = ip.run_cell(
        "%%nsight --backend pm --runs 5 --quiet --out pm_res\n"
        + textwrap.dedent(
            """\
            import torch, nsight
            a, b, c = (torch.randn(1 << 25, device="cuda") for _ in range(3))
            with nsight.annotate("unfused"):
                y = a + b * c
            with nsight.annotate("fused"):
                z = torch.addcmul(a, b, c)
            """
        )
    )
    assert result.error_in_exec is None, result.error_in_exec
    frame = ip.user_ns["pm_res"]
    assert (frame["Backend"] == "pm").all()
    times = frame[frame["Metric"] == "gpu__time_duration.sum"].set_index("Annotation")
    assert set(times["BytesSource"]) == {"measured (PM sampling)"}
    unfused = times.loc["unfused", "BytesRead"] + times.loc["unfused", "BytesWritten"]
    fused = times.loc["fused", "BytesRead"] + times.loc["fused", "BytesWritten"]
    assert unfused / fused == pytest.approx(768 / 512, rel=0.1)
    with RunStore() as store:
        runs = store.runs(int(frame["SessionId"].iloc[0]))
    assert all(r.series for r in runs)
    from nsight_lab.figures import figures_to_json

    assert "counters" in figures_to_json(runs)


@pytest.mark.gpu
def test_auto_takes_pm_for_sampleable_metrics(ip: InteractiveShell) -> None:
    _pm_ready()
    result = ip.run_cell(
        "%%nsight --metrics dram__bytes_read.sum --runs 3 --quiet --out auto_res\n"
        "import torch, nsight\nx = torch.randn(1 << 24, device='cuda')\n"
        "with nsight.annotate('x2'):\n    y = x * 2\n"
    )
    assert result.error_in_exec is None, result.error_in_exec
    assert set(ip.user_ns["auto_res"]["Backend"]) == {"pm"}


@pytest.mark.gpu
def test_a_metric_pm_sampling_refuses_is_one_line(ip: InteractiveShell) -> None:
    _pm_ready()
    from IPython.core.error import UsageError

    flops = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
    result = ip.run_cell(
        f"%%nsight --backend pm --metrics {flops} --runs 2 --quiet\n"
        "import torch\nx = torch.randn(1024, device='cuda')\n_ = x * 2\n"
    )
    assert isinstance(result.error_in_exec, UsageError)
    text = str(result.error_in_exec)
    assert "\n" not in text
    assert "use --backend ncu" in text


@pytest.mark.gpu
def test_doctor_says_pm_sampling_works() -> None:
    _pm_ready()
    from nsight_lab.doctor import run_checks

    line = {c.name: c for c in run_checks()}["PM sampling"]
    assert line.status in {"ok", "warn"}
    assert "PM sampling works on" in line.detail
