"""One view model per live session, fed with the store's new runs: the server's cache.

:class:`ViewModels` keeps a bounded number of :class:`~nsight_lab.viewmodel.session.
SessionViewModel` (least recently used out), keyed by store and session. A model
reads only the runs stored after the last one it took (``runs_with_ids(after_id=...)``;
built from scratch, in chunks of :data:`READ_CHUNK`): a refresh costs the runs added
since the last, however long the session.

While a session viewed is running, one background thread feeds its model (every
:data:`FOLLOW_INTERVAL_S`, at most :data:`FOLLOW_CHUNK` at a time) and publishes its
view; a refresh answers the view as the follower left it, so the per-run work is never
done in a request. A running session that got runs while the sidebar is open is
followed before it is viewed (:meth:`ViewModels.warm`, from the events watcher): its
first view is encoded, not built. A refresh with ``since`` gets what changed
(:mod:`~nsight_lab.viewmodel.delta`).

Bounded memory (issue 29): a model keeps at most :data:`WINDOW_BUDGET` runs in its
windows and live traces, a figure at most ``MAX_POINTS`` points (:func:`capped`), a
finished grid's first view its windows' latest runs; the summary has every run.

Thread-safe: one lock per model keeps its reads and adds in order (a run read once).
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nsight_lab.contract.points import MAX_POINTS
from nsight_lab.errors import NsightLabError
from nsight_lab.gc_freeze import FreezeGuard
from nsight_lab.viewmodel.baseline_runs import kept_baseline, latest
from nsight_lab.viewmodel.capped import capped
from nsight_lab.viewmodel.delta import ViewLog
from nsight_lab.viewmodel.roofs import with_roofs

if TYPE_CHECKING:
    from collections.abc import Iterable

    from nsight_lab.contract.records import SessionInfo
    from nsight_lab.store.run_store import RunStore
    from nsight_lab.viewmodel.session import SessionViewModel

logger = logging.getLogger(__name__)

__all__ = [
    "CAPACITY",
    "READ_CHUNK",
    "WINDOW_BUDGET",
    "ViewModels",
    "capped",
    "latest",
    "session_view",
]

CAPACITY = 8
"""Sessions whose view models are kept; the least recently viewed goes first."""
WINDOW_BUDGET = 20_000
"""Runs one model keeps in its windows and live traces, over all configs (per config
at most ``max_points``): what bounds a model's memory by more than the grid."""
GRID_CONFIGS = 100  # a finished session of more configs is first viewed by first_view
READ_CHUNK = 20_000
"""Runs read from the store at a time while a model catches up."""
FOLLOW_INTERVAL_S = 0.05
"""How often the background follower adds a running session's new runs."""
FOLLOW_CHUNK = 1_000
"""Runs the follower adds per look (holding the model), so a request waits little."""
FREEZE_EVERY_RUNS = 5_000
"""The follower freezes what the server holds every this many runs read."""
STATUS_INTERVAL_S = 1.0
"""How often the follower re-reads a followed session (has it ended?)."""
PUBLISH_INTERVAL_S = 0.2
"""How often the follower builds a followed session's view, what refreshes are
answered from (the sidebar's default refresh interval; never in a request) ..."""
PUBLISH_SHARE = 0.25
"""... or less often: builds take at most this share of the follower's time."""


@dataclass
class _Entry:
    model: SessionViewModel
    last_run_id: int = 0
    checked: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)
    left_out: tuple[int, int] = (0, 0)  # a stored session's traces, points not drawn
    log: ViewLog = field(default_factory=ViewLog)  # what a refresh since a version gets
    warmed: bool = False  # made by warm(): the follower builds it, never a request


class ViewModels:
    """The view models of the sessions the server shows, bounded, least recent out.

    Attributes:
        runs_read: Runs read from the store over every refresh (what a test counts).
    """

    def __init__(self, capacity: int = CAPACITY, max_points: int = MAX_POINTS) -> None:
        """Start empty: at most ``capacity`` models, ``max_points`` per live trace."""
        self.capacity = max(capacity, 1)
        self.max_points = max_points
        self.runs_read = 0
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, int], _Entry] = OrderedDict()
        self._follower: threading.Thread | None = None
        self._closed = threading.Event()
        self._prepared = False
        self._wanted: set[tuple[str, int]] = set()

    def __len__(self) -> int:
        """The view models held."""
        return len(self._entries)

    def view(
        self, store: RunStore, session_id: int, since: str | None = None
    ) -> dict[str, Any]:
        """Bring the session's view model up to date; return its payload.

        ``SessionViewModel.to_json``'s dict (``figures``, ``chart_order``,
        ``summary``, ``counters``, ``verdicts``) and ``view_version``: shared with
        the cache, encode it, do not change it. With ``since`` (a ``view_version``
        served), ``{"view_version", "delta"}`` when the model can say what changed.

        Raises:
            NotFoundError: No such session (its model, if any, is dropped).
            StoreError: The store cannot be read.
        """
        # The log's own lock, not the model's: never waits on the follower.
        return self._published(store, session_id).log.answer(since)

    def view_bytes(
        self, store: RunStore, sid: int, since: str | None = None,
        session: SessionInfo | None = None,
    ) -> bytes:  # fmt: skip
        """:meth:`view` as JSON, encoded once per version and ``since`` (shared).

        ``session``: as the request already read it (not read again).

        Raises:
            NotFoundError: No such session (its model, if any, is dropped).
            StoreError: The store cannot be read.
        """
        return self._published(store, sid, session).log.answer_bytes(since)

    def _published(
        self, store: RunStore, session_id: int, session: SessionInfo | None = None
    ) -> _Entry:
        """The session's entry, its view published (built here unless followed)."""
        key = (store.location, session_id)
        try:
            session = store.get_session(session_id) if session is None else session
        except Exception:
            self.forget(key)
            raise
        entry = self._entry(key, store, session)
        followed = session.status == "running" and self._following()
        fed = followed and (entry.last_run_id > 0 or entry.warmed)
        if fed and entry.log.published:
            # The follower feeds, re-reads and publishes it: a refresh takes no
            # model lock (issue 32: waiting on it was most of the p99).
            self._follow(store)
            return entry
        with entry.lock:
            grid = session.status != "running" and len(session.configs) > GRID_CONFIGS
            if entry.last_run_id == 0 and grid:
                from nsight_lab.viewmodel.latest_runs import first_view  # noqa: PLC0415  (plotly)

                entry.left_out = first_view(
                    entry.model,
                    lambda: self._catch_up(store, session_id, entry),
                    MAX_POINTS,
                )
                entry.log.reset(entry.model.version)  # charted unlogged
            elif not (followed and (entry.last_run_id > 0 or entry.warmed)):
                self._catch_up(store, session_id, entry)
            entry.model.session = session
            if not (followed and entry.log.published):  # the follower publishes
                entry.log.publish(entry.model, entry.left_out)
        if session.status == "running":
            self._follow(store)
        return entry

    def _following(self) -> bool:
        with self._lock:
            return self._follower is not None and self._follower.is_alive()

    def _catch_up(
        self,
        store: RunStore,
        session_id: int,
        entry: _Entry,
        most: int | None = None,
    ) -> int:
        """Add the runs stored since the entry's last (at most ``most``; lock held).

        Returns how many it added.
        """
        taken = 0
        while most is None or taken < most:
            chunk = READ_CHUNK if most is None else min(READ_CHUNK, most - taken)
            pairs = store.runs_with_ids(
                session_id, after_id=entry.last_run_id, limit=chunk
            )
            if not pairs:
                return taken
            self.runs_read += len(pairs)
            taken += len(pairs)
            appends = entry.model.add([record for _, record in pairs])
            entry.log.record(entry.model.version, appends)
            entry.last_run_id = pairs[-1][0]
            if len(pairs) < chunk:
                return taken
        return taken

    def _follow(self, store: RunStore) -> None:
        """Keep the running sessions' models fed in the background (one thread).

        While a session viewed is running, a daemon thread adds its new runs every
        :data:`FOLLOW_INTERVAL_S`, so a refresh finds its model nearly up to date:
        the work per run is the same, done as runs arrive instead of in the request.
        """
        with self._lock:
            if self._follower is not None and self._follower.is_alive():
                return
            self._follower = threading.Thread(
                target=self._follow_loop,
                args=(store,),
                name="nsight-lab-view-models",
                daemon=True,
            )
            self._follower.start()

    def _follow_loop(self, store: RunStore) -> None:
        """Feed each running session's model until none is running (or closed).

        A model that took a whole chunk is behind (a warmed model catching up):
        the next look comes at once, the lock let go in between. The models grow
        by thousands of objects a second: frozen as they grow (``gc_freeze.py``),
        full collections stop walking them; released when the follower stops.
        """
        with FreezeGuard(FREEZE_EVERY_RUNS) as freeze:
            self._follow_fed(store, freeze)

    def _follow_fed(self, store: RunStore, freeze: FreezeGuard) -> None:
        busy = False
        while not self._closed.wait(0 if busy else FOLLOW_INTERVAL_S):
            self._make_wanted(store)
            with self._lock:
                running = [
                    (key, entry)
                    for key, entry in self._entries.items()
                    if key[0] == store.location
                    and entry.model.session is not None
                    and entry.model.session.status == "running"
                ]
                if not running and not self._wanted:
                    self._follower = None
                    return
            busy = False
            for (_, session_id), entry in running:
                if not entry.lock.acquire(blocking=False):
                    continue  # a request is catching it up
                try:
                    taken = self._catch_up(store, session_id, entry, FOLLOW_CHUNK)
                    freeze.grew(self.runs_read)
                    busy = busy or taken == FOLLOW_CHUNK
                    if time.monotonic() - entry.checked > STATUS_INTERVAL_S:
                        entry.model.session = store.get_session(session_id)
                        entry.checked = time.monotonic()
                    every = max(PUBLISH_INTERVAL_S, entry.log.publish_s / PUBLISH_SHARE)
                    if time.monotonic() - entry.log.published_at > every:
                        entry.log.publish(entry.model, entry.left_out)
                except NsightLabError as exc:  # deleted, store gone: stop following
                    logger.debug("[nsight-lab] view model of %s: %s", session_id, exc)
                    self.forget((store.location, session_id))
                finally:
                    entry.lock.release()

    def warm(self, store: RunStore, session_ids: Iterable[int]) -> None:
        """Build the models of running sessions before anyone views them (issue 32).

        The events watcher calls it with the sessions that got runs; the follower
        makes a model for each running one and feeds it as its runs arrive: the
        first view is encoded, not built, in the request (as far as it got).
        """
        with self._lock:
            fresh = {
                (store.location, sid)
                for sid in session_ids
                if (store.location, sid) not in self._entries
            }
            self._wanted |= fresh
        if fresh:
            self._follow(store)

    def _make_wanted(self, store: RunStore) -> None:
        """Make the models :meth:`warm` asked for (the follower's thread)."""
        with self._lock:
            wanted = {key for key in self._wanted if key[0] == store.location}
            self._wanted -= wanted
        for key in sorted(wanted):
            self._make_one(store, key)

    def _make_one(self, store: RunStore, key: tuple[str, int]) -> None:
        try:
            session = store.get_session(key[1])
            if session.status == "running" and key not in self._entries:
                entry = self._entry(key, store, session)
                entry.model.session, entry.warmed = session, True
        except NsightLabError as exc:  # gone meanwhile: nothing to warm
            logger.debug("[nsight-lab] warming %s: %s", key[1], exc)

    def prepare(self) -> None:
        """Load the view model's code (plotly) in the background, once.

        The server calls it when the sidebar lists sessions: the first session
        viewed then does not wait for the import (2 s on a loaded 2-core machine),
        while a server nobody looks at never loads it.
        """
        with self._lock:
            if self._prepared:
                return
            self._prepared = True
        threading.Thread(
            target=importlib.import_module,
            args=("nsight_lab.viewmodel.session",),
            name="nsight-lab-view-model-import",
            daemon=True,
        ).start()

    def close(self) -> None:
        """Stop following sessions (the server is stopping); wait for the follower.

        Idempotent. The follower's last look finishes first (it may hold a store
        connection the server is about to close).
        """
        self._closed.set()
        with self._lock:
            follower = self._follower
        if follower is not None and follower is not threading.current_thread():
            follower.join(timeout=5.0)

    def forget(self, key: tuple[str, int]) -> None:
        """Drop one session's view model (deleted, or its store changed)."""
        with self._lock:
            self._entries.pop(key, None)

    def clear(self) -> None:
        """Drop every view model."""
        with self._lock:
            self._entries.clear()

    def _entry(
        self, key: tuple[str, int], store: RunStore, session: SessionInfo
    ) -> _Entry:
        with self._lock:
            entry = self._entries.get(key)
            old = entry.model.session if entry is not None else None
            if old is not None and old.uuid != session.uuid:  # an id used again
                entry = None
            if entry is not None:
                self._entries.move_to_end(key)
                return entry
        entry = _Entry(self._new_model(store, session))
        with self._lock:
            entry = self._entries.setdefault(key, entry)
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return entry

    def _new_model(self, store: RunStore, session: SessionInfo) -> SessionViewModel:
        """A model with the session's peaks and its kept baseline's runs."""
        from nsight_lab.viewmodel.session import SessionViewModel  # noqa: PLC0415  (plotly: the first view loads it, not the server's start)

        per_config = max(WINDOW_BUDGET // max(len(session.configs), 1), 1)
        model = SessionViewModel(
            session,
            max_points=min(self.max_points, per_config),
            baseline=kept_baseline(store, session),
            with_config=len(session.configs) > 1,
        )
        return with_roofs(store, model)


def session_view(
    store: RunStore, session_id: int, *, max_points: int = MAX_POINTS
) -> dict[str, Any]:
    """``SessionViewModel.to_json`` of a stored session, from all its runs (once).

    Raises:
        NotFoundError: No such session.
        StoreError: The store cannot be read.
    """
    return ViewModels(capacity=1, max_points=max_points).view(store, session_id)
