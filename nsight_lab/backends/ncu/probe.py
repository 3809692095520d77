"""Can the ``ncu`` backend run here: ncu, ``ncu_report`` and ``nvtx`` found, or why not.

The backend is the *isolated* path (:mod:`nsight_lab.backends.ncu.collector`): the cell
runs in a child process under the installed ``ncu``. nsight-python's in-process path
needs Nsight Compute >= 2026.2.1; the probe says so where the installed one is older.
"""

from __future__ import annotations

import functools
import importlib.util
from typing import TYPE_CHECKING

from nsight_lab.contract.collector import Availability
from nsight_lab.gpu.stack import (
    NCU_INSTALL_HINT,
    NSIGHT_PYTHON_MIN_NCU,
    find_ncu,
    format_version,
    ncu_report_status,
    ncu_version,
    nsight_python_accepts,
)

if TYPE_CHECKING:
    from pathlib import Path

ISOLATED = "isolated: the cell runs in a child process under ncu"
NVTX_HINT = "install it with: pip install nsight-lab[ncu] (or: pip install nvtx)"


@functools.cache
def _cached_version(path: Path) -> tuple[int, ...] | None:
    return ncu_version(path)


def nvtx_installed() -> bool:
    """Tell whether the ``nvtx`` package (the child's NVTX ranges) is importable.

    Returns:
        ``True`` when ``import nvtx`` would find it.
    """
    return importlib.util.find_spec("nvtx") is not None


def probe_ncu() -> Availability:
    """Say whether ncu, ``ncu_report`` and ``nvtx`` are here; never raises.

    Returns:
        ``ok`` with the ncu version and path, or why not and what to do.
    """
    path = find_ncu()
    if path is None:
        return Availability(
            ok=False,
            reason="no ncu (Nsight Compute CLI) was found",
            hint=NCU_INSTALL_HINT,
        )
    report = ncu_report_status()
    if not report.ok:
        return Availability(
            ok=False, reason=f"ncu at {path}, but {report.detail}", hint=report.hint
        )
    if not nvtx_installed():
        return Availability(
            ok=False,
            reason=(
                f"ncu at {path}, but the nvtx package is not installed "
                "(the child process marks regions with NVTX ranges)"
            ),
            hint=NVTX_HINT,
        )
    version = _cached_version(path)
    found = format_version(version) if version else "of unknown version"
    reason = f"ncu {found} at {path}; {ISOLATED}"
    if not nsight_python_accepts(version):
        reason += (
            "; nsight-python's in-process path needs Nsight Compute >= "
            f"{format_version(NSIGHT_PYTHON_MIN_NCU)}"
        )
    return Availability(ok=True, reason=reason)
