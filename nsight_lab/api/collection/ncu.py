"""``nsight.collection.ncu``: Nsight Compute, and whether it can profile here.

nsight-python loads Nsight Compute's injection library into the process when NCU is
activated (at ``import nsight``, unless ``NSPY_NCU_INIT_AT_IMPORT=0``) and keeps a
failure in ``injection_load_error``. nsight-lab injects nothing: its ncu backend runs
the profiled function in a child process under the installed ``ncu``, whatever its
version (:mod:`nsight_lab.backends.ncu`). So here ``injection_load_error`` is
``None`` where that path can run, or where NCU is not the active tool, and otherwise
nsight-python's error whose text is the reason and the fix:
:class:`~nsight_lab.api.exceptions.NCUNotAvailableError` where no ``ncu`` is found,
:class:`~nsight_lab.api.exceptions.ProfilerException` where ``ncu`` is found but the
path cannot run (``ncu_report`` or ``nvtx`` missing). Unlike nsight-python's, a
profile still runs then: its durations come from another backend and it says so.

It is read when asked (a probe of the ``ncu`` on ``PATH``), never at import.
"""

from __future__ import annotations

from nsight_lab.api._unserved import no_attribute, unserved
from nsight_lab.api.exceptions import NCUNotAvailableError, ProfilerException
from nsight_lab.api.tools import Tool, get_active_tool
from nsight_lab.backends.ncu.probe import probe_ncu
from nsight_lab.gpu.ncu import NSIGHT_PYTHON_MIN_NCU, find_ncu, ncu_version

__all__ = ["MIN_NCU_VERSION", "get_ncu_version", "init_injection"]

MIN_NCU_VERSION = NSIGHT_PYTHON_MIN_NCU
"""What nsight-python's in-process path needs (nsight-lab's isolated path: any)."""

_MODULE = "nsight.collection.ncu"
_INSTEAD = (
    "nsight-lab runs ncu itself, on the function in a child process (use "
    "nsight.analyze.kernel; output_prefix keeps its .ncu-rep)"
)
NCUCollector = unserved(_MODULE, "NCUCollector", _INSTEAD)
begin_profiling = unserved(_MODULE, "begin_profiling", _INSTEAD)
end_profiling = unserved(_MODULE, "end_profiling", _INSTEAD)
get_injection_library_path = unserved(_MODULE, "get_injection_library_path", _INSTEAD)
launch_ncu = unserved(_MODULE, "launch_ncu", _INSTEAD)
load_library = unserved(_MODULE, "load_library", _INSTEAD)


def init_injection() -> None:
    """What nsight-python's ``activate(Tool.NCU)`` does: here, check the ncu path.

    Nothing is loaded into this process; this only says whether nsight-lab's ncu
    backend can run here.

    Raises:
        NCUNotAvailableError: No ``ncu`` was found.
        ProfilerException: ``ncu`` was found, but the ncu path cannot run.
    """
    found = probe_ncu()
    if found.ok:
        return
    msg = f"{found.reason}; {found.hint}" if found.hint else found.reason
    msg += " (nsight-lab measures durations on another backend meanwhile)"
    if find_ncu() is None:
        raise NCUNotAvailableError(msg)
    raise ProfilerException(msg)


def get_ncu_version(ncu_path: str) -> tuple[int, ...] | None:
    """The version ``ncu_path`` reports (``ncu --version``), or ``None``."""
    return ncu_version(ncu_path)


def _load_error() -> NCUNotAvailableError | ProfilerException | None:
    if get_active_tool() is not Tool.NCU:
        return None
    try:
        init_injection()
    except (NCUNotAvailableError, ProfilerException) as exc:
        return exc
    return None


def __getattr__(name: str) -> object:
    """``injection_load_error``, read now (see the module docstring).

    Raises:
        AttributeError: Any other name this module does not have.
    """
    if name == "injection_load_error":
        return _load_error()
    raise no_attribute(_MODULE, name, [*__all__, "injection_load_error"])
