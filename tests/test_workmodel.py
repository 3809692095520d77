"""The FLOP and byte model against hand-computed values (PyTorch on the CPU)."""

from __future__ import annotations

import pytest

from nsight_lab.regions import annotate
from nsight_lab.roofline.workmodel import count_work

torch = pytest.importorskip("torch")

N = 1 << 16
F32 = 4


def test_unfused_chain_moves_one_and_a_half_times_the_bytes_of_addcmul() -> None:
    a, b, c = (torch.randn(N) for _ in range(3))

    def cell() -> None:
        with annotate("unfused"):
            a + b * c
        with annotate("fused"):
            torch.addcmul(a, b, c)

    work = count_work(cell)
    # mul reads b, c and writes t; add reads a, t and writes the result.
    assert work["unfused"]["model__bytes_read"] == 4 * N * F32
    assert work["unfused"]["model__bytes_written"] == 2 * N * F32
    assert work["fused"]["model__bytes_read"] == 3 * N * F32
    assert work["fused"]["model__bytes_written"] == N * F32
    unfused = (
        work["unfused"]["model__bytes_read"] + work["unfused"]["model__bytes_written"]
    )
    fused = work["fused"]["model__bytes_read"] + work["fused"]["model__bytes_written"]
    assert unfused / fused == 1.5
    assert work["unfused"]["model__flops"] == 2 * N
    assert work["fused"]["model__flops"] == 2 * N


def test_matmul_flops_and_bytes() -> None:
    m, k, n = 64, 32, 48
    x, y = torch.randn(m, k), torch.randn(k, n)

    def cell() -> None:
        with annotate("mm"):
            x @ y

    work = count_work(cell)["mm"]
    assert work["model__flops"] == 2 * m * k * n
    assert work["model__bytes_read"] == (m * k + k * n) * F32
    assert work["model__bytes_written"] == m * n * F32


def test_views_move_nothing_and_setup_outside_regions_is_not_counted() -> None:
    x = torch.randn(256, 256)

    def cell() -> None:
        y = torch.randn(256, 256)  # set-up outside the region
        with annotate("transpose"):
            x.t()
        with annotate("scale"):
            y * 2

    work = count_work(cell)
    assert work["transpose"] == {
        "model__flops": 0.0,
        "model__bytes_read": 0.0,
        "model__bytes_written": 0.0,
    }
    assert work["scale"]["model__bytes_written"] == 256 * 256 * F32
    assert "cell" not in work


def test_a_cell_without_regions_is_one_region() -> None:
    x = torch.randn(1000)
    work = count_work(lambda: x * 2)
    assert work["cell"]["model__bytes_read"] == 1000 * F32
    assert work["cell"]["model__flops"] == 1000


def test_softmax_reads_and_writes_each_element_once() -> None:
    rows, cols = 64, 128
    s = torch.randn(rows, cols)

    def cell() -> None:
        with annotate("softmax"):
            torch.softmax(s, dim=-1)

    work = count_work(cell)["softmax"]
    assert work["model__bytes_read"] == rows * cols * F32
    assert work["model__bytes_written"] == rows * cols * F32
    assert work["model__flops"] == 5 * rows * cols
