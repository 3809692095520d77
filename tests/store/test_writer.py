"""Tests of nsight_lab.store.writer: the store's lag is bounded (on both engines)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.errors import StoreError
from nsight_lab.session import kept_text, stored_runs
from nsight_lab.store import writer as writer_module
from nsight_lab.store.run_store import RunStore
from nsight_lab.store.writer import LAG_BOUND_ROWS, LAG_BOUND_S, StoreWriter

# What a unit test on a shared CI machine allows on top of the writer's 100 ms (see
# _writer_lag.py beside this, which reports the same figure); the real lag is
# benchmarked.
SCHEDULING_SLACK_S = 0.2


def _record(session_id: int, run_index: int) -> RunRecord:
    return RunRecord(
        session_id=session_id,
        config_index=0,
        config={"n": 1024},
        run_index=run_index,
        annotation="cell",
        duration_ns=1000.0 + run_index,
        backend="cpu",
        telemetry=Telemetry(),
    )


def _lag_violations(db: Path | str, pace_s: float) -> tuple[list[str], str]:
    """Run tests/store/_writer_lag.py in a fresh process; its late polls and summary."""
    done = subprocess.run(  # noqa: S603  (our own script, with this Python)
        [sys.executable, str(Path(__file__).with_name("_writer_lag.py")), str(db),
         str(pace_s)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["slack_s"] == SCHEDULING_SLACK_S  # one allowance for both tests
    return result["late"], result["summary"]


@pytest.mark.parametrize("pace_s", [0.0, 0.00025], ids=["flat-out", "4000-per-s"])
def test_producer_is_committed_within_the_bound(
    store_location: Path | str, pace_s: float
) -> None:
    """One-run batches, flat out or paced: a second connection sees each in time.

    Flat out, the 1,000-run bound binds; at 4,000 runs/s a batch never fills and the
    100 ms bound binds. At every poll at time ``t`` (taken before the read, so the
    read's snapshot is no older), the committed count must cover every run handed
    over by ``t - 100 ms`` (``t - 250 ms`` on PostgreSQL, the bound the writer states
    for it: ``PG_LAG_BOUND_S``) (plus a CI scheduling slack of 200 ms, see
    ``_writer_lag.SCHEDULING_SLACK_S``) and all but the last 1,000 handed over by ``t``.

    A CI machine of 2 busy cores can starve every thread of the process for tens of
    milliseconds, which no writer can make up for: an attempt that breaks the bound is
    retried, twice. A writer that holds batches open (the old one: seconds) fails all
    three.
    """
    failures: list[str] = []
    for attempt in range(3):
        where = (
            store_location
            if isinstance(store_location, str)  # PostgreSQL: a new session each time
            else store_location.with_name(f"store{attempt}.sqlite")
        )
        late, summary = _lag_violations(where, pace_s)
        print(summary)  # noqa: T201
        if not late:
            return
        failures.append(f"attempt {attempt + 1}: {summary}; {late[0]}")
    pytest.fail("; ".join(failures))


def test_slow_producer_is_committed_within_the_time_bound(
    store_location: Path | str,
) -> None:
    """A run every 10 ms never fills a batch; each still lands within 100 ms."""
    db = store_location
    with RunStore(db) as store, RunStore(db) as reader:
        sid = store.create_session(backend="cpu").id
        with StoreWriter(store) as writer:
            for i in range(5):
                writer.put([_record(sid, i)])
                handed = time.monotonic()
                seen = 0
                while seen <= i and time.monotonic() - handed < 1.0:
                    time.sleep(0.002)
                    seen = reader.run_counts([sid]).get(sid, 0)
                lag = time.monotonic() - handed
                assert seen == i + 1
                assert lag < LAG_BOUND_S + SCHEDULING_SLACK_S, (
                    f"run {i}: {lag * 1e3:.0f} ms"
                )


def test_put_blocks_while_the_writer_is_behind(
    store_location: Path | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stalled store makes put() wait: the queue never holds more than the bound."""
    gate = threading.Event()
    with RunStore(store_location) as store:
        sid = store.create_session(backend="cpu").id
        real_add = store.add_runs

        def slow_add(records: list[RunRecord]) -> list[int]:
            gate.wait(5)
            return real_add(records)

        monkeypatch.setattr(store, "add_runs", slow_add)
        writer = StoreWriter(store)
        handed = 0

        def produce() -> None:
            nonlocal handed
            for i in range(3 * LAG_BOUND_ROWS):
                writer.put([_record(sid, i)])
                handed += 1

        producer = threading.Thread(target=produce)
        producer.start()
        time.sleep(0.3)
        assert producer.is_alive()  # blocked on back-pressure, not queueing forever
        assert handed <= writer_module.MAX_PENDING_ROWS
        gate.set()
        producer.join(10)
        writer.close()
        assert store.run_counts([sid]) == {sid: 3 * LAG_BOUND_ROWS}
        runs = store.runs(sid)
        assert [r.run_index for r in runs] == list(range(3 * LAG_BOUND_ROWS))


def test_put_hands_the_gil_over_only_while_a_batch_is_written(
    store_location: Path | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """put() yields (``time.sleep(0)``) while the writer commits, and only then.

    Without it a producer that keeps the GIL between runs makes every statement of a
    commit wait a switch interval (benchmarks/writer_lag.py: 151 ms worst lag on
    SQLite, 279 ms on PostgreSQL, against 40 and 52 ms with it).
    """
    yields: list[float] = []
    monkeypatch.setattr(
        writer_module,
        "time",
        types.SimpleNamespace(monotonic=time.monotonic, sleep=yields.append),
    )
    gate = threading.Event()
    entered = threading.Event()
    with RunStore(store_location) as store:
        sid = store.create_session(backend="cpu").id
        real_add = store.add_runs

        def held_add(records: list[RunRecord]) -> list[int]:
            entered.set()
            gate.wait(5)
            return real_add(records)

        monkeypatch.setattr(store, "add_runs", held_add)
        with StoreWriter(store) as writer:
            writer.put([_record(sid, 0)])  # nothing is being written yet
            assert yields == []
            assert entered.wait(5)  # the writer took the batch and is writing it
            writer.put([_record(sid, 1)])
            writer.put([_record(sid, 2)])
            assert yields == [0, 0]
            gate.set()
        assert store.run_counts([sid]) == {sid: 3}


def test_a_failed_write_stops_the_producer(store_location: Path | str) -> None:
    """After a write fails, put() raises instead of queueing records nobody writes."""
    store = RunStore(store_location)
    sid = store.create_session(backend="cpu").id
    writer = StoreWriter(store)
    store.close()
    writer.put([_record(sid, 0)])
    deadline = time.monotonic() + 5
    while writer.failed is None and time.monotonic() < deadline:
        time.sleep(0.001)
    with pytest.raises(StoreError):
        writer.put([_record(sid, 1)])
    with pytest.raises(StoreError):
        writer.close()


def test_an_interrupt_while_put_waits_loses_no_run(
    store_location: Path | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while put() waits on a full queue: the batch was queued first (issue 22).

    The profile loop keeps what it handed over (``SessionTarget.sink``) and, once the
    writer is closed, says how many runs the store kept; before, the batch whose put()
    was interrupted was never queued, and the store held one run fewer than handed.
    """
    regions = ("load", "matmul", "store")
    gate = threading.Event()
    with RunStore(store_location) as store:
        sid = store.create_session(backend="cpu").id
        real_add = store.add_runs

        def held_add(records: list[RunRecord]) -> list[int]:
            gate.wait(10)  # a slow disk: the queue fills up behind this batch
            return real_add(records)

        monkeypatch.setattr(store, "add_runs", held_add)
        handed: list[RunRecord] = []
        interrupted: list[int] = []
        producer = threading.get_ident()

        def profile_loop() -> None:
            with StoreWriter(store) as writer:
                real_wait = writer._cond.wait  # noqa: SLF001  (the wait to interrupt)

                def wait(timeout: float | None = None) -> bool:
                    if threading.get_ident() == producer and not interrupted:
                        interrupted.append(len(handed))
                        gate.set()  # the store is fine; only the wait is cut short
                        raise KeyboardInterrupt
                    return real_wait(timeout)

                monkeypatch.setattr(writer._cond, "wait", wait)  # noqa: SLF001
                for i in range(2 * LAG_BOUND_ROWS):
                    batch = [
                        dataclasses.replace(_record(sid, i), annotation=name)
                        for name in regions
                    ]
                    handed.extend(batch)  # as SessionTarget.sink does, then put()
                    writer.put(batch)

        with pytest.raises(KeyboardInterrupt):
            profile_loop()
        assert interrupted  # the queue was full: put() waited and was interrupted
        assert interrupted[0] == len(handed) > writer_module.MAX_PENDING_ROWS

        # Every run handed over is committed, the interrupted put's included ...
        stored = store.runs(sid)
        assert [(r.run_index, r.annotation) for r in stored] == [
            (r.run_index, r.annotation) for r in handed
        ]
        runs = len(handed) // len(regions)
        assert store.runs_done(sid)[0] == runs
        # ... and the message the interrupted cell prints says so.
        said = kept_text(sid, stored_runs(store, sid), handed)
        assert said == f"session {sid} kept with its {runs} runs: %nsight show {sid}"
