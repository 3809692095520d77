"""Configuration of the nsight-lab server extension (traitlets, read at load time).

Set in ``jupyter_server_config.py`` or on the command line, for example
``--NsightLabConfig.poll_interval_s=0.25``.
"""

from __future__ import annotations

import os

from traitlets import Float, Unicode, default
from traitlets.config import Configurable

from nsight_lab.paths import STORE_ENV, db_path, reports_dir, store_location

__all__ = ["NsightLabConfig"]


class NsightLabConfig(Configurable):
    """Where the server reads the run store and how often the websocket polls it."""

    db_path = Unicode(
        help=(
            "The SQLite run store the server reads. Default: $NSIGHT_LAB_HOME/"
            "store.sqlite, else the user's data directory (the kernel's default too)."
            " Overridden by store, or by $NSIGHT_LAB_STORE."
        ),
    ).tag(config=True)

    store = Unicode(
        help=(
            "The run store the server reads: a postgresql:// URL (a team store, "
            "needs nsight-lab[postgres]) or a SQLite file. Default: $NSIGHT_LAB_STORE "
            "(what the kernel and the CLI read too), else db_path."
        ),
    ).tag(config=True)

    reports_dir = Unicode(
        help=(
            "The directory of kept .ncu-rep files, one session_<id>/ folder per "
            "session. Default: $NSIGHT_LAB_HOME/reports, else the user's data "
            "directory."
        ),
    ).tag(config=True)

    poll_interval_s = Float(
        0.1,
        min=0.01,
        help=(
            "Seconds between two polls of a SQLite run store by the server's one "
            "events watcher (shared by every websocket); a new run is pushed at most "
            "this long (plus the poll) after its write. On PostgreSQL, the shortest "
            "gap between two pushes (notices meanwhile are merged)."
        ),
    ).tag(config=True)

    @default("db_path")
    def _default_db_path(self) -> str:
        return str(db_path())

    @default("store")
    def _default_store(self) -> str:
        env = os.environ.get(STORE_ENV, "").strip()
        return store_location() if env else self.db_path

    @default("reports_dir")
    def _default_reports_dir(self) -> str:
        return str(reports_dir())
