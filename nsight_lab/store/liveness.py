"""Writer liveness for the run store: is the process that writes a session alive?

A session records its writer's pid and, on Linux, a token ``"<boot id>:<start
time>"`` from ``/proc`` so that a reused pid is not mistaken for the writer.
``RunStore.mark_interrupted`` (:mod:`nsight_lab.store.run_store`) asks
:func:`writer_alive`. This is the SQLite engine's test; a PostgreSQL store's writer
may run on another host, and its liveness is its connection's advisory lock instead
(:mod:`nsight_lab.store.postgres` says why).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _read_proc_stat(pid: int) -> tuple[str, str] | None:
    """Return ``(state, starttime)`` of a Linux process, or ``None`` if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 2 (comm) may hold spaces and parentheses: split after its last ")".
    fields = stat.rpartition(")")[2].split()
    # fields[0] is field 3 (state); field 22 (starttime, clock ticks after boot).
    return fields[0], fields[19]


def _has_proc() -> bool:
    return sys.platform.startswith("linux") and Path("/proc/self/stat").exists()


def pid_token(pid: int) -> str | None:
    """Return ``"<boot id>:<start time>"`` of a local Linux process, else ``None``."""
    if not _has_proc():
        return None
    stat = _read_proc_stat(pid)
    return None if stat is None else f"{_boot_id()}:{stat[1]}"


def writer_alive(pid: int | None, token: str | None) -> bool:
    """Tell whether a local writer process still runs; ``True`` when it cannot tell."""
    if pid is None or os.name != "posix":
        return True  # on Windows os.kill(pid, 0) would terminate the process
    if _has_proc():
        stat = _read_proc_stat(pid)
        alive = stat is not None and stat[0] not in {"Z", "X", "x"}
        return alive and (token is None or token == pid_token(pid))
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: alive, owned by another user
        return True
    return True
