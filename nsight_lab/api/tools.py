"""Which backend nsight-python's API measures with: ``nsight.activate`` and ours.

nsight-python picks its tool with ``nsight.activate(nsight.Tool.NCU)`` or
``Tool.CUPTI``; nsight-lab maps them to its backends (``NCU``: ``auto``, which takes a
counter backend when metrics beyond the duration are asked for, as the magic does;
``CUPTI``: the ``cupti`` backend). :func:`use_backend` names any backend of the
registry for the profiles that follow (the examples harness runs nsight-python's
examples on the ``cpu`` backend with it); a decorator's own ``backend=`` wins over
both.
"""

from __future__ import annotations

from enum import Enum

from nsight_lab.errors import OptionError

__all__ = [
    "Tool",
    "activate",
    "deactivate",
    "default_backend",
    "get_active_tool",
    "use_backend",
]


class Tool(Enum):
    """nsight-python's profiling tools."""

    NCU = "ncu"
    CUPTI = "cupti"


_TOOL_BACKEND = {Tool.NCU: "auto", Tool.CUPTI: "cupti"}
_state: dict[str, object] = {"tool": Tool.NCU, "backend": None}


def activate(tool: Tool) -> None:
    """Profile with ``tool`` from now on (nsight-python's ``nsight.activate``).

    Raises:
        OptionError: ``tool`` is not a :class:`Tool`.
    """
    given: object = tool  # user input: checked whatever its annotation says
    if not isinstance(given, Tool):
        msg = f"activate: expected nsight.Tool.NCU or nsight.Tool.CUPTI, got {tool!r}"
        raise OptionError(msg)
    _state["tool"] = tool


def deactivate() -> None:
    """Forget the active tool: profiles choose their backend (``auto``)."""
    _state["tool"] = None


def get_active_tool() -> Tool | None:
    """The tool :func:`activate` chose (``Tool.NCU`` until told otherwise)."""
    tool = _state["tool"]
    return tool if isinstance(tool, Tool) else None


def use_backend(backend: str | None) -> None:
    """Measure the following profiles with ``backend`` (``None``: by the tool).

    Raises:
        OptionError: ``backend`` is not ``auto`` or a registered backend.
    """
    from nsight_lab.backends import backend_choices

    if backend is not None and backend not in backend_choices():
        expected = ", ".join(repr(b) for b in backend_choices())
        msg = f"use_backend: unknown backend {backend!r}; expected one of {expected}"
        raise OptionError(msg)
    _state["backend"] = backend


def default_backend() -> str:
    """The backend a profile uses when its decorator names none."""
    backend = _state["backend"]
    if isinstance(backend, str):
        return backend
    tool = get_active_tool()
    return _TOOL_BACKEND[tool] if tool is not None else "auto"
