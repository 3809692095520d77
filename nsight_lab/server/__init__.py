"""The nsight-lab Jupyter Server extension: authenticated REST under /nsight-lab/api.

Importing this package loads no backend and no magic (tests/server/test_imports.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jupyter_server.utils import url_path_join

from nsight_lab.server.handlers import StatusHandler

if TYPE_CHECKING:
    from tornado.web import Application

__all__ = ["API_PATH", "URL_PATH", "setup_handlers"]

URL_PATH = "nsight-lab"
"""The extension's URL namespace below the server's base URL."""

API_PATH = "api"
"""The REST API lives below ``/<base_url>/nsight-lab/api/``."""


def setup_handlers(web_app: Application) -> None:
    """Register every nsight-lab route on the Jupyter server's tornado app.

    Args:
        web_app: The Jupyter server's tornado application.
    """
    base_url: str = web_app.settings["base_url"]
    api = url_path_join(base_url, URL_PATH, API_PATH)
    handlers = [
        (url_path_join(api, "status"), StatusHandler),
    ]
    web_app.add_handlers(".*$", handlers)
