"""Where nsight-lab keeps its files on disk.

``$NSIGHT_LAB_HOME`` wins; otherwise the user's data directory (platformdirs), so that
the kernel, the CLI and the Jupyter server of one user all find the same store.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

DB_FILENAME = "store.sqlite"
REPORTS_DIRNAME = "reports"


def home() -> Path:
    """Return the nsight-lab home directory (not created here)."""
    env = os.environ.get("NSIGHT_LAB_HOME")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir("nsight-lab", appauthor=False))


def db_path() -> Path:
    """Return the path of the SQLite run store."""
    return home() / DB_FILENAME


def reports_dir() -> Path:
    """Return the directory where kept ``.ncu-rep`` files live, one per session."""
    return home() / REPORTS_DIRNAME
