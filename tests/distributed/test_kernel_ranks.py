"""``%%nsight --ranks 2`` in a real Jupyter kernel (ipykernel), not a test shell.

The ranks are spawned from the kernel process, whose ``__main__`` is ipykernel's
launcher: what a notebook user runs. Driven through jupyter_client.
"""

from __future__ import annotations

from typing import Any

import pytest

from nsight_lab.distributed import metrics as m
from nsight_lab.store.run_store import RunStore

pytest.importorskip(
    "torch", reason="--ranks starts its ranks with torch.multiprocessing"
)
jupyter_client = pytest.importorskip(
    "jupyter_client", reason="a real kernel is started"
)

CELL = """\
%%nsight --backend cpu --ranks 2 --runs 3 --warmup 1 --quiet --out ranked
import time
import torch.distributed as dist
import nsight
with nsight.annotate("sleep"):
    time.sleep(0.02 if dist.get_rank() == 1 else 0.002)
"""


def _execute(client: Any, code: str) -> dict[str, Any]:
    reply: dict[str, Any] = client.execute_interactive(code, timeout=240)
    return reply["content"]


def test_ranks_spawned_from_an_ipykernel():
    manager, client = jupyter_client.manager.start_new_kernel(
        kernel_name="python3", startup_timeout=120
    )
    try:
        assert _execute(client, "%load_ext nsight_lab")["status"] == "ok"
        done = _execute(client, CELL)
        assert done["status"] == "ok", done
        shown = _execute(client, "print(sorted(set(ranked['Rank'])))")
        assert shown["status"] == "ok"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    with RunStore() as store:
        session = store.list_sessions(limit=1)[0]
        records = store.runs(session.id)
    assert session.status == "completed"
    assert len(records) == 3
    assert all(r.metrics[m.STRAGGLER] == 1 for r in records)
