"""``nsight.tools_manager``: nsight-python 1.1.0's tool selection.

``Tool``, ``activate``, ``deactivate`` and ``get_active_tool`` are
:mod:`nsight_lab.api.tools`'s (NCU: the backend ``auto`` picks, ncu where a call keeps
its report; CUPTI: the cupti backend).
"""

from __future__ import annotations

from nsight_lab.api._unserved import no_attribute
from nsight_lab.api.tools import Tool, activate, deactivate, get_active_tool

_MODULE = "nsight.tools_manager"

__all__ = ["Tool", "activate", "deactivate", "get_active_tool"]


def __getattr__(name: str) -> object:
    raise no_attribute(_MODULE, name, __all__)
