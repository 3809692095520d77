"""Kill -9 a profiling kernel: the store keeps every run but those of the last moments.

The promise (README, "The store"): the store never lags the measurement by more than
100 ms or 1,000 runs, whichever comes first. A child Python runs a real IPython shell
with ``%load_ext nsight_lab`` and a ``%%nsight --backend cpu`` cell whose tiny body
(tens of thousands of runs a second) appends ``(monotonic time, runs finished)`` to a
log with one unbuffered ``os.write`` per run -- the page cache keeps it through a
SIGKILL. The test kills the child at a random moment and checks that the store holds at
least the runs that had finished 100 ms before the kill (of the process's own running
time, read from that log: see :data:`STALL_S`), and all but at most 1,000 of those
finished at the kill, that they are the first runs (no hole), and that its session is
``interrupted``: on a SQLite file, and on a PostgreSQL store (the kernels then share
one database, each finding its session by its pid). No pace of the host is judged.

On PostgreSQL the writer's commits wait on the server, and a server that the host
starves of CPU answers late: that wait is not in the kernel's running time. A probe
process asks the same server ``SELECT 1`` every 5 ms throughout, and a kill is held to
the 250 ms time bound only when the server answered it within :data:`SERVER_LIMIT_S`
from the oldest run the bound is about to the kill; else to the 1,000-run bound alone
(README, "The store"). A self-check kills a kernel whose writer holds its runs (its
batch delay raised to a minute): the time bound catches it, the row bound does not.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import signal
import sqlite3
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from nsight_lab.store.run_store import RunStore
from nsight_lab.store.writer import LAG_BOUND_ROWS, LAG_BOUND_S, PG_LAG_BOUND_S

if TYPE_CHECKING:
    from nsight_lab.contract.records import SessionInfo

ROOT = Path(__file__).resolve().parents[2]
RUNS = 1_000_000
EARLY_S = 0.5
"""Kills this soon after the cell started are held to the 1,000-run bound only: on 2
loaded cores a session's first commit waited up to 0.45 s."""
STALL_S = 0.010
"""A gap of more than this between two finished runs of the cell is time its process
was not running (the OS ran other jobs, or everything in it was paused): the time
bound is in the process's own running time, read from the cell's own log, so only
the first 10 ms of such a gap count. On a quiet machine the cell finishes a run
every ~0.1 ms and no gap comes near it; on cores saturated by other jobs it is what
the README states for the bound under load. The 1,000-run bound holds regardless."""
ENTRY = struct.Struct("dq")
"""One log entry: ``time.monotonic()`` at the end of a run, and the runs finished."""
PROBE_PAUSE_S = 0.005
"""The probe's pause between two ``SELECT 1`` round trips."""
SERVER_LIMIT_S = 0.020
"""The longest the PostgreSQL server may leave the probe without an answer (beyond its
pause) for a kill to be held to the time bound. A quiet server answers in under 3 ms
(0.1 ms typically); with 3 to 8 busy loops beside it on 2 cores, in up to 12-40 ms. A
commit is about 8 round trips (begin, lock, inserts, counts, notify, commit): at
20 ms each it still fits in the 220 ms the 250 ms bound leaves past the 30 ms batch
delay."""
PROBE_ENTRY = struct.Struct("dd")
"""One probe log entry: ``time.monotonic()`` before and after a round trip."""

CELL = f"""%%nsight --backend cpu --runs {RUNS} --max-time 60 --warmup 0 --quiet
_n += 1
_write(_fd, _pack(_now(), _n))
_after()
"""
"""The profiled cell: a tiny body that logs each run it finishes (``_after`` does
nothing, but in the self-check, where it paces the runs)."""

PROBE = f"""
import os, struct, sys, time
import psycopg
pack = struct.Struct("dd").pack
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
with psycopg.connect(sys.argv[1], autocommit=True) as conn:
    while True:
        start = time.monotonic()
        conn.execute("SELECT 1").fetchone()
        os.write(fd, pack(start, time.monotonic()))
        time.sleep({PROBE_PAUSE_S})
"""
"""Round trips to the PostgreSQL server at ``argv[1]``, logged to ``argv[2]``: what the
server was doing around each kill, measured apart from the kernels."""

ZYGOTE = """
import os, signal, struct, sys, time
import IPython.testing.globalipapp
import nsight_lab.magic, nsight_lab.results, nsight_lab.runner
import nsight_lab.store.run_store, nsight_lab.store.writer
try:
    import torch  # what the cell's backend probe imports: import it once, here
except ImportError:
    pass
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the OS
for line in sys.stdin:
    home, log, store, hold, pace = line.rstrip("\\n").split("\\t")
    pid = os.fork()
    if pid:
        sys.stdout.write(str(pid) + "\\n")
        sys.stdout.flush()
        continue
    os.environ["NSIGHT_LAB_HOME"] = home
    if store:
        os.environ["NSIGHT_LAB_STORE"] = store
    if hold:  # the self-check's faulty writer: it holds a batch this long
        nsight_lab.store.writer.MAX_DELAY_S = float(hold)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # the pipe is for pids only
    os.dup2(os.open(os.path.join(home, "stderr.txt"), os.O_WRONLY | os.O_CREAT), 2)
    ip = IPython.testing.globalipapp.start_ipython()
    ip.run_line_magic("load_ext", "nsight_lab")
    ip.user_ns.update(
        _fd=os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND),
        _write=os.write, _pack=struct.Struct("dq").pack, _now=time.monotonic, _n=0,
        _after=(lambda: time.sleep(float(pace))) if pace else (lambda: None),
    )
    ip.run_cell(sys.argv[1])
    time.sleep(600)  # a cell that finished before the kill still waits for it
    os._exit(0)
"""
"""Forks one profiling kernel per line of stdin (``HOME<TAB>LOG<TAB>STORE<TAB>HOLD<TAB>
PACE``, STORE empty for the SQLite file in HOME; HOLD and PACE empty but in the
self-check: the writer's batch delay and a sleep after each run); prints its pid.

Each kernel is a fresh process running a real IPython shell; forking them from one
process that has already imported IPython, nsight_lab and torch spares each kill
seconds of start-up.
"""


class Zygote:
    """The forking parent process; thread-safe."""

    def __init__(self, hold: str = "", pace: str = "") -> None:
        """Start it; its kernels' writers hold a batch ``hold`` s, their cells sleep
        ``pace`` s after each run (both empty but in the self-check)."""
        self._fault = f"{hold}\t{pace}"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p
            ),
        }
        self._proc = subprocess.Popen(  # noqa: S603  (our own code)
            [sys.executable, "-c", ZYGOTE, CELL],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._lock = threading.Lock()

    def spawn(self, home: Path, log: Path, store: str = "") -> int:
        """Fork a kernel profiling into ``home`` (or ``store``); return its pid."""
        assert self._proc.stdin is not None
        assert self._proc.stdout is not None
        with self._lock:
            self._proc.stdin.write(f"{home}\t{log}\t{store}\t{self._fault}\n")
            self._proc.stdin.flush()
            return int(self._proc.stdout.readline())

    def close(self) -> None:
        """Stop it."""
        self._proc.kill()
        self._proc.wait(timeout=30)
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                stream.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _entries(log: Path, entry: struct.Struct) -> list[tuple[Any, ...]]:
    data = log.read_bytes() if log.exists() else b""
    whole = len(data) - len(data) % entry.size  # a torn last entry is not counted
    return list(entry.iter_unpack(data[:whole]))


class Probe:
    """``SELECT 1`` round trips to a PostgreSQL server, from a process of its own."""

    def __init__(self, url: str, log: Path) -> None:
        """Start asking the server at ``url``, logging to ``log``."""
        self._log = log
        with (log.parent / "probe-stderr.txt").open("wb") as err:
            self._proc = subprocess.Popen(  # noqa: S603  (our own code)
                [sys.executable, "-c", PROBE, url, str(log)], stderr=err
            )

    def longest_wait(self, start: float, end: float) -> float:
        """The longest the server left the probe without an answer from ``start`` to
        ``end`` (monotonic seconds), past the probe's own pause; ``inf`` when no answer
        came before ``start`` or after ``end`` (waits up to 30 s for the one after).

        Raises:
            AssertionError: The probe process stopped (its stderr says why).
        """
        deadline = time.monotonic() + 30
        while True:
            answers = [at for _, at in _entries(self._log, PROBE_ENTRY)]
            if answers and answers[-1] > end:
                break
            assert self._proc.poll() is None, (
                "the probe stopped: "
                + (self._log.parent / "probe-stderr.txt").read_text()[-2000:]
            )
            if time.monotonic() > deadline:
                return math.inf
            time.sleep(0.01)
        before = [at for at in answers if at <= start]
        if not before:
            return math.inf
        marks = [before[-1], *(at for at in answers if start < at <= end)]
        marks.append(next(at for at in answers if at > end))
        return float(max(b - a for a, b in itertools.pairwise(marks))) - PROBE_PAUSE_S

    def close(self) -> None:
        """Stop it."""
        self._proc.kill()
        self._proc.wait(timeout=30)


@dataclass
class Kill:
    """What one kill left behind."""

    delay_s: float
    bound_s: float
    """The time bound of the store's engine (100 ms; 250 ms on PostgreSQL)."""
    finished: int
    """Runs the body had finished when the kill was sent."""
    finished_before: int
    """Runs the body had finished ``bound_s`` (of its running time) before the kill."""
    rate: float
    """Runs per second over the last ``bound_s`` before the kill (or the cell's life, if
    shorter): the pace of the runs the bound is about, past the session's start-up."""
    server_wait_s: float | None
    """PostgreSQL: the longest the server left the probe without an answer, from when
    run ``finished_before`` finished to the kill (``None``: a SQLite store)."""
    stored: int
    status: str
    integrity: str
    first_runs: bool
    """The stored runs are runs 0 .. stored - 1: none lost before the last."""

    def rows_only(self) -> str | None:
        """Why this kill is held to the 1,000-run bound only (``None``: to both)."""
        if self.delay_s < EARLY_S:
            return f"killed in the session's first {EARLY_S} s"
        if self.server_wait_s is not None and self.server_wait_s > SERVER_LIMIT_S:
            return (
                f"the server left a round trip {self.server_wait_s * 1e3:.0f} ms "
                f"unanswered (limit {SERVER_LIMIT_S * 1e3:.0f} ms)"
            )
        return None

    def broken(self) -> list[str]:
        """The bounds this kill broke."""
        broken = []
        if self.rows_only() is None and self.stored < self.finished_before:
            broken.append(
                f"time bound: {self.finished_before} runs had finished "
                f"{self.bound_s * 1e3:.0f} ms before the kill, {self.stored} stored"
            )
        if self.stored < self.finished - LAG_BOUND_ROWS:
            broken.append(
                f"1,000-run bound: {self.finished} runs had finished at the kill, "
                f"{self.stored} stored"
            )
        return broken

    def line(self) -> str:
        """One line for the test's output."""
        server = (
            ""
            if self.server_wait_s is None
            else f", server's longest wait {self.server_wait_s * 1e3:.1f} ms"
        )
        return (
            f"kill at +{self.delay_s:.2f} s: {self.stored} stored, "
            f"{self.finished_before} finished {self.bound_s * 1e3:.0f} ms before "
            f"({self.finished} at the kill, {self.rate:,.0f} runs/s{server}), "
            f"{self.status}; held to "
            + (
                "both bounds"
                if self.rows_only() is None
                else f"the 1,000-run bound only: {self.rows_only()}"
            )
        )


def _kill_one(
    zygote: Zygote,
    home: Path,
    delay_s: float,
    store: str,
    probe: Probe | None,
) -> Kill:
    home.mkdir(parents=True)
    log = home / "finished.log"
    pid = zygote.spawn(home, log, store)
    try:
        deadline = time.monotonic() + 60
        while not (log.exists() and log.stat().st_size >= ENTRY.size):
            assert _alive(pid), (home / "stderr.txt").read_text()
            assert time.monotonic() < deadline, "the cell never started"
            time.sleep(0.01)
        time.sleep(delay_s)
        killed_at = time.monotonic()
    finally:
        os.kill(pid, signal.SIGKILL)
    while _alive(pid):  # reaped by the OS (the zygote ignores SIGCHLD)
        time.sleep(0.01)
    entries = _entries(log, ENTRY)
    bound_s = PG_LAG_BOUND_S if store else LAG_BOUND_S
    finished_before, bound_from = _finished_before(entries, killed_at, bound_s)
    first_at = entries[0][0]
    finished = max((n for t, n in entries if t <= killed_at), default=0)
    integrity = "ok"  # PostgreSQL's own business
    if not store:
        with sqlite3.connect(home / "store.sqlite") as raw:
            integrity = str(raw.execute("PRAGMA integrity_check").fetchone()[0])
    with RunStore(store or home / "store.sqlite") as opened:
        (session,) = _session_of(opened, pid)
        # PostgreSQL ends the killed kernel's backend, and its session lock, as the
        # socket closes: a moment after the kill.
        deadline = time.monotonic() + 10
        while session.status == "running" and time.monotonic() < deadline:
            opened.mark_interrupted()
            (session,) = _session_of(opened, pid)
            time.sleep(0.02)
        stored = opened.run_counts([session.id])[session.id]
        indices = sorted(r.run_index for r in opened.runs(session.id))
        assert stored == len(indices)  # the count is the rows
        status = session.status
    return Kill(
        delay_s=delay_s,
        bound_s=bound_s,
        finished=finished,
        finished_before=finished_before,
        rate=(finished - finished_before)
        / max(min(killed_at - first_at, bound_s), 1e-9),
        # From when the oldest run the time bound is about finished to the kill:
        # that run's commit happened (or should have) in this stretch.
        server_wait_s=None
        if probe is None
        else probe.longest_wait(bound_from, killed_at),
        stored=stored,
        status=status,
        integrity=integrity,
        first_runs=indices == list(range(len(indices))),
    )


def _finished_before(
    entries: list[tuple[Any, ...]], killed_at: float, bound_s: float
) -> tuple[int, float]:
    """Runs finished ``bound_s`` of the process's running time before the kill, and
    when the last of them finished (monotonic seconds).

    Walking back from the kill through the cell's own log, each gap between two
    runs counts at most :data:`STALL_S` (the rest is time the process did not run).
    """
    running = 0.0
    later = killed_at
    for at, finished in reversed([e for e in entries if e[0] <= killed_at]):
        running += min(later - at, STALL_S)
        if running >= bound_s:
            return int(finished), float(at)
        later = at
    return 0, entries[0][0] if entries else killed_at


def _session_of(store: RunStore, pid: int) -> list[SessionInfo]:
    return [s for s in store.list_sessions(limit=None) if s.pid == pid]


def _kill_all(
    tmp_path: Path, delays: list[float], shared: str, hold: str = "", pace: str = ""
) -> list[Kill]:
    """Kill a kernel at each of ``delays``, two at a time."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    zygote = Zygote(hold, pace)
    probe = Probe(shared, tmp_path / "probe.log") if shared else None
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            return list(
                pool.map(
                    lambda ik: _kill_one(
                        zygote, tmp_path / f"k{ik[0]}", ik[1], shared, probe
                    ),
                    enumerate(delays),
                )
            )
    finally:
        zygote.close()
        if probe is not None:
            probe.close()


def _judged(kills: list[Kill]) -> str:
    """How many kills were held to which bound, and why."""
    both = sum(k.rows_only() is None for k in kills)
    reasons = Counter(
        "early" if "first" in why else "server"
        for k in kills
        if (why := k.rows_only()) is not None
    )
    waits = [k.server_wait_s for k in kills if k.server_wait_s is not None]
    server = (
        f"; the PostgreSQL server's longest wait around a kill: "
        f"{max(waits) * 1e3:.1f} ms (median {sorted(waits)[len(waits) // 2] * 1e3:.1f})"
        if waits
        else ""
    )
    return (
        f"{len(kills)} kills: {both} held to the time bound and the 1,000-run bound, "
        f"{len(kills) - both} to the 1,000-run bound only ("
        f"{reasons['early']} killed in the session's first "
        f"{EARLY_S} s, {reasons['server']} with the server starved: a round trip "
        f"unanswered over {SERVER_LIMIT_S * 1e3:.0f} ms){server}"
    )


def test_kill_9_loses_at_most_the_stated_bound(
    tmp_path: Path, store_location: Path | str
) -> None:
    """20 kills at a random 0.2-3 s into a fast cell: the bounds hold at every one."""
    shared = store_location if isinstance(store_location, str) else ""
    rng = random.Random(8)  # noqa: S311  (not cryptography)
    kills = _kill_all(tmp_path, [rng.uniform(0.2, 3.0) for _ in range(20)], shared)
    judged = _judged(kills)
    print("\n".join(k.line() for k in kills))  # noqa: T201
    worst = max(k.finished_before - k.stored for k in kills)
    print(f"worst loss against the runs finished a time bound before the kill: {worst}")  # noqa: T201
    print(judged)  # noqa: T201
    for k in kills:
        line = f"{k.line()}\n{judged}"
        assert k.integrity == "ok", line
        assert k.first_runs, line
        assert k.stored <= k.finished or k.status == "completed", line
        if k.finished < RUNS:
            assert k.status == "interrupted", line
        else:  # the runs had ended (the kill may still beat the session's end)
            assert k.stored == RUNS, line
            assert k.status in {"completed", "interrupted"}, line
        # The README's bound: nothing that finished 100 ms before the kill is lost
        # (250 ms on PostgreSQL: the server's commit round trips), past a session's
        # first half second (its first commit waited up to 0.45 s on 2 loaded cores)
        # and, on PostgreSQL, while the server answered; never more than 1,000 runs.
        assert not k.broken(), f"{'; '.join(k.broken())}\n{line}"
    # How fast the cell ran (10,000+ runs/s on a quiet machine, 5,000+ on PostgreSQL)
    # is a pace of the host, printed above and benchmarked by benchmarks/store_lag.py:
    # the bounds are judged whatever it was.


def test_a_writer_that_holds_its_runs_is_caught_by_the_time_bound(
    tmp_path: Path, store_location: Path | str
) -> None:
    """The check above can fail: a writer whose batch delay is a minute, under a cell
    paced to ~300 runs/s (its batches never fill to 500), killed 1 s in, has stored
    none of the ~250 runs finished a time bound before the kill; fewer than 1,000
    had finished, so the row bound alone would pass it. On PostgreSQL, up to three
    kills to find the server answering (else skipped, saying so)."""
    shared = store_location if isinstance(store_location, str) else ""
    for attempt in range(3):
        (k,) = _kill_all(
            tmp_path / f"try{attempt}", [1.0], shared, hold="60", pace="0.003"
        )
        print(k.line())  # noqa: T201
        if k.rows_only() is None:
            break
    else:
        pytest.skip(f"the server was starved at three kills: {k.rows_only()}")
    assert k.finished < LAG_BOUND_ROWS, k.line()
    assert k.stored < k.finished_before, k.line()
    assert [b.split(":")[0] for b in k.broken()] == ["time bound"], k.line()
