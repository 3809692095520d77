"""``nsight.utils``: the public names nsight-python keeps in its ``utils`` module.

``VerbosityLevel``, ``row_panel``/``col_panel`` (nsight-lab's) and
``CUDA_CORE_AVAILABLE``, which says, as nsight-python's does, whether ``cuda.core`` is
importable (nsight-lab's ``ignore_failures`` does not need it). nsight-python's
helpers for its own output and its ncu log are not served. (The module's name is
nsight-python's; nsight-lab itself keeps no ``utils`` module.)
"""

from __future__ import annotations

import importlib.util

from nsight_lab.api._unserved import no_attribute
from nsight_lab.api.plot import col_panel, row_panel
from nsight_lab.api.settings import VerbosityLevel

_MODULE = "nsight.utils"

__all__ = ["CUDA_CORE_AVAILABLE", "VerbosityLevel", "col_panel", "row_panel"]


def _cuda_core_importable() -> bool:
    try:
        return importlib.util.find_spec("cuda.core") is not None
    except (ImportError, ValueError):  # no ``cuda`` package; a module without spec
        return False


CUDA_CORE_AVAILABLE = _cuda_core_importable()
"""Whether ``cuda.core`` is importable (read once, at this module's import)."""


def __getattr__(name: str) -> object:
    raise no_attribute(_MODULE, name, __all__)
