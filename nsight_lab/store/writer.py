"""Write run records to the store from a background thread, within a stated bound.

A SQLite commit costs 50-100 us; doing it on the profiling thread would leave the GPU
idle between short runs. The profile loop hands each finished run to
:class:`StoreWriter`, whose thread commits them in batches, one transaction each, so
that the store never lags the measurement by more than :data:`LAG_BOUND_S` (100 ms) or
:data:`LAG_BOUND_ROWS` (1,000 runs), whichever comes first:

- a batch is committed at most :data:`MAX_DELAY_S` after its first record arrived (the
  rest of the 100 ms is headroom for the commit itself and a busy CPU);
- it is committed as soon as it holds :data:`BATCH_ROWS` records, however fast they
  arrive (a fast producer does not keep a batch open), and ends with a whole run (the
  rest of the last run's regions join it: :func:`whole_runs`), so a run is stored
  whole or not at all;
- ``put`` queues its records, then blocks while more than :data:`MAX_PENDING_ROWS`
  records are queued or being written: when the disk cannot keep up the measuring
  loop waits, rather than a queue growing without bound and a kill losing all of it
  (queued first, so that a Ctrl-C during the wait loses nothing);
- ``put`` hands the GIL to the writer thread while a batch is being written. Each of a
  commit's statements gives the GIL up and waits to take it back; a profiling thread
  that runs Python between runs keeps it for a whole switch interval (5 ms) each
  time, and a 500-run commit took 110-140 ms. Handed over between runs, the writer's
  share of the GIL comes between runs rather than inside a timed region, and the
  worst lag beside a 4,000 runs/s Python cell on 2 cores went from 115-151 ms to
  40 ms on SQLite and from 260-279 ms to 52 ms on PostgreSQL
  (``benchmarks/writer_lag.py``).

``close()`` drains the queue, so a cell that raises or is interrupted still stores
every run it finished.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from typing import TYPE_CHECKING

from typing_extensions import Self

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from types import TracebackType

    from nsight_lab.contract.records import RunRecord
    from nsight_lab.store.run_store import RunStore

LAG_BOUND_S = 0.1
"""The promise: a run is in the store at most this long after it was handed over."""
LAG_BOUND_ROWS = 1_000
"""The promise: at most this many handed-over records are ever uncommitted."""
MAX_DELAY_S = 0.03
"""Commit a batch at most this long after its first record arrived."""
BATCH_ROWS = 500
"""Commit as soon as a batch holds this many records.

Half of :data:`MAX_PENDING_ROWS`, so the producer fills the next batch while this one
is written instead of waiting for it.
"""
MAX_PENDING_ROWS = LAG_BOUND_ROWS - 1
"""``put`` waits while more than this many records (its own included) are queued or
being written: with the run the measuring loop holds once it returns, a kill loses at
most LAG_BOUND_ROWS."""
PG_LAG_BOUND_S = 0.25
"""The time bound on a PostgreSQL store: the commit is a round trip to the server
(a first one at the start of a session took ~150 ms here), so 100 ms is not promised."""


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[list[int]]:
    """Hold a second Ctrl-C back while what was measured is stored and said.

    After a first Ctrl-C (or any failure) the writer drains its queue and the
    session says what it kept; a second Ctrl-C landing there dropped the "kept N
    runs" line and left the writer draining behind the count. Within this block a
    SIGINT is counted, not raised; a third one raises :class:`KeyboardInterrupt`
    (the user insists: a hung store must stay interruptible). Only the main thread
    can take signals; elsewhere this does nothing. Yields the signals held.
    """
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    previous = signal.getsignal(signal.SIGINT)

    def hold(signum: int, _frame: object) -> None:
        held.append(signum)
        if len(held) >= 2:  # noqa: PLR2004  (the third Ctrl-C of the cell)
            signal.signal(signal.SIGINT, previous)
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, hold)
    try:
        yield held
    finally:
        signal.signal(signal.SIGINT, previous)


def whole_runs(queue: Sequence[RunRecord], most: int) -> int:
    """How many of ``queue``'s first records make a batch of whole runs.

    ``most`` records, and then the rest of the last run's regions: a run is stored
    whole or not at all (one transaction holds all its regions), so a kill -9 or a
    failed next batch never leaves a run with regions a and b but not c. Collectors
    hand each run over whole (one ``put`` holds all of a run's records), so its
    records are next to each other in the queue.
    """
    cut = min(most, len(queue))
    if cut == 0:
        return 0
    last = queue[cut - 1]
    key = (last.session_id, last.config_index, last.run_index)
    while cut < len(queue):
        r = queue[cut]
        if (r.session_id, r.config_index, r.run_index) != key:
            break
        cut += 1
    return cut


class StoreWriter:
    """Background writer of :class:`RunRecord` batches into one :class:`RunStore`."""

    def __init__(self, store: RunStore) -> None:
        """Start the writer thread for ``store``."""
        self._store = store
        self._cond = threading.Condition()
        self._queue: list[RunRecord] = []
        self._first_at = 0.0
        """When the oldest queued record arrived (monotonic seconds)."""
        self._writing = 0
        """Records taken by the thread and not yet committed."""
        self._stopping = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._loop, name="nsight-lab-writer", daemon=True
        )
        self._thread.start()

    @property
    def failed(self) -> BaseException | None:
        """The error that stopped the writer, if a write failed."""
        return self._error

    def put(self, records: Sequence[RunRecord]) -> None:
        """Queue ``records`` for writing; then wait while the writer is too far behind.

        The records are queued before the wait: an interrupt (Ctrl-C) while waiting
        loses none of them, ``close()`` still writes them. The wait ends once at most
        :data:`MAX_PENDING_ROWS` records are queued or being written; a batch larger
        than that waits only until nothing else is pending (it is written in several
        transactions).

        Raises:
            StoreError: An earlier write failed (the profile should stop).
        """
        self._raise_pending()
        if not records:
            return
        with self._cond:
            was_empty = not self._queue
            if was_empty:
                self._first_at = time.monotonic()
            self._queue.extend(records)
            # Wake the thread when it must start a deadline or write a full batch;
            # in between, appending costs no wake-up.
            if was_empty or len(self._queue) >= BATCH_ROWS:
                self._cond.notify_all()
            allowed = max(MAX_PENDING_ROWS, len(records))
            while (
                len(self._queue) + self._writing > allowed
                and self._error is None
                and self._thread.is_alive()
            ):
                self._cond.wait()
        self.between_runs()
        self._raise_pending()

    def between_runs(self) -> None:
        """Hand the GIL to the writer thread if it is writing a batch.

        The profiling thread calls it between two runs (and ``put`` after queuing):
        the writer thread waits for the GIL after every statement, and a busy
        profiling thread would keep it a whole switch interval (5 ms) each time,
        stretching one commit to 100+ ms and taking it back inside a timed region.
        """
        if self._writing:  # read without the lock: a stale answer costs one yield
            time.sleep(0)

    def close(self) -> None:
        """Write everything queued, stop the thread, and re-raise a write failure."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join()
        self._raise_pending()

    def __enter__(self) -> Self:
        """Use as a context manager; ``close()`` on exit."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Drain and stop; a write error is raised only if nothing else is."""
        if exc is None:
            self.close()
            return
        # The cell's own exception wins; a second Ctrl-C waits for the drain.
        with interrupts_deferred(), contextlib.suppress(Exception):
            self.close()

    def _raise_pending(self) -> None:
        # Sticky: after a failed write the thread has stopped, and every later put()
        # must say so rather than queue records nobody will write.
        if self._error is not None:
            raise self._error

    def _take(self) -> list[RunRecord] | None:
        """Wait until a batch is due; take it. ``None`` when stopped and drained."""
        with self._cond:
            while True:
                if self._queue:
                    due = self._first_at + MAX_DELAY_S
                    now = time.monotonic()
                    if self._stopping or len(self._queue) >= BATCH_ROWS or now >= due:
                        cut = whole_runs(self._queue, BATCH_ROWS)
                        batch = self._queue[:cut]
                        del self._queue[:cut]
                        # What stays behind has been waiting since before this batch was
                        # taken: keep the older arrival time so it is not held longer.
                        self._writing = len(batch)
                        return batch
                    self._cond.wait(due - now)
                elif self._stopping:
                    return None
                else:
                    self._cond.wait()

    def _loop(self) -> None:
        while (batch := self._take()) is not None:
            try:
                self._store.add_runs(batch)
            except BaseException as exc:  # noqa: BLE001  (handed to the profiling thread)
                self._error = exc
                with self._cond:  # a failed store takes nothing more; unblock put()
                    self._queue.clear()
                    self._writing = 0
                    self._cond.notify_all()
                return
            with self._cond:
                self._writing = 0
                self._cond.notify_all()
