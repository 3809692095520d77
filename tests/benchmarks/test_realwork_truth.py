"""benchmarks/realwork.py's CUPTI truth, on the CPU against a stand-in CUPTI.

Issue 28: after torch.profiler has run in a process, CUPTI's activity records and
``get_timestamp()`` are in Kineto's clock ticks (2.095 per ns on the H100 host), not
in ns: the truth's first run read every step 2.1x (stop 38). It calibrates CUPTI's
clock against ``perf_counter`` itself; here a CUPTI whose clock runs at 2.1 ticks per
ns and steps that each "run" one 200 us kernel must read 200 us, and a record outside
every step's window must count nowhere.
"""

from __future__ import annotations

import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
TICKS_PER_NS = 2.1
KERNEL_NS = 200_000


def test_the_cupti_truth_reads_ns_whatever_cuptis_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import realwork  # type: ignore[import-not-found]
    import realwork_cell  # type: ignore[import-not-found]

    records: list[Any] = []
    done: dict[str, Any] = {}

    def ticks() -> int:
        return int(time.perf_counter_ns() * TICKS_PER_NS)

    def kernel() -> None:  # one kernel of KERNEL_NS, recorded in CUPTI's ticks
        start = ticks()
        end_ns = time.perf_counter_ns() + KERNEL_NS
        while time.perf_counter_ns() < end_ns:
            pass
        records.append(types.SimpleNamespace(start=start + 1, end=ticks()))

    class Work:
        def __getattr__(self, step: str) -> Any:
            return kernel

    fake = types.SimpleNamespace(
        ActivityKind=types.SimpleNamespace(CONCURRENT_KERNEL=1, MEMCPY=2, MEMSET=3),
        get_timestamp=ticks,
        activity_register_callbacks=lambda _req, completed: done.update(cb=completed),
        activity_enable=lambda _kind: None,
        activity_disable=lambda _kind: None,
        activity_flush_all=lambda _flag: done["cb"](list(records)),
    )
    monkeypatch.setitem(sys.modules, "cupti", types.SimpleNamespace(cupti=fake))
    monkeypatch.setattr(realwork_cell, "work", lambda small=False: Work())  # noqa: ARG005
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(
        torch.cuda,
        "get_device_properties",
        lambda _i: types.SimpleNamespace(L2_cache_size=8),
    )
    real_ones = torch.ones
    monkeypatch.setattr(torch, "ones", lambda n, dtype, **_: real_ones(n, dtype=dtype))
    records.append(types.SimpleNamespace(start=1, end=ticks()))  # before any window

    truth = realwork.cupti_truth(3, small=False)

    assert set(truth) == set(realwork_cell.STEPS)
    for step, got in truth.items():
        assert got["activities"] == 1, step
        assert got["ticks_per_ns"] == pytest.approx(TICKS_PER_NS, rel=0.01)
        assert got["kernel_sum_us"] == pytest.approx(KERNEL_NS / 1e3, rel=0.02), step
