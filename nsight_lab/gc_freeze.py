"""Long-lived objects moved out of the cyclic garbage collector's reach, as they grow.

A full (generation 2) collection walks every tracked object the process holds and
stops every thread while it does (the GIL). A profile's records, or the server's
followed view models, grow by thousands of objects a second; left to the collector,
each full collection walked all of them: 100 ms and more in the kernel at 100,000
runs, 307-408 ms in the server at 1,000,000 runs (the live view's refresh p99,
``benchmarks/results/live_deltas_issue32.md``). ``gc.freeze()`` moves everything
tracked now to a permanent generation in O(1): later collections skip it. Frozen
objects are still freed by reference counting when dropped (records, views and
windows are acyclic); only cyclic garbage made before a freeze waits for
:meth:`FreezeGuard.release`, which puts everything back in the oldest generation.

Used only where nothing else in the process freezes (``gc.get_freeze_count()`` is 0
when the guard starts): another user's freeze is never undone.
"""

from __future__ import annotations

import gc
import threading

__all__ = ["FreezeGuard"]


class FreezeGuard:
    """Freeze every ``every`` new objects of a growing collection; release at the end.

    Args:
        every: How many new items (records, runs) between two freezes.
    """

    def __init__(self, every: int) -> None:
        """A guard that has not started (see :meth:`start`)."""
        self.every = every
        self._on = False
        self._frozen_at = 0
        self._lock = threading.Lock()

    @property
    def on(self) -> bool:
        """Whether this guard froze and will release."""
        return self._on

    def start(self) -> bool:
        """Freeze now, if nothing else in the process uses freezing; say whether."""
        with self._lock:
            if not self._on and gc.get_freeze_count() == 0:
                self._on = True
                self._frozen_at = 0
                gc.freeze()
            return self._on

    def grew(self, count: int) -> None:
        """The collection holds ``count`` items: freeze if ``every`` more came."""
        if self._on and count >= self._frozen_at + self.every:
            with self._lock:
                if self._on:
                    gc.freeze()  # O(1): the generations move to the permanent one
                    self._frozen_at = count

    def __enter__(self) -> FreezeGuard:  # noqa: PYI034  (never subclassed)
        """:meth:`start`, for a ``with`` block that :meth:`release` ends."""
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """:meth:`release`."""
        self.release()

    def release(self) -> None:
        """Put the frozen objects back under the collector (once)."""
        with self._lock:
            if self._on:
                gc.unfreeze()
                self._on = False
