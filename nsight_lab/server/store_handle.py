"""The server's one shared, read-mostly handle on the run store.

Decision: the server never creates a store file. Until the kernel (or a script) has
written one, every request is answered from an empty in-memory store, so filters are
validated the same way, lists are empty and session ids are unknown (404); the events
socket keeps polling for the file. Once the file exists it is opened once per server
and shared by every handler and socket (``RunStore`` serialises its one connection
with a lock; each read sees the latest committed write of any process, as SQLite's
WAL mode gives every read a fresh snapshot).

A PostgreSQL store (a ``postgresql://`` location) always "exists": it is opened on
the first request (creating its tables if the database has none, as a kernel would),
and a server that cannot reach it answers 500 with the reason, password left out.
"""

from __future__ import annotations

import threading
from pathlib import Path

from nsight_lab.server.pg_listen import PgListener
from nsight_lab.store import postgres as _pg
from nsight_lab.store.run_store import RunStore

__all__ = ["StoreHandle"]

_IN_MEMORY = ":memory:"


class StoreHandle:
    """Opens the run store at ``path`` lazily, once the file exists.

    Args:
        path: The SQLite run store file, or a ``postgresql://`` URL.

    Attributes:
        engine: ``"sqlite"`` or ``"postgresql"``.
        where: The store for people: the file, or the URL without its password.
    """

    def __init__(self, path: str | Path) -> None:
        """Remember ``path``; nothing is opened or created here."""
        self.location = str(path)
        self.engine = "postgresql" if _pg.is_postgres_url(path) else "sqlite"
        self.path = Path(path) if self.engine == "sqlite" else None
        self.where = _pg.redact(self.location) if self.path is None else str(path)
        self._lock = threading.Lock()
        self._store: RunStore | None = None
        self._empty: RunStore | None = None
        self._listener: PgListener | None = None

    def exists(self) -> bool:
        """Tell whether the store file exists (a PostgreSQL store always does)."""
        return self.path is None or self.path.is_file()

    def get(self) -> RunStore | None:
        """Return the shared store, or ``None`` while its file does not exist.

        A store whose file was removed since it was opened is closed and forgotten.

        Raises:
            StoreError: The file exists but cannot be opened as a run store.
        """
        with self._lock:
            if not self.exists():
                if self._store is not None:
                    self._store.close()
                    self._store = None
                return None
            if self._store is None:
                self._store = RunStore(self.location)
            return self._store

    def get_or_empty(self) -> RunStore:
        """Return the shared store, or an empty in-memory one while no file exists.

        Raises:
            StoreError: The file exists but cannot be opened as a run store.
        """
        store = self.get()
        if store is not None:
            return store
        with self._lock:
            if self._empty is None:
                # SQLite's special name: a private, empty database; no file is made.
                self._empty = RunStore(_IN_MEMORY)
            return self._empty

    def listener(self) -> PgListener | None:
        """The server's one LISTEN on a PostgreSQL store; ``None`` for SQLite."""
        if self.path is not None:
            return None
        with self._lock:
            if self._listener is None:
                self._listener = PgListener(self.location, self.get)
            return self._listener

    def close(self) -> None:
        """Close whatever was opened. Idempotent.

        Raises:
            StoreError: Never in practice; closing does not fail.
        """
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._lock:
            for store in (self._store, self._empty):
                if store is not None:
                    store.close()
            self._store = self._empty = None
