"""``nsight.collection.cupti``: nsight-python's CUPTI tool, as nsight-lab's backend.

``nsight.activate(nsight.Tool.CUPTI)`` calls :func:`init` in nsight-python, which
loads CUPTI and raises where it cannot; here :func:`init` says whether nsight-lab's
``cupti`` backend can run (cupti-python installed, a CUDA device), with nsight-python's
error where not. :func:`finalize` has nothing to tear down: the backend subscribes to
CUPTI only while a profile runs.
"""

from __future__ import annotations

from nsight_lab.api._unserved import no_attribute, unserved
from nsight_lab.api.exceptions import CUPTI_UNAVAILABLE_MSG, ProfilerException
from nsight_lab.contract.registry import get_collector

__all__ = ["finalize", "init"]

_MODULE = "nsight.collection.cupti"
CUPTICollector = unserved(
    _MODULE,
    "CUPTICollector",
    "nsight-lab's cupti backend measures (nsight.activate(nsight.Tool.CUPTI), or "
    "nsight.use_backend('cupti'))",
)


def init() -> None:
    """Check that nsight-lab's cupti backend can run here.

    Raises:
        ProfilerException: It cannot (nsight-python's message, then why and the fix).
    """
    found = get_collector("cupti").probe()
    if found.ok:
        return
    hint = f"; {found.hint}" if found.hint else ""
    msg = f"{CUPTI_UNAVAILABLE_MSG}\nnsight-lab: {found.reason}{hint}"
    raise ProfilerException(msg)


def finalize() -> None:
    """Nothing to stop: the cupti backend holds CUPTI only while a profile runs."""


def __getattr__(name: str) -> object:
    raise no_attribute(_MODULE, name, __all__)
