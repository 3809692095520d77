"""PM samples after torch.profiler: on Kineto's clock, put on the kernels' nanoseconds.

``tests/fixtures/pm_after_torchprof_h100.json.gz`` is what the pm collector saw on an
H100 after one ``torch.profiler`` block in the process (``benchmarks/pm_diagnose.py``,
case ``pm-after-torchprof``): per batch, the kernels in CUPTI's ticks (Kineto's, 2 per
ns) and converted to ns, the PM samples with their DRAM bytes, the clocks at the
drain. Before the conversion every region of that cell read no bytes.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from nsight_lab.backends.clock import CuptiClock
from nsight_lab.backends.pm.chunk import Chunk
from nsight_lab.backends.pm.decoding import Decoding

FIXTURE = Path(__file__).parents[2] / "fixtures" / "pm_after_torchprof_h100.json.gz"
MiB = 1 << 20
PAIR = ("dram__bytes_read.sum", "dram__bytes_write.sum")


def _batches() -> list[dict[str, Any]]:
    with gzip.open(FIXTURE, "rt") as f:
        return list(json.load(f))


def _clock(batch: dict[str, Any]) -> CuptiClock:
    """The measurement's clock as it stood at that batch."""
    clock = CuptiClock.__new__(CuptiClock)
    clock._tick0, clock._epoch0 = batch["tick0"], batch["epoch0"]  # noqa: SLF001
    clock._perf0, clock.rate = batch["perf0"], batch["rate"]  # noqa: SLF001
    return clock


def _owner(batch: dict[str, Any]) -> Any:
    cupti = SimpleNamespace(get_timestamp=lambda: batch["now"]["ticks"])
    return SimpleNamespace(_clock=_clock(batch), _cupti=cupti, _samples_in_ticks=None)


def _chunks(batch: dict[str, Any]) -> list[Chunk]:
    return [
        Chunk(
            metrics=PAIR,
            starts=np.array(c["starts"], dtype=np.int64),
            ends=np.array(c["ends"], dtype=np.int64),
            table=np.array(c["values"], dtype=np.float64),
        )
        for c in batch["samples"]
    ]


def _copies(batch: dict[str, Any]) -> list[tuple[int, int]]:
    """The 256 MiB copies' spans (ns): 170-180 µs on the H100, nothing else is."""
    return [(a, b) for a, b in batch["ns"] if 150_000 < b - a < 250_000]


def _read_over(chunks: list[Chunk], span: tuple[int, int]) -> float:
    """The bytes read by the samples overlapping ``span`` (its neighbours are quiet)."""
    total = 0.0
    for c in chunks:
        hit = (c.starts < span[1]) & (c.ends > span[0])
        total += float(c.all_values()[hit, 0].sum())
    return total


def test_samples_on_kineto_ticks_are_put_on_the_kernels_nanoseconds() -> None:
    batches = [b for b in _batches() if b.get("samples")]
    assert len(batches) == 3
    copies = 0
    for batch in batches:
        raw = _chunks(batch)
        # As the device read them: no sample near any kernel, so no bytes.
        assert all(_read_over(raw, span) == 0 for span in _copies(batch))
        owner = _owner(batch)
        moved = Decoding._on_kernel_clock(owner, raw)  # noqa: SLF001
        assert owner._samples_in_ticks is True  # noqa: SLF001
        # The samples now cover every copy, on the kernels' clock.
        lo, hi = moved[0].starts[0], moved[-1].ends[-1]
        assert all(lo <= a and b <= hi for a, b in _copies(batch))
        for span in _copies(batch):
            assert _read_over(moved, span) == pytest.approx(256 * MiB, rel=0.05)
            copies += 1
    assert copies == 6  # the warm-up, the sizing run and four timed runs


def test_samples_already_in_nanoseconds_are_left_alone() -> None:
    batch = _batches()[0]
    clock = _clock(batch)
    ns = [
        Chunk(
            metrics=c.metrics,
            starts=clock.ns_array(c.starts),
            ends=clock.ns_array(c.ends),
            table=c.table,
        )
        for c in _chunks(batch)
    ]
    owner = _owner(batch)
    kept = Decoding._on_kernel_clock(owner, ns)  # noqa: SLF001
    assert owner._samples_in_ticks is False  # noqa: SLF001
    assert kept is ns


def test_cuptis_own_clock_converts_nothing() -> None:
    batch = _batches()[0]
    owner = _owner(batch)
    owner._clock.rate = 1.0  # noqa: SLF001
    raw = _chunks(batch)
    assert Decoding._on_kernel_clock(owner, raw) is raw  # noqa: SLF001
    assert owner._samples_in_ticks is None  # noqa: SLF001


def test_ticks_and_ns_are_inverse() -> None:
    clock = _clock(_batches()[0])
    for tick in (91_963_654_021, 92_175_594_586, 93_318_411_912):
        assert abs(clock.ticks(clock.ns(tick)) - tick) <= 1
        assert int(clock.ns_array(np.array([tick]))[0]) == clock.ns(tick)
