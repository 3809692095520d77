"""Say which object keeps a cell's variable from reaching the ncu child, and what to do.

When a variable cannot be pickled, the object at fault is often deep inside it: a
function defined in the notebook reads a global ``ctypes.CDLL``, or nsight-python's
``analyze.kernel`` function (shipped inside nsight-lab's ``IsolatedCall``) reads a CUDA
graph. :func:`explain` walks into the variable (containers, attributes, a function's
globals, closure and defaults) down to the innermost object that still fails, and
writes one line: the variable, the path to that object, its type, why it fails, and
what to do instead (build it inside the cell, or measure in this process).
"""

from __future__ import annotations

import ctypes
import dis
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nsight_lab.backends.ncu.rebuild import FUNCTION_POINTER, compiled_original

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

IN_PROCESS = "or use --backend pm or cupti, which measure in this process"
"""The way out for what cannot travel: the backends that run the cell here."""

_MAX_DEPTH = 8

_INTERNAL = {"nsight_lab_call_": "the function nsight.analyze.kernel profiles"}
"""Names nsight-lab ships itself (``nsight_lab.api.cell.CALL``), as users know them."""


@dataclass(frozen=True)
class _Culprit:
    path: tuple[str, ...]
    value: object
    error: Exception


def explain(
    name: str, value: object, error: Exception, dumps: Callable[[object], bytes]
) -> str:
    """One line naming what in variable ``name`` cannot be pickled, why, and what to do.

    Args:
        name: The variable.
        value: Its value, which ``dumps`` failed on with ``error``.
        error: What ``dumps(value)`` raised.
        dumps: The shipping pickler, to try the parts of ``value`` with.
    """
    culprit = _innermost(_Culprit((), value, error), dumps, set())
    kind = type_name(culprit.value)
    why, todo = _advice(culprit.value, culprit.error)
    if not culprit.path:
        subject = f"variable {name!r} ({kind})"
        return f"cannot ship {subject} to the ncu child process: {why}; {todo}"
    subject = _INTERNAL.get(name, f"variable {name!r}")
    inside = f"{' -> '.join(culprit.path)} ({kind})"
    return f"cannot ship {subject} to the ncu child process: {inside}: {why}; {todo}"


def type_name(value: object) -> str:
    """``module.Qualname`` of ``value``'s type, builtins without their module."""
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}".removeprefix("builtins.")


def _innermost(
    found: _Culprit, dumps: Callable[[object], bytes], seen: set[int]
) -> _Culprit:
    """The deepest part of ``found.value`` that still fails to pickle."""
    if len(found.path) >= _MAX_DEPTH or id(found.value) in seen:
        return found
    seen.add(id(found.value))
    for label, part in _parts(found.value):
        error = _failure(part, dumps)
        if error is not None:
            return _innermost(_Culprit((*found.path, label), part, error), dumps, seen)
    return found


def _failure(part: object, dumps: Callable[[object], bytes]) -> Exception | None:
    """What pickling ``part`` alone raises, or ``None`` where it pickles."""
    try:
        dumps(part)
    except Exception as exc:  # noqa: BLE001  (any pickling failure is a lead)
        return exc
    return None


def _parts(value: object) -> Iterator[tuple[str, object]]:
    """The labelled parts a pickler would write for ``value``."""
    if isinstance(value, dict):
        yield from ((f"[{key!r}]", item) for key, item in value.items())
    elif isinstance(value, (list, tuple, set, frozenset)):
        yield from ((f"[{i}]", item) for i, item in enumerate(value))
    elif isinstance(value, types.FunctionType):
        yield from _function_parts(value)
    elif isinstance(value, types.MethodType):
        yield f"the object of method {value.__name__!r}", value.__self__
    else:
        original = compiled_original(value)
        if original is not None and original is not value:
            yield "the module torch.compile wrapped", original
        attributes = getattr(value, "__dict__", None)
        if isinstance(attributes, dict):
            yield from ((f".{key}", item) for key, item in attributes.items())


def _function_parts(function: types.FunctionType) -> Iterator[tuple[str, object]]:
    """A function's globals it reads, its closure and its defaults, labelled."""
    label = f"function {function.__qualname__!r}"
    for global_name in _global_reads(function.__code__):
        if global_name in function.__globals__:
            yield (
                f"{label} reads global {global_name!r}",
                function.__globals__[global_name],
            )
    cells = zip(function.__code__.co_freevars, function.__closure__ or (), strict=False)
    for free_name, cell in cells:
        try:
            yield f"{label} closes over {free_name!r}", cell.cell_contents
        except ValueError:  # noqa: PERF203  (an empty cell: nothing to ship)
            continue
    for i, default in enumerate(function.__defaults__ or ()):
        yield f"{label} default #{i}", default


def _global_reads(code: types.CodeType) -> Iterator[str]:
    for instr in dis.get_instructions(code):
        if instr.opname in {"LOAD_GLOBAL", "LOAD_NAME"} and isinstance(
            instr.argval, str
        ):
            yield instr.argval
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _global_reads(const)


# ------------------------------------------------------------------------ advice


def _advice(value: object, error: Exception) -> tuple[str, str]:
    """Why ``value`` cannot travel, and what to do instead."""
    names = {cls.__name__ for cls in type(value).__mro__}
    if names & {"CUDAGraph", "_CUDAGraph", "_CudaGraphBase"}:
        return (
            (
                "a CUDA graph is captured in this process's CUDA context and cannot "
                "be sent to another process"
            ),
            f"build (capture) the CUDA graph inside the cell, {IN_PROCESS}",
        )
    if _is_ctypes(value):
        return (
            "a ctypes pointer or function pointer holds an address in this process",
            (
                "look it up inside the cell or function (a ctypes.CDLL itself ships: "
                f"nsight-lab loads the library again in the child), {IN_PROCESS}"
            ),
        )
    if compiled_original(value) is not None:
        return (
            (
                "a torch.compile'd object whose settings cannot be read back "
                f"({_first_line(error)})"
            ),
            f"call torch.compile inside the cell, {IN_PROCESS}",
        )
    return (
        f"it cannot be pickled ({type(error).__name__}: {_first_line(error)})",
        "create it inside the cell, or pass --backend events",  # as --ranks rewrites
    )


def _is_ctypes(value: object) -> bool:
    kinds = (ctypes.Structure, ctypes.Union, ctypes.Array, ctypes._Pointer)  # noqa: SLF001
    simple = (ctypes._SimpleCData, FUNCTION_POINTER)  # noqa: SLF001
    return isinstance(value, (*kinds, *simple))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "no message"
