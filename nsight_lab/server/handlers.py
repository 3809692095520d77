"""REST handlers of the nsight-lab server extension; every verb is authenticated."""

from __future__ import annotations

import json

import tornado.web
from jupyter_server.base.handlers import APIHandler

import nsight_lab
from nsight_lab import paths, records


class StatusHandler(APIHandler):
    """``GET /nsight-lab/api/status``: the version and where the run store lives."""

    @tornado.web.authenticated
    def get(self) -> None:
        """Answer the nsight-lab version, the store path and whether it exists."""
        store = paths.db_path()
        self.finish(
            json.dumps(
                {
                    "version": nsight_lab.__version__,
                    "store_path": str(store),
                    "store_exists": store.is_file(),
                    "schema_version": records.SCHEMA_VERSION,
                },
            ),
        )
