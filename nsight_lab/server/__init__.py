"""The nsight-lab Jupyter Server extension: authenticated REST and a websocket.

Everything lives below ``<base_url>/nsight-lab/api/``:

- ``GET status``: version, the store's engine and path (a URL without password),
  whether the store exists;
- ``GET sessions``: sessions, filtered and paged, newest first;
- ``GET sessions/<id>``: one session and its runs (``?after_id=N``, ``?figures=1``);
- ``DELETE sessions/<id>``: a session, its runs and its kept reports (204);
- ``GET sessions/<id>/export?format=csv|parquet&what=runs|results``: a download;
- ``GET sessions/<id>/report?config=N``: the kept ``.ncu-rep``, a download;
- ``GET compare?a=<id>&b=<id>``: ratios b/a with 95% intervals;
- ``GET events``: websocket pushing ``runs-changed`` and ``sessions-changed``.

Importing this package loads no backend and no magic (tests/server/test_imports.py).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from jupyter_server.utils import url_path_join

from nsight_lab.contract.points import MAX_POINTS
from nsight_lab.server.base import CONFIG_KEY, MODELS_KEY, STORE_KEY, WORKERS_KEY
from nsight_lab.server.config import NsightLabConfig
from nsight_lab.server.downloads import ExportHandler, ReportHandler
from nsight_lab.server.events import HUB_KEY, RunEventsSocket
from nsight_lab.server.handlers import (
    CompareHandler,
    SessionHandler,
    SessionsHandler,
    StatusHandler,
)
from nsight_lab.server.store_handle import StoreHandle
from nsight_lab.server.workers import Workers
from nsight_lab.viewmodel.cache import ViewModels

if TYPE_CHECKING:
    from tornado.web import Application

__all__ = [
    "API_PATH",
    "URL_PATH",
    "NsightLabConfig",
    "setup_handlers",
    "stop_handlers",
]

URL_PATH = "nsight-lab"
"""The extension's URL namespace below the server's base URL."""

API_PATH = "api"
"""The REST API lives below ``/<base_url>/nsight-lab/api/``."""

_ID = r"(\d+)"
"""A session id in a route: digits only, so no path can come from the request."""


logger = logging.getLogger(__name__)


def setup_handlers(web_app: Application) -> None:
    """Read the configuration and register every nsight-lab route.

    The :class:`NsightLabConfig` is built from the server's traitlets config and kept
    in ``web_app.settings["nsight_lab_config"]``; the shared store handle (nothing is
    opened or created yet) in ``web_app.settings["nsight_lab_store"]``; the view
    models of the sessions viewed (:class:`~nsight_lab.viewmodel.cache.ViewModels`)
    and the child processes (:class:`~nsight_lab.server.workers.Workers`), which
    the extension owns, beside them.

    Args:
        web_app: The Jupyter server's tornado application.
    """
    config = NsightLabConfig(config=web_app.settings.get("config"))
    web_app.settings[CONFIG_KEY] = config
    web_app.settings[STORE_KEY] = StoreHandle(config.store)
    web_app.settings[MODELS_KEY] = ViewModels(max_points=MAX_POINTS)
    workers = web_app.settings[WORKERS_KEY] = Workers()
    base_url: str = web_app.settings["base_url"]
    api = url_path_join(base_url, URL_PATH, API_PATH)
    handlers = [
        (url_path_join(api, "status"), StatusHandler),
        (url_path_join(api, "sessions"), SessionsHandler),
        (url_path_join(api, "sessions", _ID), SessionHandler),
        (url_path_join(api, "sessions", _ID, "export"), ExportHandler),
        (url_path_join(api, "sessions", _ID, "report"), ReportHandler),
        (url_path_join(api, "compare"), CompareHandler),
        (url_path_join(api, "events"), RunEventsSocket),
    ]
    web_app.add_handlers(".*$", handlers)
    # The first click on a session must not wait for a child's imports. A host that
    # cannot start one now (no fork/spawn, a limit) still serves: the pool is then
    # started by the first request that needs it, and says why if it cannot.
    try:
        workers.warm()
    except (OSError, RuntimeError) as exc:
        logger.warning("[nsight-lab] figure workers not started ahead: %s", exc)


def stop_handlers(settings: dict[str, Any]) -> None:
    """Stop what :func:`setup_handlers` and the requests started. Idempotent.

    The child processes (their pool waits for a running job), the event watcher's
    thread and the store connections; called by the server's shutdown through
    :meth:`nsight_lab.server.app.NsightLabApp.stop_extension`.
    """
    models = settings.get(MODELS_KEY)
    if models is not None:  # its follower thread reads the store: stop it first
        models.close()
    workers = settings.get(WORKERS_KEY)
    if workers is not None:
        workers.shutdown()
    hub = settings.pop(HUB_KEY, None)
    if hub is not None:
        hub.close()
    handle = settings.get(STORE_KEY)
    if handle is not None:
        handle.close()
