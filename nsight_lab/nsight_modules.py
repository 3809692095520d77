"""nsight-python's module tree under ``import nsight``: nsight-lab's module for each.

nsight-python code imports more than the top-level names: ``from nsight.collection
import ncu`` (to read ``ncu.injection_load_error``), ``from nsight import
exceptions``, ``from nsight.utils import VerbosityLevel``. Where ``import nsight`` is
nsight-lab's stand-in (:mod:`nsight_lab.nsight_shim`), the stand-in is a package whose
submodules are the modules of :mod:`nsight_lab.api` named in :data:`NSIGHT_MODULES`:
the import system finds them through :class:`NsightModuleFinder` (on
``sys.meta_path``), so ``import nsight.collection.ncu`` and
``nsight.collection.ncu`` are the same module object as
``nsight_lab.api.collection.ncu`` -- one state, whichever name sets it.

This module imports nothing heavy: the stand-in is installed at ``%load_ext``, and a
submodule (with pandas) loads only when code imports it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import types
    from collections.abc import Sequence

__all__ = [
    "NSIGHT_MODULES",
    "NSIGHT_PYTHON_VERSION",
    "SUBMODULES",
    "NsightModuleFinder",
    "install_finder",
]

NSIGHT_PYTHON_VERSION = "1.1.0"
"""The nsight-python release whose API nsight-lab serves (``nsight.__version__`` of
the stand-in; nsight-lab's own version is ``nsight_lab.__version__``)."""

NSIGHT_MODULES: dict[str, str] = {
    "nsight.analyze": "nsight_lab.api.analyze",
    "nsight.annotation": "nsight_lab.api.annotation",
    "nsight.collection": "nsight_lab.api.collection",
    "nsight.collection.core": "nsight_lab.api.collection.core",
    "nsight.collection.cupti": "nsight_lab.api.collection.cupti",
    "nsight.collection.ncu": "nsight_lab.api.collection.ncu",
    "nsight.exceptions": "nsight_lab.api.exceptions",
    "nsight.experimental": "nsight_lab.api.experimental",
    "nsight.extraction": "nsight_lab.api.extraction",
    "nsight.info_collector": "nsight_lab.api.info_collector",
    "nsight.thermovision": "nsight_lab.api.thermovision",
    "nsight.tools_manager": "nsight_lab.api.tools_manager",
    "nsight.transformation": "nsight_lab.api.transformation",
    "nsight.utils": "nsight_lab.api.utils",
    "nsight.visualization": "nsight_lab.api.visualization",
}
"""nsight-python 1.1.0's modules (its wheel's package), each to nsight-lab's."""

SUBMODULES = frozenset(
    name.split(".")[1] for name in NSIGHT_MODULES if name.count(".") == 1
)
"""The top-level submodules (``nsight.collection``, ...): attributes of ``nsight``."""


class NsightModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``nsight.<submodule>`` as nsight-lab's module, where ``nsight`` is ours.

    The module it gives is nsight-lab's own (imported under its own name), not a
    copy: the import system only records it under the ``nsight.`` name too. Where
    ``nsight`` is NVIDIA's nsight-python, this finder finds nothing.
    """

    def __init__(self) -> None:
        """Start with no module given out."""
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,  # noqa: ARG002  (the finder protocol's)
        target: types.ModuleType | None = None,  # noqa: ARG002
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec for ``fullname`` if :data:`NSIGHT_MODULES` has it (else None)."""
        if fullname not in NSIGHT_MODULES:
            return None
        if not getattr(sys.modules.get("nsight"), "__nsight_lab_shim__", False):
            return None
        return importlib.machinery.ModuleSpec(
            fullname, self, is_package=fullname == "nsight.collection"
        )

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        """nsight-lab's module for ``spec.name``, imported under its own name."""
        module = importlib.import_module(NSIGHT_MODULES[spec.name])
        self._specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: give the module its own spec back (the import set ours)."""
        module.__spec__ = self._specs.pop(module.__name__, module.__spec__)


def install_finder() -> None:
    """Put :class:`NsightModuleFinder` first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, NsightModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, NsightModuleFinder())
