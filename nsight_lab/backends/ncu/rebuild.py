"""Objects that cannot be pickled as they are but can be rebuilt in the ncu child.

:mod:`nsight_lab.backends.ncu.shipping` asks :func:`reduce_for_child` about each object
it pickles; an answer is a pickle ``reduce`` tuple whose callable rebuilds an equivalent
object in the child process:

* a ``torch.compile``'d module or function goes as its original module or function
  plus the ``torch.compile`` arguments it was made with (backend, mode options,
  ``fullgraph``, ``dynamic``), and is compiled again in the child. Compiled code and
  dynamo's caches belong to this process and never travel; the child compiles on its
  first call, in a warm-up run. Where those arguments cannot be read back (another
  torch's internals), the answer is ``None`` and the object is pickled as it is.
* a ``ctypes.CDLL`` goes as its library's name and the prototypes (``argtypes``,
  ``restype``, ``errcheck``) set on its functions, and is loaded again in the child:
  the same file, so the same code. Pointers and function pointers cannot be rebuilt
  (their addresses mean nothing in another process) and are left to fail, with advice
  from :mod:`nsight_lab.backends.ncu.unshippable`.
"""

from __future__ import annotations

import ctypes
import sys
import types
from typing import Any

Reduced = tuple[Any, tuple[Any, ...]]
"""A pickle ``reduce`` value: a callable and its arguments."""

_PROTOTYPE = ("argtypes", "restype", "errcheck")
_MAX_WRAPPERS = 8
"""dynamo wraps the backend in a few callbacks (two in torch 2.13); stop well after."""
FUNCTION_POINTER: type = ctypes.CFUNCTYPE(None).__mro__[1]
"""ctypes' base of every foreign function (``ctypes._CFuncPtr``, not exported)."""


def reduce_for_child(obj: object) -> Reduced | None:
    """How to rebuild ``obj`` in the child, or ``None`` to pickle it as it is."""
    if type(obj) in (ctypes.CDLL, ctypes.PyDLL):
        return _reduce_library(obj)
    if "torch" in sys.modules:
        return _reduce_compiled(obj)
    return None


# ---------------------------------------------------------------- torch.compile


def compiled_original(obj: object) -> object | None:
    """The module or function ``torch.compile`` wrapped into ``obj``, if it did.

    Recognised by type (dynamo's ``OptimizedModule``) or by the attribute dynamo sets
    on the function it returns, read from the function's own ``__dict__``: asking any
    object for it could run that object's ``__getattr__``.
    """
    if isinstance(obj, types.FunctionType):
        original: object = obj.__dict__.get("_torchdynamo_orig_callable")
        return original
    if any(cls.__name__ == "OptimizedModule" for cls in type(obj).__mro__):
        module: object = getattr(obj, "_orig_mod", None)
        return module
    return None


def compile_settings(obj: object) -> dict[str, Any] | None:
    """The ``torch.compile`` keyword arguments ``obj`` was made with, if readable.

    Read from dynamo's context (torch internals, checked as far as they are used):
    its ``fullgraph``, and the backend behind its callback's wrappers. The inductor
    backend keeps the mode's options merged with the caller's, given back as
    ``options`` (``mode="reduce-overhead"`` is ``options={"triton.cudagraphs": True}``).
    """
    context = _dynamo_context(obj)
    if context is None:
        return None
    backend: Any = getattr(context, "callback", None)
    for _ in range(_MAX_WRAPPERS):
        if not hasattr(backend, "_torchdynamo_orig_backend"):
            break
        backend = backend._torchdynamo_orig_backend  # noqa: SLF001
    settings: dict[str, Any] = {"fullgraph": bool(getattr(context, "fullgraph", False))}
    kind = type(backend).__name__
    if kind == "_TorchCompileInductorWrapper":
        settings.update(backend="inductor", options=dict(backend.config))
    elif kind == "_TorchCompileWrapper":
        settings.update(backend=backend.compiler_fn, **dict(backend.kwargs))
    else:
        return None
    settings["dynamic"] = backend.dynamic
    return settings


def _dynamo_context(obj: object) -> object | None:
    """Dynamo's context of a compiled module (attribute) or function (closure)."""
    context: object = getattr(obj, "dynamo_ctx", None)
    if context is not None:
        return context
    code = getattr(obj, "__code__", None)
    closure = getattr(obj, "__closure__", None) or ()
    names = code.co_freevars if code is not None else ()
    cells = dict(zip(names, closure, strict=False))
    cell = cells.get("self")
    if cell is None:
        return None
    contents: object = cell.cell_contents
    return contents


def _reduce_compiled(obj: object) -> Reduced | None:
    original = compiled_original(obj)
    if original is None:
        return None
    settings = compile_settings(obj)
    if settings is None:
        return None
    return _recompile, (original, settings)


def _recompile(original: object, settings: dict[str, Any]) -> object:
    """``torch.compile(original, **settings)`` in the child (while unpickling)."""
    import torch  # noqa: PLC0415  (optional and heavy: PyTorch)

    compile_: Any = torch.compile
    return compile_(original, **settings)


# ----------------------------------------------------------------------- ctypes


def _reduce_library(library: Any) -> Reduced:  # noqa: ANN401  (a ctypes.CDLL)
    """A loaded library as its name and the prototypes set on its functions."""
    prototypes = {
        name: {attr: getattr(function, attr) for attr in _PROTOTYPE}
        for name, function in vars(library).items()
        if isinstance(function, FUNCTION_POINTER)
    }
    return _reload_library, (type(library), library._name, prototypes)  # noqa: SLF001


def _reload_library(
    kind: type[ctypes.CDLL], name: str | None, prototypes: dict[str, dict[str, Any]]
) -> ctypes.CDLL:
    """Load the library again in the child and set its functions' prototypes."""
    library = kind(name)
    for function_name, prototype in prototypes.items():
        function = getattr(library, function_name)
        for attr, value in prototype.items():
            if attr != "errcheck" or value is not None:
                setattr(function, attr, value)
    return library
