"""The work model's fused and chained bytes (roofline/boundary.py, issue 31)."""

from __future__ import annotations

import pytest

from nsight_lab.regions import annotate
from nsight_lab.roofline.boundary import FROM_PREVIOUS, FUSED, BoundaryBytes
from nsight_lab.roofline.workmodel import count_work

torch = pytest.importorskip("torch")

N = 1 << 16
F32 = 4


def test_an_unfused_chain_kept_needs_what_addcmul_moves() -> None:
    a, b, c = (torch.randn(N) for _ in range(3))
    kept: dict[str, object] = {}

    def cell() -> None:
        with annotate("unfused"):
            kept["u"] = a + b * c  # the intermediate b * c dies in the region
        with annotate("fused"):
            kept["f"] = torch.addcmul(a, b, c)
        with annotate("discarded"):
            a + b * c

    work = count_work(cell)
    assert work["unfused"][FUSED] == 4 * N * F32  # a, b, c read; u written
    assert work["fused"][FUSED] == 4 * N * F32
    assert (
        work["unfused"]["model__bytes_read"] + work["unfused"]["model__bytes_written"]
        == 6 * N * F32
    )
    assert work["discarded"][FUSED] == 3 * N * F32


def test_a_reuse_loop_reads_its_buffer_once() -> None:
    x = torch.zeros(N)

    def cell() -> None:
        with annotate("loop"):
            for _ in range(10):
                x.add_(1.0)

    work = count_work(cell)["loop"]
    assert work["model__bytes_read"] == 10 * N * F32
    assert work[FUSED] == 2 * N * F32  # read once, written once (alive)


def test_a_region_reading_what_the_one_before_wrote_is_a_chain() -> None:
    a, b = torch.randn(N), torch.randn(N)
    kept: dict[str, object] = {}

    def cell() -> None:
        with annotate("first"):
            kept["t"] = a * b
        with annotate("second"):
            kept["y"] = kept["t"] + a  # reads t back (and a, written by no region)
        with annotate("third"):
            kept["z"] = kept["t"] * 2  # t is from "first", not the region before

    work = count_work(cell)
    assert work["first"][FROM_PREVIOUS] == 0
    assert work["second"][FROM_PREVIOUS] == N * F32
    assert work["third"][FROM_PREVIOUS] == 0


def test_regions_without_ops_or_storage_get_no_figure() -> None:
    x = torch.randn(256, 256)

    def cell() -> None:
        with annotate("view_only"):
            x.t()

    assert FUSED not in count_work(cell)["view_only"]
    tracker = BoundaryBytes()
    tracker.enter("sparse")
    tracker.op([torch.randn(4, 4).to_sparse()], [torch.randn(4)])
    tracker.exit("sparse")
    assert "sparse" not in tracker.results  # no storage to follow: never a guess
