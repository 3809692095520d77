"""The one base class of nsight-lab's REST handlers: store access, JSON, errors.

Errors are mapped in one place (:meth:`NsightLabHandler.write_error`):
:class:`~nsight_lab.errors.InputError` (a malformed request: ``RequestError``) is 400,
:class:`~nsight_lab.errors.NotFoundError` 404,
:class:`~nsight_lab.store.run_store.SessionRunningError` 409 and any other
:class:`~nsight_lab.errors.StoreError` 500, each with the body
``{"message": <one line>, "error": <class name>}``.

Store reads and writes of more than a few rows run in a worker thread
(:meth:`NsightLabHandler.blocking`); numbers from the request are bounded in length
before they are converted (:func:`parse_count`).
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any, TypeVar

from jupyter_server.base.handlers import APIHandler
from tornado.ioloop import IOLoop

from nsight_lab.contract.records import SCHEMA_VERSION
from nsight_lab.errors import InputError, NotFoundError, RequestError, StoreError
from nsight_lab.store.sessions import SessionRunningError
from nsight_lab.text.numbers import whole_number
from nsight_lab.viewmodel.encode import dumps

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import TracebackType

    from nsight_lab.server.config import NsightLabConfig
    from nsight_lab.server.store_handle import StoreHandle
    from nsight_lab.server.workers import Workers
    from nsight_lab.store.run_store import RunStore
    from nsight_lab.viewmodel.cache import ViewModels

__all__ = [
    "CONFIG_KEY",
    "MODELS_KEY",
    "STORE_KEY",
    "WORKERS_KEY",
    "NsightLabHandler",
    "dumps",
    "parse_count",
    "session_store",
]

_T = TypeVar("_T")

CONFIG_KEY = "nsight_lab_config"
"""``web_app.settings`` key of the :class:`NsightLabConfig` read at load time."""
STORE_KEY = "nsight_lab_store"
"""``web_app.settings`` key of the shared :class:`StoreHandle`."""
MODELS_KEY = "nsight_lab_view_models"
"""``web_app.settings`` key of the extension's :class:`ViewModels` (one per session)."""
WORKERS_KEY = "nsight_lab_workers"
"""``web_app.settings`` key of the extension's child processes (:class:`Workers`)."""

_STATUS_BY_ERROR: tuple[tuple[type[Exception], int], ...] = (
    (InputError, 400),
    (NotFoundError, 404),  # before StoreError: NotFoundError derives from it
    (SessionRunningError, 409),
    (StoreError, 500),
)
_SQLITE_INT_MAX = 2**63 - 1
_SHOWN_CHARS = 40
"""Longer request values are cut to this many characters in error messages."""


class NsightLabHandler(APIHandler):
    """Base of every nsight-lab REST handler (each verb is ``@authenticated``)."""

    @property
    def nsight_config(self) -> NsightLabConfig:
        """The extension's configuration, read once when the extension loaded."""
        config: NsightLabConfig = self.settings[CONFIG_KEY]
        return config

    @property
    def store_handle(self) -> StoreHandle:
        """The server's shared handle on the run store."""
        handle: StoreHandle = self.settings[STORE_KEY]
        return handle

    @property
    def view_models(self) -> ViewModels:
        """The extension's view models (one per session viewed, bounded)."""
        models: ViewModels = self.settings[MODELS_KEY]
        return models

    @property
    def workers(self) -> Workers:
        """The extension's child processes (large pages, comparisons, exports)."""
        workers: Workers = self.settings[WORKERS_KEY]
        return workers

    def any_store(self) -> RunStore:
        """Return the run store, or an empty one while its file does not exist yet.

        Raises:
            StoreError: The file exists but cannot be opened.
        """
        return self.store_handle.get_or_empty()

    def session_store(self, session_id: int) -> RunStore:
        """Return the run store after checking that it holds ``session_id``.

        Raises:
            NotFoundError: No store file yet, or no such session in it.
            StoreError: The file exists but cannot be read.
        """
        return session_store(self.store_handle, session_id, self.missing_store_message)

    def missing_store_message(self, session_id: int) -> str:
        """The 404 message for a session id while the store file does not exist."""
        return (
            f"no session with id {session_id!r}: the run store "
            f"{self.store_handle.where!r} does not exist yet; "
            "profile a cell with %%nsight first"
        )

    async def blocking(self, function: Callable[..., _T], *args: Any) -> _T:  # noqa: ANN401  (any arguments)
        """Run ``function(*args)`` in a worker thread, off the event loop.

        Errors it raises propagate to the handler (and :meth:`write_error`).
        """
        loop = IOLoop.current()
        return await loop.run_in_executor(None, functools.partial(function, *args))

    @staticmethod
    def encode_reply(build: Callable[[], dict[str, Any]]) -> str:
        """Call ``build`` and return its payload plus ``schema_version`` as JSON.

        Meant to run in a worker thread with :meth:`blocking`, so that neither the
        reading nor the encoding of a large payload holds up the event loop.
        """
        return dumps({"schema_version": SCHEMA_VERSION, **build()})

    def reply_json(self, body: str | bytes) -> None:
        """Finish with JSON text built by :meth:`encode_reply`."""
        self.set_header("Content-Type", "application/json")
        self.finish(body)

    def reply(self, payload: dict[str, Any]) -> None:
        """Finish with ``payload`` plus ``schema_version`` as strict JSON."""
        self.finish(dumps({"schema_version": SCHEMA_VERSION, **payload}))

    def count_argument(
        self, name: str, default: int, *, maximum: int = _SQLITE_INT_MAX
    ) -> int:
        """Return the query argument ``name`` as a whole number in ``[0, maximum]``.

        Raises:
            RequestError: The value is not a whole number in range.
        """
        raw = self.get_query_argument(name, None)
        if raw is None or raw == "":
            return default
        return parse_count(raw, name, maximum=maximum)

    def choice_argument(self, name: str, choices: Sequence[str]) -> str:
        """Return the query argument ``name``, one of ``choices`` (default the first).

        Raises:
            RequestError: The value is not one of ``choices``.
        """
        raw = self.get_query_argument(name, None)
        if raw is None or raw == "":
            return choices[0]
        if raw not in choices:
            msg = (
                f"invalid {name} {_shown(raw)!r}; expected one of "
                f"{', '.join(map(repr, choices))}"
            )
            raise RequestError(msg)
        return raw

    def flag_argument(self, name: str) -> bool:
        """Return the query argument ``name`` as a flag: 1/true or 0/false (default).

        Raises:
            RequestError: The value is not a flag.
        """
        raw = (self.get_query_argument(name, None) or "0").lower()
        if raw not in {"0", "1", "true", "false"}:
            msg = f"invalid {name} {_shown(raw)!r}; expected 1 or 0 (true or false)"
            raise RequestError(msg)
        return raw in {"1", "true"}

    def write_error(self, status_code: int, **kwargs: Any) -> None:  # noqa: ANN401  (tornado's signature)
        """Answer an nsight-lab error as ``{"message", "error"}`` with its status."""
        exc = kwargs.get("exc_info", (None, None, None))[1]
        status = _status_for(exc)
        if status is None:
            super().write_error(status_code, **kwargs)
            return
        self.set_status(status)
        self.finish(json.dumps({"message": str(exc), "error": type(exc).__name__}))

    def log_exception(
        self,
        typ: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Log an nsight-lab error as one line; anything else with its traceback."""
        status = _status_for(value)
        if status is None:
            super().log_exception(typ, value, tb)
        elif status >= 500:  # noqa: PLR2004
            self.log.error("[nsight-lab] %s", value)
        else:
            self.log.info("[nsight-lab] %d: %s", status, value)


def parse_count(raw: str, name: str, *, maximum: int = _SQLITE_INT_MAX) -> int:
    """Return ``raw`` as a whole number in ``[0, maximum]``.

    Args:
        raw: The text, e.g. a query argument or a path segment.
        name: The argument's name, for the message.
        maximum: The largest allowed value.

    Returns:
        The number.

    Raises:
        RequestError: ``raw`` is not a whole number in range.
    """
    value = whole_number(raw, 0, maximum)
    if value is None:
        msg = (
            f"invalid {name} {_shown(raw)!r}; "
            f"expected a whole number from 0 to {maximum}"
        )
        raise RequestError(msg)
    return value


def opened_store(
    handle: StoreHandle, session_id: int, missing: Callable[[int], str]
) -> RunStore:
    """Return the run store of ``handle``; the caller's own read checks the session.

    :func:`session_store` without its read of the session, for a request whose
    next read is of the session anyway (it raises :class:`NotFoundError` itself):
    one store round trip less per live refresh (issue 32).

    Raises:
        NotFoundError: No store file yet (``missing(session_id)`` says so).
        StoreError: The file exists but cannot be read.
    """
    store = handle.get()
    if store is None:
        raise NotFoundError(missing(session_id))
    return store


def session_store(
    handle: StoreHandle, session_id: int, missing: Callable[[int], str]
) -> RunStore:
    """Return the run store of ``handle`` after checking it holds ``session_id``.

    Thread-safe: called in worker threads by the handlers.

    Raises:
        NotFoundError: No store file yet (``missing(session_id)`` says so), or no
            such session in it.
        StoreError: The file exists but cannot be read.
    """
    store = handle.get()
    if store is None:
        raise NotFoundError(missing(session_id))
    store.get_session(session_id)
    return store


def _shown(raw: str) -> str:
    """``raw`` cut to :data:`_SHOWN_CHARS` characters for a one-line message."""
    return raw if len(raw) <= _SHOWN_CHARS else raw[:_SHOWN_CHARS] + "…"


def _status_for(exc: BaseException | None) -> int | None:
    for error, status in _STATUS_BY_ERROR:
        if isinstance(exc, error):
            return status
    return None
