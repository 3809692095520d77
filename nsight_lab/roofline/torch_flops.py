"""PyTorch's FLOP formulas (``torch.utils.flop_counter``), loaded without Triton.

``torch.utils.flop_counter`` imports ``triton.runtime.jit`` at its top, only to
recognise Triton kernels given to ``register_flop_formula``: 0.2 s of Triton on the
H100 and H200 (``benchmarks/first_cell.py``), on the path of every first ``%%nsight``
cell (the work model's formulas), for cells that never touch Triton. Imported here,
that one import of Triton fails on this thread while Triton is not loaded yet (other
threads import it as ever), PyTorch's warning that Triton is missing is kept back,
and its test for a Triton kernel is given a class that asks whether an object is one
only once Triton is loaded: a ``JITFunction`` exists only then, so the test answers as
PyTorch's own would. Where the process already imported Triton, PyTorch's module is
imported as it is.

The warm-up of ``%load_ext`` imports this module (:mod:`nsight_lab.magic.warmup`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import logging
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

__all__ = ["TritonKernel", "flop_counter", "flop_registry"]

TRITON = "triton"
JIT_MODULE = "triton.runtime.jit"


class _TritonKernelType(type):
    """Metaclass: an instance is a Triton ``JITFunction``, once Triton is loaded."""

    def __instancecheck__(cls, instance: object) -> bool:
        jit = sys.modules.get(JIT_MODULE)
        kernel = getattr(jit, "JITFunction", None)
        return kernel is not None and isinstance(instance, kernel)


class TritonKernel(metaclass=_TritonKernelType):
    """Stands for ``triton.runtime.jit.JITFunction`` without importing Triton."""


class _NoTritonHere(importlib.abc.MetaPathFinder):
    """Fails imports of Triton made on the thread that made it; passes all others."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,  # noqa: ARG002  (the finder protocol)
        target: ModuleType | None = None,  # noqa: ARG002
    ) -> ModuleSpec | None:
        if threading.get_ident() == self.thread and (
            fullname == TRITON or fullname.startswith(f"{TRITON}.")
        ):
            msg = f"No module named {fullname!r} (nsight-lab loads no Triton)"
            raise ModuleNotFoundError(msg, name=fullname)
        return None


class _OtherThreads(logging.Filter):
    """Keeps back the records of the thread that made it."""

    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread != self.thread


def flop_counter() -> Any:  # noqa: ANN401  (the torch.utils.flop_counter module)
    """``torch.utils.flop_counter``, imported without Triton unless already loaded."""
    name = "torch.utils.flop_counter"
    module = sys.modules.get(name)
    if module is not None and not getattr(module.__spec__, "_initializing", False):
        return module
    if TRITON in sys.modules:
        return importlib.import_module(name)
    finder, quiet = _NoTritonHere(), _OtherThreads()
    logger = logging.getLogger(name)
    sys.meta_path.insert(0, finder)
    logger.addFilter(quiet)
    try:
        module = importlib.import_module(name)
    finally:
        sys.meta_path.remove(finder)
        logger.removeFilter(quiet)
    if module.__dict__.get("_JITFunction") is type(None):  # Triton was kept out
        module.__dict__["_JITFunction"] = TritonKernel
    return module


def flop_registry() -> dict[Any, Any]:
    """PyTorch's FLOP formulas by op overload packet (``flop_registry``)."""
    registry: dict[Any, Any] = flop_counter().flop_registry
    return registry
