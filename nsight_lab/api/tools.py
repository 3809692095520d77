"""Which backend nsight-python's API measures with: ``nsight.activate`` and ours.

nsight-python picks its tool with ``nsight.activate(nsight.Tool.NCU)`` or
``Tool.CUPTI``; nsight-lab maps them to its backends (``NCU``: ``auto``, which takes a
counter backend when metrics beyond the duration are asked for, as the magic does,
and the ncu path for a call given ``output_prefix``, which keeps its ``.ncu-rep``,
where ncu can run; ``CUPTI``: the ``cupti`` backend). :func:`use_backend` names any
backend of the registry for the profiles that follow (the examples harness runs
nsight-python's examples on the ``cpu`` backend with it); a decorator's own
``backend=`` wins over both.
"""

from __future__ import annotations

import os
import warnings
from enum import Enum

from nsight_lab.contract.registry import backend_choices
from nsight_lab.errors import ArgumentError

__all__ = [
    "Tool",
    "activate",
    "deactivate",
    "default_backend",
    "get_active_tool",
    "ncu_tool_chooses",
    "reset",
    "use_backend",
]


class Tool(str, Enum):
    """nsight-python's profiling tools (a ``str``: ``Tool.NCU == "ncu"``)."""

    NCU = "ncu"
    CUPTI = "cupti"


_TOOL_BACKEND = {Tool.NCU: "auto", Tool.CUPTI: "cupti"}


def _tool_at_import() -> Tool | None:
    """nsight-python activates NCU as it is imported, unless told not to."""
    return None if os.environ.get("NSPY_NCU_INIT_AT_IMPORT", "1") == "0" else Tool.NCU


_state: dict[str, object] = {"tool": _tool_at_import(), "backend": None}


def activate(tool: Tool) -> None:
    """Profile with ``tool`` from now on (nsight-python's ``nsight.activate``).

    As nsight-python's: activating the active tool again does nothing, and one tool
    cannot be switched for another (NCU is active from the import on unless
    ``NSPY_NCU_INIT_AT_IMPORT=0``).

    Raises:
        ArgumentError: ``tool`` is not a :class:`Tool` (a ``ValueError``).
        RuntimeError: Another tool is active.
    """
    given: object = tool  # user input: checked whatever its annotation says
    if not isinstance(given, Tool):
        msg = (
            f"tool must be a nsight.Tool member (one of {[t.name for t in Tool]}), "
            f"got {tool!r}"
        )
        raise ArgumentError(msg)
    active = _state["tool"]
    if active is not None and active != tool:
        msg = f"{active!r} is already active; cannot switch to {tool!r}"
        raise RuntimeError(msg)
    _state["tool"] = tool


def deactivate() -> None:
    """Stop the active tool, as nsight-python does.

    CUPTI is stopped (profiles then choose their backend: ``auto``); NCU cannot be
    unloaded in nsight-python, so it stays active, with a ``RuntimeWarning``.
    """
    if _state["tool"] == Tool.NCU:
        warnings.warn(
            "NVIDIA Nsight Compute cannot be deactivated once loaded; it stays "
            "the active tool for the lifetime of the process.",
            category=RuntimeWarning,
            stacklevel=2,
        )
        return
    _state["tool"] = None


def reset() -> None:
    """Back to the tool of a fresh import, with no backend named."""
    _state.update(tool=_tool_at_import(), backend=None)


def get_active_tool() -> Tool | None:
    """The tool :func:`activate` chose (``Tool.NCU`` until told otherwise)."""
    tool = _state["tool"]
    return tool if isinstance(tool, Tool) else None


def ncu_tool_chooses() -> bool:
    """Whether nsight-python's NCU tool picks the backend (active, no use_backend).

    Then a call given ``output_prefix`` runs on the ncu path, which keeps the report
    nsight-python's NCU tool writes (:mod:`nsight_lab.api.kernel`).
    """
    return _state["backend"] is None and get_active_tool() is Tool.NCU


def use_backend(backend: str | None) -> None:
    """Measure the following profiles with ``backend`` (``None``: by the tool).

    Raises:
        ArgumentError: ``backend`` is not ``auto`` or a registered backend.
    """
    if backend is not None and backend not in backend_choices():
        expected = ", ".join(repr(b) for b in backend_choices())
        msg = f"use_backend: unknown backend {backend!r}; expected one of {expected}"
        raise ArgumentError(msg)
    _state["backend"] = backend


def default_backend() -> str:
    """The backend a profile uses when its decorator names none."""
    backend = _state["backend"]
    if isinstance(backend, str):
        return backend
    tool = get_active_tool()
    return _TOOL_BACKEND[tool] if tool is not None else "auto"
