"""Work too heavy for a thread of the server: large pages, comparisons, exports.

Encoding thousands of runs creates about a million Python objects; in a worker
*thread* the garbage collector's passes over them hold the GIL, and every other
request of the Jupyter server waits. So that work runs in a small pool of child
processes (``spawn``: the server's threads are never forked), which open the store
themselves and send back JSON text or a file's path. A session's view (figures,
summary) is not built here: the view model keeps it up to date in the server
(:mod:`nsight_lab.viewmodel.cache`).

:class:`Workers` holds the pool; the extension owns one (in its settings, see
:func:`nsight_lab.server.setup_handlers`) and starts it as it loads
(:meth:`Workers.warm`, in the background): started by the first request instead,
that request waited 2.5 s for it on the 2-core machine.
"""

from __future__ import annotations

import functools
import importlib
import multiprocessing
import sys
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any, TypeVar

from tornado.ioloop import IOLoop

from nsight_lab.errors import StoreError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["HEAVY", "WORKERS", "Workers"]

WORKERS = 2
"""Child processes at most; more heavy requests than this wait their turn."""

HEAVY = (
    "pandas",
    "nsight_lab.viewmodel.jobs",
    "nsight_lab.store.run_store",
    "nsight_lab.viewmodel.compare",
    "nsight_lab.server.downloads",
)
"""What :meth:`Workers.warm` has each child import (loaded then, not on a request).

The comparison's code and the export's module too: each child's first compare or
export imported them (40 and 110 ms on the 2-core machine; issue 32)."""

_T = TypeVar("_T")


def import_heavy() -> list[str]:
    """Import :data:`HEAVY` (in a child); return those it holds."""
    for name in HEAVY:
        importlib.import_module(name)
    return sorted(m for m in HEAVY if m in sys.modules)


class Workers:
    """The server's pool of child processes (started afresh after a child died)."""

    def __init__(self, workers: int = WORKERS) -> None:
        """Hold no pool yet."""
        self.workers = workers
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None

    @property
    def pool(self) -> ProcessPoolExecutor | None:
        """The pool if started (what a test looks at), else None."""
        return self._pool

    def executor(self) -> ProcessPoolExecutor:
        """The pool, started now if it is not."""
        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    max_workers=self.workers,
                    mp_context=multiprocessing.get_context("spawn"),
                )
            return self._pool

    async def run(self, function: Callable[..., _T], *args: Any) -> _T:  # noqa: ANN401  (any arguments)
        """Run the module-level ``function(*args)`` in a child process.

        Its nsight-lab errors (``InputError``, ``NotFoundError``, ``StoreError``)
        propagate as raised.

        Raises:
            StoreError: The child process died (the pool is started afresh next time).
        """
        pool = self.executor()
        call = functools.partial(function, *args)
        try:
            # Submitted from a thread: starting a child process (the first time) and
            # pickling take milliseconds that the event loop must not wait for.
            return await IOLoop.current().run_in_executor(
                None, lambda: pool.submit(call).result()
            )
        except BrokenProcessPool as exc:
            self._discard(pool)
            msg = (
                "the nsight-lab worker process of the Jupyter server died (out of "
                "memory?); retry, and see the server log"
            )
            raise StoreError(msg) from exc

    def _discard(self, pool: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None
        pool.shutdown(wait=False, cancel_futures=True)

    def warm(self) -> list[Future[list[str]]]:
        """Start the child processes now, each importing what its requests need.

        Returns at once, one future per child with the heavy modules it holds.
        """
        pool = self.executor()
        return [pool.submit(import_heavy) for _ in range(self.workers)]

    def shutdown(self) -> None:
        """Stop the child processes, if any were started. Idempotent."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
