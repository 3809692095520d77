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
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

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

CELL = f"""%%nsight --backend cpu --runs {RUNS} --max-time 60 --warmup 0 --quiet
_n += 1
_write(_fd, _pack(_now(), _n))
"""
"""The profiled cell: a tiny body that logs each run it finishes."""

ZYGOTE = """
import os, signal, struct, sys, time
import IPython.testing.globalipapp
import nsight_lab.magic, nsight_lab.results, nsight_lab.runner
import nsight_lab.store.run_store
try:
    import torch  # what the cell's backend probe imports: import it once, here
except ImportError:
    pass
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the OS
for line in sys.stdin:
    home, log, store = line.rstrip("\\n").split("\\t")
    pid = os.fork()
    if pid:
        sys.stdout.write(str(pid) + "\\n")
        sys.stdout.flush()
        continue
    os.environ["NSIGHT_LAB_HOME"] = home
    if store:
        os.environ["NSIGHT_LAB_STORE"] = store
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # the pipe is for pids only
    os.dup2(os.open(os.path.join(home, "stderr.txt"), os.O_WRONLY | os.O_CREAT), 2)
    ip = IPython.testing.globalipapp.start_ipython()
    ip.run_line_magic("load_ext", "nsight_lab")
    ip.user_ns.update(
        _fd=os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND),
        _write=os.write, _pack=struct.Struct("dq").pack, _now=time.monotonic, _n=0,
    )
    ip.run_cell(sys.argv[1])
    time.sleep(600)  # a cell that finished before the kill still waits for it
    os._exit(0)
"""
"""Forks one profiling kernel per line of stdin (``HOME<TAB>LOG<TAB>STORE``, STORE
empty for the SQLite file in HOME); prints its pid.

Each kernel is a fresh process running a real IPython shell; forking them from one
process that has already imported IPython, nsight_lab and torch spares each kill
seconds of start-up.
"""


class Zygote:
    """The forking parent process; thread-safe."""

    def __init__(self) -> None:
        """Start it."""
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
            self._proc.stdin.write(f"{home}\t{log}\t{store}\n")
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


@dataclass
class Kill:
    """What one kill left behind."""

    delay_s: float
    finished: int
    """Runs the body had finished when the kill was sent."""
    finished_before: int
    """Runs the body had finished 100 ms (of its running time) before the kill."""
    finished_before_pg: int
    """Runs the body had finished 250 ms before the kill (the PostgreSQL bound)."""
    rate: float
    """Runs per second over the last 250 ms before the kill (or the cell's life, if
    shorter): the pace of the runs the bound is about, past the session's start-up."""
    stored: int
    status: str
    integrity: str
    first_runs: bool
    """The stored runs are runs 0 .. stored - 1: none lost before the last."""


def _finished(log: Path) -> list[tuple[float, int]]:
    data = log.read_bytes() if log.exists() else b""
    whole = len(data) - len(data) % ENTRY.size  # a torn last entry is not counted
    return list(ENTRY.iter_unpack(data[:whole]))


def _kill_one(zygote: Zygote, home: Path, delay_s: float, store: str) -> Kill:
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
    entries = _finished(log)
    finished_before = _finished_before(entries, killed_at, LAG_BOUND_S)
    finished_before_pg = _finished_before(entries, killed_at, PG_LAG_BOUND_S)
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
        finished=finished,
        finished_before=finished_before,
        finished_before_pg=finished_before_pg,
        rate=(finished - finished_before_pg)
        / max(min(killed_at - first_at, PG_LAG_BOUND_S), 1e-9),
        stored=stored,
        status=status,
        integrity=integrity,
        first_runs=indices == list(range(len(indices))),
    )


def _finished_before(
    entries: list[tuple[float, int]], killed_at: float, bound_s: float
) -> int:
    """Runs finished ``bound_s`` of the process's running time before the kill.

    Walking back from the kill through the cell's own log, each gap between two
    runs counts at most :data:`STALL_S` (the rest is time the process did not run).
    """
    running = 0.0
    later = killed_at
    for at, finished in reversed([e for e in entries if e[0] <= killed_at]):
        running += min(later - at, STALL_S)
        if running >= bound_s:
            return finished
        later = at
    return 0


def _session_of(store: RunStore, pid: int) -> list[SessionInfo]:
    return [s for s in store.list_sessions(limit=None) if s.pid == pid]


def test_kill_9_loses_at_most_the_stated_bound(
    tmp_path: Path, store_location: Path | str
) -> None:
    """20 kills at a random 0.2-3 s into a fast cell: the bound holds at every one."""
    shared = store_location if isinstance(store_location, str) else ""
    rng = random.Random(8)  # noqa: S311  (not cryptography)
    delays = [rng.uniform(0.2, 3.0) for _ in range(20)]
    zygote = Zygote()
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            kills = list(
                pool.map(
                    lambda ik: _kill_one(zygote, tmp_path / f"k{ik[0]}", ik[1], shared),
                    enumerate(delays),
                )
            )
    finally:
        zygote.close()
    lines = [
        f"kill at +{k.delay_s:.2f} s: {k.stored} stored, {k.finished_before} finished "
        f"100 ms before ({k.finished} at the kill, {k.rate:,.0f} runs/s), {k.status}"
        for k in kills
    ]
    print("\n".join(lines))  # noqa: T201
    worst = max(k.finished_before - k.stored for k in kills)
    print(f"worst loss against runs finished 100 ms before the kill: {worst}")  # noqa: T201
    for k, line in zip(kills, lines, strict=True):
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
        # first half second (its first commit waited up to 0.45 s on 2 loaded cores),
        # and never more than 1,000 runs at any time.
        if k.delay_s >= EARLY_S:
            before = k.finished_before_pg if shared else k.finished_before
            assert k.stored >= before, line
        assert k.stored >= k.finished - LAG_BOUND_ROWS, line
    # How fast the cell ran (10,000+ runs/s on a quiet machine, 5,000+ on PostgreSQL)
    # is a pace of the host, printed above and benchmarked by benchmarks/store_lag.py:
    # the bounds are judged whatever it was.
