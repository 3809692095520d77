"""``nsight.annotation``: the module of nsight-python's ``annotate``.

``annotate`` is nsight-lab's region marker (:func:`nsight_lab.regions.annotate`);
nsight-python's bookkeeping of the open regions (``is_active_annotation``, ...) is
nsight-lab's :class:`~nsight_lab.regions.RegionTracker`, not served here.
"""

from __future__ import annotations

from nsight_lab.api._unserved import no_attribute, unserved
from nsight_lab.regions import annotate

__all__ = ["annotate"]

_MODULE = "nsight.annotation"
_INSTEAD = "nsight-lab tracks the open regions itself while a profile runs"
add_active_annotation = unserved(_MODULE, "add_active_annotation", _INSTEAD)
clear_active_annotations = unserved(_MODULE, "clear_active_annotations", _INSTEAD)
is_active_annotation = unserved(_MODULE, "is_active_annotation", _INSTEAD)


def __getattr__(name: str) -> object:
    raise no_attribute(_MODULE, name, __all__)
