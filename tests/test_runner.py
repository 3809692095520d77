"""The runner's own duties, through the real magic on the cpu backend."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

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
    ip.run_cell(
        "%%nsight --backend cpu --runs 6000 --warmup 0 --quiet\n"
        "_seen.append(_freeze_count())\n"
    )
    magics = ip.magics_manager.registry["NsightMagics"]
    assert _stored_runs(magics.last_session_id) == 6000
    # Frozen while the runs went on (every FREEZE_EVERY records) ...
    assert max(seen) > 0
    # ... and handed back to the GC once the profile ended.
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
