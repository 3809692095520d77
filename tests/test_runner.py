"""The runner's own duties, through the real magic on the cpu backend (and its hook)."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

from nsight_lab.backends.cpu import CpuTimerBackend
from nsight_lab.contract.progress import Progress
from nsight_lab.options import parse_options
from nsight_lab.plan import make_plan
from nsight_lab.runner import Runner
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell


def _stored_runs(session_id: int) -> int:
    with RunStore() as store:
        return store.run_counts([session_id]).get(session_id, 0)


def test_records_leave_the_gc_during_the_profile_and_return_after(
    ip: InteractiveShell,
) -> None:
    seen: list[int] = []
    ip.user_ns["_seen"] = seen
    ip.user_ns["_freeze_count"] = gc.get_freeze_count
    # gc.get_freeze_count() walks the frozen objects: asked every 500th run only.
    ip.user_ns["_calls"] = [0]
    ip.run_cell(
        "%%nsight --backend cpu --runs 6000 --warmup 0 --quiet\n"
        "_calls[0] += 1\n"
        "if _calls[0] % 500 == 0:\n"
        "    _seen.append(_freeze_count())\n"
    )
    magics = ip.magics_manager.registry["NsightMagics"]
    assert _stored_runs(magics.last_session_id) == 6000
    # Frozen while the runs went on (every FREEZE_EVERY records) ...
    assert max(seen) > 0
    # ... and handed back to the GC once the profile ended.
    assert gc.get_freeze_count() == 0


def test_what_the_kernel_held_before_is_frozen_from_the_first_run(
    ip: InteractiveShell,
) -> None:
    # The kernel's objects from before the profile (imports, the user's data) are
    # out of the GC's reach from the first run on: with them, the profile's first
    # full collection paused every thread for ~150 ms (benchmarks/store_lag.py).
    held = [[i] for i in range(50_000)]  # a notebook's data: 50,000 tracked lists
    seen: list[int] = []
    ip.user_ns["_seen"] = seen
    ip.user_ns["_freeze_count"] = gc.get_freeze_count
    ip.run_cell(
        "%%nsight --backend cpu --runs 3 --warmup 0 --quiet\n"
        "_seen.append(_freeze_count())\n"
    )
    assert min(seen) >= len(held)  # frozen before the first run, not after 2,000
    assert gc.get_freeze_count() == 0


def test_a_freeze_made_by_someone_else_is_left_alone(ip: InteractiveShell) -> None:
    keep = [object() for _ in range(10)]
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        ip.run_cell("%%nsight --backend cpu --runs 3000 --warmup 0 --quiet\nx = 1\n")
        assert gc.get_freeze_count() > before // 2  # still frozen: not unfrozen by us
    finally:
        gc.unfreeze()
    assert keep


def test_the_progress_hook_gets_snapshots_and_each_batch_once() -> None:
    options = parse_options("--backend cpu --configs 1,2 --runs 3 --warmup 1")
    plan = make_plan(options, {"cpu": CpuTimerBackend().probe()})
    shown: list[tuple[Progress, list]] = []
    batches: list[list] = []
    measurement = CpuTimerBackend().open(options)
    try:
        runner = Runner(
            plan,
            measurement,
            1,
            batches.append,
            on_progress=lambda p, records: shown.append((p, list(records))),
        )
        records = runner.run(lambda _config: None)
    finally:
        measurement.close()
    # The records came with the progress once each, as the sink got them.
    assert [r for _, batch in shown if batch for r in batch] == records
    assert [batch for _, batch in shown if batch] == batches
    # Each progress is its own frozen snapshot: a later change leaves it as it was.
    first, last = shown[0][0], shown[-1][0]
    assert first is not last
    assert (first.status, first.runs_done_total) == ("running", 0)
    assert (last.status, last.runs_done_total, last.runs_planned_total) == (
        "completed",
        6,
        6,
    )
    assert [p.runs_done_in_config for p, batch in shown if batch] == [1, 2, 3] * 2
    assert all(isinstance(p, Progress) for p, _ in shown)
