"""``nsight.collection.core``: where nsight-python defines ``ProfileResults``.

``ProfileResults`` is nsight-lab's (:class:`nsight_lab.api.results.ProfileResults`).
nsight-python's collector seam (``NsightCollector``, ``NsightProfiler``,
``ProfileSettings``, ``run_profile_session``) is nsight-lab's backends and
:func:`nsight_lab.session.profile`, not served here.
"""

from __future__ import annotations

from nsight_lab.api._unserved import no_attribute, unserved
from nsight_lab.api.results import ProfileResults

__all__ = ["ProfileResults"]

_MODULE = "nsight.collection.core"
_INSTEAD = (
    "profile with nsight.analyze.kernel; nsight-lab's backends measure "
    "(nsight.use_backend names one)"
)
NsightCollector = unserved(_MODULE, "NsightCollector", _INSTEAD)
NsightProfiler = unserved(_MODULE, "NsightProfiler", _INSTEAD)
ProfileSettings = unserved(_MODULE, "ProfileSettings", _INSTEAD)
run_profile_session = unserved(_MODULE, "run_profile_session", _INSTEAD)


def __getattr__(name: str) -> object:
    raise no_attribute(_MODULE, name, __all__)
