"""nsight-python 1.1.0's public API, measured by nsight-lab.

Code written for NVIDIA's nsight-python runs unchanged with ``import nsight_lab as
nsight`` (or with ``import nsight`` in a notebook after ``%load_ext nsight_lab`` where
nsight-python is not installed): ``annotate``, ``analyze.kernel``, ``analyze.plot``,
``analyze.ignore_failures``, ``ProfileResults``, ``experimental.collect`` with
``CollectionScope`` and ``InfoCollector``, ``VerbosityLevel``, ``Tool`` with
``activate``/``deactivate``/``get_active_tool``, and ``exceptions``. Every profile
is a session of nsight-lab's store, shown in the sidebar and, in a notebook, live in
the cell's output, exactly like a ``%%nsight`` cell (:mod:`nsight_lab.session`).

nsight-python's submodules (``nsight.collection.ncu``, ``nsight.utils``, ...; the
list is :data:`nsight_lab.nsight_modules.NSIGHT_MODULES`) are modules here too, loaded
on first use. :data:`NSIGHT_PYTHON_VERSION` says which nsight-python release the API
follows.

nsight-lab's own additions: ``use_backend`` (the backend the next profiles use), and
``analyze.kernel``'s ``backend``/``warmup`` keywords.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from nsight_lab.api import analyze, exceptions, experimental
from nsight_lab.api.collect import CollectionScope, InfoCollector
from nsight_lab.api.plot import col_panel, row_panel
from nsight_lab.api.results import ProfileResults
from nsight_lab.api.settings import VerbosityLevel
from nsight_lab.api.tools import (
    Tool,
    activate,
    deactivate,
    get_active_tool,
    use_backend,
)
from nsight_lab.nsight_modules import NSIGHT_PYTHON_VERSION, SUBMODULES
from nsight_lab.regions import annotate

if TYPE_CHECKING:
    import types

__all__ = [
    "NSIGHT_PYTHON_VERSION",
    "CollectionScope",
    "InfoCollector",
    "ProfileResults",
    "Tool",
    "VerbosityLevel",
    "activate",
    "analyze",
    "annotate",
    "col_panel",
    "deactivate",
    "exceptions",
    "experimental",
    "get_active_tool",
    "row_panel",
    "use_backend",
]


def __getattr__(name: str) -> types.ModuleType:
    """nsight-python's submodules (``collection``, ``utils``, ...), on first use.

    Raises:
        AttributeError: ``name`` is none of them.
    """
    if name in SUBMODULES:
        return importlib.import_module(f"nsight_lab.api.{name}")
    msg = f"module 'nsight_lab.api' has no attribute {name!r}"
    raise AttributeError(msg)
