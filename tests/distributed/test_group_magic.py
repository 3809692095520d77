"""A kernel that initialised a process group: each rank times itself, rank 0 stores.

No ``--ranks``: the ``%%nsight`` cell finds the group (``torch.distributed`` already
initialised) and gathers every run over it. Once in this process (a group of one),
once over two real IPython shells in two processes, each a rank of one gloo group,
running the same cell.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import pytest

from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.distributed import metrics as m
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from pathlib import Path

    from IPython.core.interactiveshell import InteractiveShell

pytest.importorskip("torch", reason="process groups are torch.distributed's")

CELL = """\
%%nsight --backend cpu --runs 3 --warmup 1 --quiet --out grouped
import time
import torch
import torch.distributed as dist
import nsight
with nsight.annotate("all_reduce"):
    x = torch.ones(256)
    dist.all_reduce(x)
with nsight.annotate("sleep"):
    time.sleep(0.02 if dist.get_rank() == 1 else 0.002)
"""


def test_a_group_of_one_in_this_kernel(ip: InteractiveShell, tmp_path: Path) -> None:
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'rdv'}", rank=0, world_size=1
    )
    try:
        result = ip.run_cell(CELL)
    finally:
        dist.destroy_process_group()
    assert result.error_in_exec is None, result.error_in_exec
    with RunStore() as store:
        session = store.list_sessions(limit=1)[0]
        records = store.runs(session.id)
    assert "rank 0 of the kernel's process group of 1 (gloo)" in session.notes[0]
    assert session.options["ranks"] is None
    assert len(records) == 6
    assert all(m.ranks_of(r) == 1 for r in records)
    # One rank sends nothing in a ring: the model gives 0 bytes, one collective.
    reduces = [r for r in records if r.annotation == "all_reduce"]
    assert all(r.metrics[m.COMM_BYTES] == 0.0 for r in reduces)
    assert all(r.metrics[m.COMM_COUNT] == 1 for r in reduces)
    frame = ip.user_ns["grouped"]
    rows = frame[frame["Metric"] == TIME_METRIC]
    assert list(rows["Rank"]) == [-1, 0, -1, 0]


RANK_SCRIPT = """\
import json, sys
import torch.distributed as dist
from IPython.core.interactiveshell import InteractiveShell

rank, rendezvous, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
dist.init_process_group("gloo", init_method=rendezvous, rank=rank, world_size=2)
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "nsight_lab")
result = shell.run_cell(json.loads(sys.argv[4]))
frame = shell.user_ns.get("grouped")
with open(out, "w") as f:
    json.dump({"error": repr(result.error_in_exec), "frame": frame is not None}, f)
dist.destroy_process_group()
"""


def test_two_kernels_of_one_group_rank_zero_stores(tmp_path: Path) -> None:
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    rendezvous = f"file://{tmp_path / 'rdv'}"
    outs = [tmp_path / f"rank{r}.json" for r in (0, 1)]
    ranks = [
        subprocess.Popen(  # noqa: S603  (this Python, our script)
            [
                sys.executable,
                str(script),
                str(r),
                rendezvous,
                str(outs[r]),
                json.dumps(textwrap.dedent(CELL)),
            ],
        )
        for r in (0, 1)
    ]
    assert [p.wait(timeout=300) for p in ranks] == [0, 0]
    said = [json.loads(o.read_text()) for o in outs]
    assert said == [{"error": "None", "frame": True}, {"error": "None", "frame": False}]
    with RunStore() as store:
        sessions = store.list_sessions(limit=10)
        assert len(sessions) == 1  # rank 1 stored nothing
        records = store.runs(sessions[0].id)
    assert "rank 0 of the kernel's process group of 2 (gloo)" in sessions[0].notes[0]
    sleeps = [r for r in records if r.annotation == "sleep"]
    assert len(sleeps) == 3
    assert all(r.metrics[m.STRAGGLER] == 1 for r in sleeps)
    assert all(
        r.duration_ns >= max(m.per_rank(r, m.DURATION).values()) for r in records
    )
    reduces = [r for r in records if r.annotation == "all_reduce"]
    assert all(r.metrics[m.COMM_BYTES] == 256 * 4 for r in reduces)  # 2 * 1/2 * S
