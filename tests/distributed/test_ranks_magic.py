"""``%%nsight --backend cpu --ranks 2``: the whole path, two gloo processes.

Real ranks started by ``torch.multiprocessing`` (no stand-in), a real store. Spawning
two processes that import PyTorch costs seconds, so each test profiles one cell.
"""

from __future__ import annotations

import json
import math
import textwrap
from typing import TYPE_CHECKING

import pytest

from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.distributed import metrics as m
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from pathlib import Path

    from IPython.core.interactiveshell import InteractiveShell

pytest.importorskip(
    "torch", reason="--ranks starts its ranks with torch.multiprocessing"
)

NUMEL = 1000  # float32: 4,000 bytes all-reduced


def run(ip: InteractiveShell, source: str) -> object:
    return ip.run_cell(textwrap.dedent(source))


def _latest(store: RunStore):
    session = store.list_sessions(limit=1)[0]
    return session, store.runs(session.id)


def test_two_gloo_ranks_straggler_span_bytes_and_rows(ip: InteractiveShell) -> None:
    ip.user_ns.update({"numel": NUMEL, "slow_rank": 1})
    result = run(
        ip,
        """\
        %%nsight --backend cpu --ranks 2 --runs 3 --warmup 1 --quiet --out ranked
        import time
        import torch
        import torch.distributed as dist
        import nsight
        with nsight.annotate("all_reduce"):
            x = torch.ones(numel)
            dist.all_reduce(x)
        assert x[0].item() == dist.get_world_size()
        with nsight.annotate("sleep"):
            time.sleep(0.02 if dist.get_rank() == slow_rank else 0.002)
        """,
    )
    assert result.error_in_exec is None, result.error_in_exec
    with RunStore() as store:
        session, records = _latest(store)
    assert session.status == "completed"
    assert session.options["ranks"] == 2
    assert "2 ranks started by torch.multiprocessing (gloo)" in session.notes[0]
    assert [r.annotation for r in records] == ["all_reduce", "sleep"] * 3
    for record in records:
        durations = m.per_rank(record, m.DURATION)
        assert sorted(durations) == [0, 1]
        # The span (first start to last end) holds every rank's own duration.
        assert record.duration_ns >= max(durations.values())
        assert record.metrics[m.SPAN] == record.duration_ns
    sleeps = [r for r in records if r.annotation == "sleep"]
    assert [r.metrics[m.STRAGGLER] for r in sleeps] == [1.0, 1.0, 1.0]
    assert all(r.metrics[m.rank_metric(m.DURATION, 1)] >= 20e6 for r in sleeps)
    # The ring all-reduce of S bytes over N ranks: each rank sends 2 (N - 1) / N * S.
    n, s = 2, NUMEL * 4
    reduces = [r for r in records if r.annotation == "all_reduce"]
    assert all(r.metrics[m.COMM_BYTES] == 2 * (n - 1) / n * s for r in reduces)
    assert all(r.metrics[m.COMM_COUNT] == 1 for r in reduces)
    assert all(m.COMM_BYTES not in r.metrics for r in sleeps)

    frame = ip.user_ns["ranked"]
    time_rows = frame[frame["Metric"] == TIME_METRIC]
    assert list(zip(time_rows["Annotation"], time_rows["Rank"], strict=True)) == [
        ("all_reduce", -1),
        ("all_reduce", 0),
        ("all_reduce", 1),
        ("sleep", -1),
        ("sleep", 0),
        ("sleep", 1),
    ]
    assert set(time_rows["Device"]) == {"cpu"}
    sleep = time_rows[time_rows["Annotation"] == "sleep"].set_index("Rank")
    assert sleep.loc[-1, "StragglerRank"] == 1
    assert sleep.loc[1, "StragglerRuns"] == 3
    assert (
        sleep.loc[-1, "AvgValue"] >= sleep.loc[1, "AvgValue"] > sleep.loc[0, "AvgValue"]
    )
    byte_rows = frame[frame["Metric"] == m.COMM_BYTES]
    assert list(byte_rows["AvgValue"]) == [s]


def test_configs_reach_every_rank_and_the_widget_shows_the_run(
    ip: InteractiveShell,
) -> None:
    result = run(
        ip,
        """\
        %%nsight --backend cpu --ranks 2 --configs 250,500 --runs 2 --warmup 1 --out cfg
        import torch
        import torch.distributed as dist
        import nsight
        with nsight.annotate("all_reduce"):
            dist.all_reduce(torch.ones(n))
        """,
    )
    assert result.error_in_exec is None, result.error_in_exec
    with RunStore() as store:
        _, records = _latest(store)
    assert [(r.config["n"], r.run_index) for r in records] == [
        (250, 0), (250, 1), (500, 0), (500, 1),
    ]  # fmt: skip
    # Each config's tensor: n float32 values, 2 (N - 1) / N * 4n bytes per rank.
    assert [r.metrics[m.COMM_BYTES] for r in records] == [1000.0] * 2 + [2000.0] * 2
    frame = ip.user_ns["cfg"]
    rows = frame[frame["Metric"] == TIME_METRIC]
    assert list(zip(rows["n"], rows["Rank"], strict=True)) == [
        (250, -1), (250, 0), (250, 1), (500, -1), (500, 0), (500, 1),
    ]  # fmt: skip
    # The cell shows its formatted summary; the DataFrame is only under --out.
    assert result.result is None


def test_runs_reach_the_store_as_each_finishes(ip: InteractiveShell, tmp_path: Path):
    seen = tmp_path / "seen.jsonl"
    ip.user_ns["seen_path"] = str(seen)
    result = run(
        ip,
        """\
        %%nsight --backend cpu --ranks 2 --runs 4 --warmup 0 --quiet
        import json, time
        import torch.distributed as dist
        from nsight_lab.store.run_store import RunStore
        if dist.get_rank() == 0:
            with open(seen_path, "a") as log:
                done = sum(1 for _ in open(seen_path)) if log.tell() else 0
                with RunStore() as reader:  # the notebook's store, read from rank 0
                    deadline = time.monotonic() + 10
                    count = -1
                    while time.monotonic() < deadline:
                        sessions = reader.list_sessions(limit=1)
                        count = len(reader.runs(sessions[0].id)) if sessions else -1
                        if count >= done:
                            break
                        time.sleep(0.01)
                log.write(json.dumps([done, count]) + "\\n")
        """,
    )
    assert result.error_in_exec is None, result.error_in_exec
    lines = [json.loads(x) for x in seen.read_text().splitlines()]
    # While run k ran on rank 0, the k runs before it were already stored.
    assert lines == [[k, k] for k in range(4)]


def test_a_cell_failing_on_one_rank_keeps_the_runs_before(ip: InteractiveShell):
    result = run(
        ip,
        """\
        %%nsight --backend cpu --ranks 2 --runs 5 --warmup 0 --quiet
        import torch.distributed as dist
        calls = globals().get("calls", 0) + 1
        if dist.get_rank() == 1 and calls == 3:
            raise ValueError("rank one broke")
        """,
    )
    error = str(result.error_in_exec)
    assert "rank 1 of 2" in error
    assert "ValueError: rank one broke" in error
    assert "\n" not in error
    with RunStore() as store:
        session, records = _latest(store)
    assert session.status == "failed"
    assert len(records) == 2  # runs 0 and 1 finished on both ranks
    assert all(not math.isnan(r.duration_ns) for r in records)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("--ranks 0", "--ranks: expected a positive integer"),
        ("--ranks two", "--ranks: expected a positive integer"),
        ("--backend cupti --ranks 2", "--ranks 2: the cupti backend cannot time"),
        ("--isolate --ranks 2", "--ranks 2: the ncu backend cannot time"),
        ("--backend cpu --ranks 2 --target-rsd 5", "drop --target-rsd"),
    ],
)
def test_bad_ranks_input_is_one_line_and_stores_nothing(
    ip: InteractiveShell, line: str, expected: str
) -> None:
    result = ip.run_cell(f"%%nsight {line}\npass\n")
    error = str(result.error_in_exec)
    assert expected in error, error
    assert "\n" not in error
    assert type(result.error_in_exec).__name__ == "UsageError"
    with RunStore() as store:
        assert store.list_sessions(limit=1) == []


def test_a_variable_that_cannot_be_shipped_is_named_in_one_line(
    ip: InteractiveShell,
) -> None:
    import threading

    ip.user_ns["lock"] = threading.Lock()
    result = ip.run_cell("%%nsight --backend cpu --ranks 2\nwith lock:\n    pass\n")
    error = str(result.error_in_exec)
    assert error.startswith("cannot ship variable 'lock' (_thread.lock) to the 2 ranks")
    assert error.endswith("create it inside the cell, or drop --ranks")
    assert "\n" not in error
    with RunStore() as store:
        assert store.list_sessions(limit=1) == []
