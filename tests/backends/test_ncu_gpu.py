"""The isolated ncu path with the real Nsight Compute, on a GPU.

Needs a CUDA GPU (the ``gpu`` marker), an ``ncu`` (PATH, ``$NSIGHT_LAB_NCU`` or
``/usr/local/cuda/bin/ncu``), and the ``ncu_report``, ``nvtx`` and ``cloudpickle``
packages; each missing piece skips with its reason.
"""

from __future__ import annotations

import importlib.util
import textwrap

import pytest

from nsight_lab.backends.base import Availability
from nsight_lab.gpu.stack import find_ncu, ncu_report_status
from nsight_lab.options import parse_options
from nsight_lab.plan import make_plan
from nsight_lab.roofline.counters import DRAM_READ, DRAM_WRITE

pytestmark = pytest.mark.gpu

MIB = 2**20
N = 64 * MIB  # float32 elements: 256 MiB per tensor
L2_MARGIN = 64 * MIB  # more than the L2 of any GPU this runs on (H200: 50 MB)


@pytest.fixture(autouse=True)
def _ncu_stack():
    if find_ncu() is None:
        pytest.skip("no ncu (Nsight Compute CLI) found")
    status = ncu_report_status()
    if not status.ok:
        pytest.skip(f"ncu_report unavailable: {status.detail}")
    if importlib.util.find_spec("nvtx") is None:
        pytest.skip("the nvtx package is not installed (pip install nvtx)")


def run(line, cell, user_ns, tmp_path):
    from nsight_lab.backends.ncu.isolate import run_isolated

    options = parse_options(f"{line} --backend ncu")
    plan = make_plan(options, {"ncu": Availability(ok=True, reason="test")})
    batches = []
    records = run_isolated(plan, cell, user_ns, 1, batches.append, report_dir=tmp_path)
    return records, batches


def test_dram_bytes_of_a_streaming_kernel_with_a_shipped_cuda_tensor(tmp_path):
    torch = pytest.importorskip("torch")
    x = torch.randn(N, device="cuda")  # defined outside the cell: shipped to the child
    cell = textwrap.dedent(
        """
        import nsight_lab
        with nsight_lab.annotate("double"):
            y = x * 2
        torch.cuda.synchronize()
        """
    )
    records, batches = run(
        f"--runs 3 --warmup 1 --metrics {DRAM_READ},{DRAM_WRITE}",
        cell,
        {"x": x, "torch": torch},
        tmp_path,
    )
    assert len(batches) == 1
    assert [r.annotation for r in records] == ["double"] * 3
    expected = N * 4  # 256 MiB
    for r in records:
        assert r.duration_ns > 0
        assert r.kernels
        assert r.metrics[DRAM_READ] == pytest.approx(expected, rel=0.10)
        # Dirty lines still in the L2 when the kernel ends are not written back within
        # it: an H200 (50 MB L2) showed 0.900 x 256 MiB written, so allow the L2 size.
        assert expected - L2_MARGIN <= r.metrics[DRAM_WRITE] <= expected * 1.10
    assert (tmp_path / "config_0.ncu-rep").is_file()


def test_whole_cell_and_configs(tmp_path):
    torch = pytest.importorskip("torch")
    cell = "y = torch.ones(n, device='cuda') * 3\ntorch.cuda.synchronize()"
    records, batches = run(
        "--configs 1048576,4194304 --runs 2 --warmup 1",
        cell,
        {"torch": torch},
        tmp_path,
    )
    assert [len(b) for b in batches] == [2, 2]
    assert {r.annotation for r in records} == {"cell"}
    small = [r.duration_ns for r in records if r.config_index == 0]
    large = [r.duration_ns for r in records if r.config_index == 1]
    assert min(large) > max(small) > 0
