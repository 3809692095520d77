"""Work too heavy for a thread of the server: figures, summaries and comparisons.

Building the figures of a 200,000-run session creates about a million Python objects;
in a worker *thread* the garbage collector's passes over them hold the GIL for up to
a third of a second each, and every other request of the Jupyter server waits. So
this work runs in a small pool of child processes (``spawn``: the server's threads
are never forked), which open the store themselves and send back JSON text.

The pool is started, and its children import plotly, pandas and the figure code, as
the extension loads (:func:`warm`, in the background): started by the first request
instead, that request waited 2.5 s for it on the 2-core machine (a user's first click
on a session, ``ui_scale_first_select.json``). It is shut down when the server exits.
"""

from __future__ import annotations

import functools
import multiprocessing
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any, TypeVar

from tornado.ioloop import IOLoop

from nsight_lab.errors import StoreError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "compare_json",
    "export_file",
    "in_worker",
    "page_json_of",
    "session_view_json",
    "shutdown",
    "warm",
]

WORKERS = 2
"""Child processes at most; more figure requests than this wait their turn."""

_T = TypeVar("_T")
_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None


def _executor() -> ProcessPoolExecutor:
    global _pool  # noqa: PLW0603  (one pool per server process)
    with _lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(
                max_workers=WORKERS,
                mp_context=multiprocessing.get_context("spawn"),
            )
        return _pool


async def in_worker(function: Callable[..., _T], *args: Any) -> _T:  # noqa: ANN401  (any arguments)
    """Run the module-level ``function(*args)`` in a child process.

    Its nsight-lab errors (``OptionError``, ``NotFoundError``, ``StoreError``)
    propagate as raised.

    Raises:
        StoreError: The child process died (the pool is started afresh next time).
    """
    pool = _executor()
    call = functools.partial(function, *args)
    try:
        # Submitted from a thread: starting a child process (the first time) and
        # pickling take milliseconds that the event loop must not wait for.
        return await IOLoop.current().run_in_executor(
            None, lambda: pool.submit(call).result()
        )
    except BrokenProcessPool as exc:
        _discard(pool)
        msg = (
            "the nsight-lab worker process of the Jupyter server died (out of "
            "memory?); retry, and see the server log"
        )
        raise StoreError(msg) from exc


def _discard(pool: ProcessPoolExecutor) -> None:
    global _pool  # noqa: PLW0603
    with _lock:
        if _pool is pool:
            _pool = None
    pool.shutdown(wait=False, cancel_futures=True)


HEAVY = (
    "pandas",
    "plotly.graph_objects",
    "nsight_lab.figures",
    "nsight_lab.results",
    "nsight_lab.server.handlers",
    "nsight_lab.store.run_store",
)
"""What :func:`warm` has each child import (loaded then, not on the first request)."""


def warm() -> list[Future[list[str]]]:
    """Start the child processes now, each importing what its requests will need.

    Returns at once; the children start in the background. Returns one future per
    child, each with the heavy modules its child holds (what a test can check).
    """
    pool = _executor()
    return [pool.submit(_import_heavy) for _ in range(WORKERS)]


def _import_heavy() -> list[str]:
    import importlib
    import sys

    for name in HEAVY:
        importlib.import_module(name)
    return sorted(m for m in HEAVY if m in sys.modules)


def shutdown() -> None:
    """Stop the child processes, if any were started. Idempotent."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


# -- what the children run -----------------------------------------------------------


def session_view_json(
    path: str,
    read_only: bool,  # noqa: FBT001
    session_id: int,
    max_points: int,
) -> str:
    """Return :func:`nsight_lab.server.handlers.session_view` as JSON text.

    Runs in a child process: figures, chart order and summary rows of a session.

    Raises:
        NotFoundError: No such session.
        StoreError: The store cannot be read.
    """
    from nsight_lab.server.base import dumps
    from nsight_lab.server.handlers import session_view
    from nsight_lab.store.run_store import RunStore

    with RunStore(path, read_only=read_only) as store:
        view = session_view(store, session_id, max_points=max_points)
    return dumps(view)


def page_json_of(  # noqa: PLR0913, PLR0917  (pickled positional arguments)
    path: str,
    read_only: bool,  # noqa: FBT001
    session_id: int,
    after_id: int,
    limit: int,
    tail: int,
) -> str:
    """Return one page of a session's runs as JSON text (runs in a child process).

    Raises:
        NotFoundError: No such session.
        StoreError: The store cannot be read.
    """
    from nsight_lab.server.handlers import session_page_json
    from nsight_lab.store.run_store import RunStore

    with RunStore(path, read_only=read_only) as store:
        return session_page_json(store, session_id, after_id, limit, tail)


def compare_json(
    path: str,
    read_only: bool,  # noqa: FBT001
    a: int,
    b: int,
    threshold: float = 0.0,
) -> str:
    """Return the ``GET compare`` body of sessions ``a`` and ``b`` as JSON text.

    The verdict table of :mod:`nsight_lab.analysis.baselines` with ``a`` and ``b`` as
    the
    sessions' JSON (each with its kept ``baseline_verdict``).

    Raises:
        NotFoundError: Either session is unknown.
        StoreError: The store cannot be read.
    """
    from nsight_lab.analysis.baselines import verdict_table
    from nsight_lab.contract.records import SCHEMA_VERSION
    from nsight_lab.server.base import dumps
    from nsight_lab.server.handlers import _session_json
    from nsight_lab.store.run_store import RunStore

    with RunStore(path, read_only=read_only) as store:
        sessions = [store.get_session(a), store.get_session(b)]
        counts = store.run_counts([a, b])
        kept = store.session_verdicts([a, b])
        table = verdict_table(store, a, b, threshold=threshold).to_json()
    payload: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        **table,
        "a": _session_json(sessions[0], counts.get(a, 0), kept.get(a)),
        "b": _session_json(sessions[1], counts.get(b, 0), kept.get(b)),
    }
    return dumps(payload)


def export_file(
    path: str,
    read_only: bool,  # noqa: FBT001
    session_id: int,
    what: str,
    fmt: str,
) -> str:
    """Write a session's export to a new temporary file; return its path.

    The caller streams the file and removes it. A failure leaves no file behind.

    Raises:
        NotFoundError: No such session.
        StoreError: The store cannot be read.
    """
    import os
    import tempfile
    from pathlib import Path

    from nsight_lab.server.downloads import write_export
    from nsight_lab.store.run_store import RunStore

    handle, name = tempfile.mkstemp(prefix="nsight-lab-export-", suffix=f".{fmt}")
    os.close(handle)
    try:
        with RunStore(path, read_only=read_only) as store:
            write_export(store, session_id, what, fmt, Path(name))
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return name
