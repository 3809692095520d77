"""``nsight.collection``: nsight-python's package of ``ncu``, ``cupti`` and ``core``.

nsight-python code reaches ``nsight.collection.ncu.injection_load_error`` (did Nsight
Compute attach?) and ``nsight.collection.core.ProfileResults``; see each submodule.
"""

from __future__ import annotations

from nsight_lab.api._unserved import no_attribute
from nsight_lab.api.collection import core, cupti, ncu

_MODULE = "nsight.collection"

__all__ = ["core", "cupti", "ncu"]


def __getattr__(name: str) -> object:
    raise no_attribute(_MODULE, name, __all__)
