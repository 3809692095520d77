"""Where nsight-lab keeps its files on disk, and which run store it uses.

``$NSIGHT_LAB_HOME`` wins; otherwise the user's data directory (platformdirs), so that
the kernel, the CLI and the Jupyter server of one user all find the same store.
``$NSIGHT_LAB_STORE`` set to a ``postgresql://`` URL puts the run store in that
PostgreSQL database instead (a team's shared history); kept reports stay on disk.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

DB_FILENAME = "store.sqlite"
REPORTS_DIRNAME = "reports"
STORE_ENV = "NSIGHT_LAB_STORE"
"""The environment variable naming a PostgreSQL run store (a ``postgresql://`` URL)."""


def home() -> Path:
    """Return the nsight-lab home directory (not created here)."""
    env = os.environ.get("NSIGHT_LAB_HOME")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir("nsight-lab", appauthor=False))


def db_path() -> Path:
    """Return the path of the SQLite run store."""
    return home() / DB_FILENAME


def store_location() -> str:
    """Return the run store the magic, the CLI and the server extension open.

    ``$NSIGHT_LAB_STORE`` when set (a ``postgresql://`` or ``postgres://`` URL, or a
    SQLite file path), else :func:`db_path`.
    """
    env = os.environ.get(STORE_ENV, "").strip()
    if env:
        return env if "://" in env else str(Path(env).expanduser())
    return str(db_path())


def reports_dir() -> Path:
    """Return the directory where kept ``.ncu-rep`` files live, one per session."""
    return home() / REPORTS_DIRNAME
