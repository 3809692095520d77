"""Where nsight-lab keeps its files on disk, and which run store it uses.

``$NSIGHT_LAB_HOME`` wins; otherwise the user's data directory (platformdirs), so that
the kernel, the CLI and the Jupyter server of one user all find the same store.
``$NSIGHT_LAB_STORE`` set to a ``postgresql://`` URL puts the run store in that
PostgreSQL database instead (a team's shared history); kept reports stay on disk.
"""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path

import platformdirs

from nsight_lab.errors import StoreError

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

    Raises:
        StoreError: The variable holds a URL that cannot be read (names it).
    """
    env = os.environ.get(STORE_ENV, "").strip()
    if env:
        return _checked_url(env) if "://" in env else str(Path(env).expanduser())
    return str(db_path())


def _checked_url(url: str) -> str:
    """``url`` if it can be read as a URL with a host and port.

    A malformed one (``postgresql://[::1/db``, a port that is no number) failed
    later as a bare ``ValueError`` naming neither the variable nor the fix; the
    URL is not quoted (it may hold a password).

    Raises:
        StoreError: It cannot be read.
    """
    try:
        _ = urllib.parse.urlsplit(url).port
    except ValueError as exc:  # its text may quote the password: not shown
        why = "unbalanced [ ]" if "IPv6" in str(exc) else "a port not from 0 to 65535"
        msg = (
            f"{STORE_ENV} holds a malformed URL ({why}); set it to "
            "postgresql://user:password@host:port/database or a SQLite file path"
        )
        raise StoreError(msg) from None
    return url


def reports_dir() -> Path:
    """Return the directory where kept ``.ncu-rep`` files live, one per session."""
    return home() / REPORTS_DIRNAME
