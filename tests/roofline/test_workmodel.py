"""The FLOP and byte model against hand-computed values (PyTorch on the CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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


COMPILED_IN_THE_CELL = """
import json, sys
import torch
from nsight_lab.regions import annotate
from nsight_lab.roofline.workmodel import count_work

x = torch.randn(1000)
plain = count_work(lambda: x * 2)  # no Dynamo: the counter does not import it
dynamo_after_plain = "torch._dynamo" in sys.modules

def g(a):
    return (a * 2).sin() + 1

def cell():
    with annotate("compiled"):
        torch.compile(g, backend="eager")(x)  # imports Dynamo inside the count

compiled = count_work(cell)
again = count_work(cell)  # Dynamo imported now: the counter skips it as PyTorch does
print(json.dumps([dynamo_after_plain, plain, compiled, again]))
"""


def test_the_counter_needs_no_dynamo_and_counts_cells_that_compile() -> None:
    # Given: a fresh interpreter, where PyTorch's Dynamo is not imported
    root = str(Path(__file__).resolve().parents[2])
    # When: a plain cell is counted, then a cell whose torch.compile imports Dynamo
    proc = subprocess.run(  # noqa: S603
        [sys.executable, "-c", COMPILED_IN_THE_CELL],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        cwd=root,
        env={**os.environ, "PYTHONPATH": root},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    dynamo_after_plain, plain, compiled, again = json.loads(
        proc.stdout.strip().splitlines()[-1]
    )
    # Then: counting did not import Dynamo, and both counts of the compiled cell see
    # its three pointwise ops
    assert dynamo_after_plain is False
    assert plain["cell"]["model__flops"] == 1000
    assert compiled["compiled"]["model__flops"] == 3 * 1000
    assert again["compiled"]["model__flops"] == 3 * 1000
