"""May this process read GPU performance counters (ERR_NVGPUCTRPERM)?

Part of the stack probes (:mod:`nsight_lab.gpu.stack` re-exports it). Tests point
:data:`DRIVER_PARAMS_PATH` and :data:`PROC_STATUS_PATH` at files of their own here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from nsight_lab.gpu.nvml import DRIVER_HINT, describe_error
from nsight_lab.gpu.status import StackStatus

COUNTER_PERMISSION_HINT = (
    "run as root, or allow all users to read GPU counters: add "
    "`options nvidia NVreg_RestrictProfilingToAdminUsers=0` to a file in "
    "/etc/modprobe.d and reboot; in a container, start it with --cap-add SYS_ADMIN "
    "(NVIDIA calls this error ERR_NVGPUCTRPERM)"
)

DRIVER_PARAMS_PATH = Path("/proc/driver/nvidia/params")
PROC_STATUS_PATH = Path("/proc/self/status")

_CAP_SYS_ADMIN_BIT = 21
_PROFILING_ADMIN_RE = re.compile(r"^\s*RmProfilingAdminOnly\s*:\s*(\d+)", re.MULTILINE)


def counter_permission(
    params_path: Path | str | None = None,
    *,
    status_path: Path | str | None = None,
) -> StackStatus:
    """Say whether this process may read GPU performance counters.

    The NVIDIA driver reports ``RmProfilingAdminOnly: 1`` in its params when only
    administrators may profile; an administrator is a process with ``CAP_SYS_ADMIN``
    (root outside a container has it; root inside one needs ``--cap-add SYS_ADMIN``).

    Args:
        params_path: the driver's params file; default ``DRIVER_PARAMS_PATH``.
        status_path: this process's ``/proc`` status file (for its capabilities);
            default ``PROC_STATUS_PATH``.

    Returns:
        ``ok`` is ``True`` when counters may be read, ``False`` when the driver will
        refuse (ERR_NVGPUCTRPERM, with the fix as hint), ``None`` when the params file
        cannot be read (no NVIDIA driver loaded, or not Linux).
    """
    params_path = Path(params_path or DRIVER_PARAMS_PATH)
    try:
        text = params_path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return StackStatus(
            ok=None,
            detail=f"cannot read {params_path}: {exc.strerror or describe_error(exc)}",
            hint=DRIVER_HINT,
        )
    match = _PROFILING_ADMIN_RE.search(text)
    if match is None:
        return StackStatus(
            ok=None,
            detail=f"{params_path} has no RmProfilingAdminOnly entry",
        )
    if match.group(1) == "0":
        return StackStatus(
            ok=True, detail="RmProfilingAdminOnly: 0 (any user may read counters)"
        )
    admin = _is_admin(Path(status_path or PROC_STATUS_PATH))
    if admin:
        return StackStatus(
            ok=True,
            detail="RmProfilingAdminOnly: 1, and this process is an administrator "
            "(CAP_SYS_ADMIN)",
        )
    return StackStatus(
        ok=False,
        detail="RmProfilingAdminOnly: 1 (only administrators may read GPU counters) "
        "and this process lacks CAP_SYS_ADMIN",
        hint=COUNTER_PERMISSION_HINT,
    )


def _is_admin(status_path: Path) -> bool:
    """CAP_SYS_ADMIN in the effective set, or root where capabilities are unreadable."""
    try:
        text = status_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    match = re.search(r"^CapEff:\s*([0-9a-fA-F]+)", text, re.MULTILINE)
    if match is not None:
        return bool(int(match.group(1), 16) >> _CAP_SYS_ADMIN_BIT & 1)
    geteuid = getattr(os, "geteuid", None)
    return geteuid is not None and geteuid() == 0
