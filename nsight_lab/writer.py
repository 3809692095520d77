"""Write run records to the store from a background thread.

A SQLite commit costs 50-100 us; doing it on the profiling thread would leave the GPU
idle between short runs. The profile loop hands batches to :class:`StoreWriter`, whose
thread commits what arrives within 20 ms in one transaction, so a run is in the
store a few tens of milliseconds after it finishes. ``close()`` drains the queue, so a
cell that raises or is interrupted still stores every run it finished.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from typing import TYPE_CHECKING

from typing_extensions import Self

if TYPE_CHECKING:
    from types import TracebackType

    from nsight_lab.records import RunRecord
    from nsight_lab.store import RunStore

_STOP = None
COALESCE_S = 0.02
"""After the first waiting batch, collect for this long before one commit.

Batching spares the GIL and the disk.
"""


class StoreWriter:
    """Background writer of :class:`RunRecord` batches into one :class:`RunStore`."""

    def __init__(self, store: RunStore) -> None:
        """Start the writer thread for ``store``."""
        self._store = store
        self._queue: queue.SimpleQueue[list[RunRecord] | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._loop, name="nsight-lab-writer", daemon=True
        )
        self._thread.start()

    def put(self, records: list[RunRecord]) -> None:
        """Queue ``records`` for writing.

        Raises:
            StoreError: An earlier write failed (the profile should stop).
        """
        self._raise_pending()
        self._queue.put(list(records))

    def close(self) -> None:
        """Write everything queued, stop the thread, and re-raise a write failure."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
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
        with contextlib.suppress(Exception):  # the cell's own exception wins
            self.close()

    def _raise_pending(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _loop(self) -> None:
        stop = False
        while not stop:
            batch = self._queue.get()
            if batch is _STOP:
                break
            pending = list(batch)
            deadline = time.monotonic() + COALESCE_S
            while True:  # coalesce what arrives shortly after into one transaction
                try:
                    more = self._queue.get(
                        timeout=max(0.0, deadline - time.monotonic())
                    )
                except queue.Empty:
                    break
                if more is _STOP:
                    stop = True
                    break
                pending.extend(more)
            try:
                self._store.add_runs(pending)
            except BaseException as exc:  # noqa: BLE001  (handed to the profiling thread)
                self._error = exc
