"""nsight-python 1.1.0's public API, measured by nsight-lab.

Code written for NVIDIA's nsight-python runs unchanged with ``import nsight_lab as
nsight`` (or with ``import nsight`` in a notebook after ``%load_ext nsight_lab`` where
nsight-python is not installed): ``annotate``, ``analyze.kernel``, ``analyze.plot``,
``analyze.ignore_failures``, ``ProfileResults``, ``experimental.collect`` with
``CollectionScope`` and ``InfoCollector``, ``VerbosityLevel``, ``Tool`` with
``activate``/``deactivate``/``get_active_tool``, and ``exceptions``. Every profile
is a session of nsight-lab's store, shown in the sidebar and, in a notebook, live in
the cell's output, exactly like a ``%%nsight`` cell (:mod:`nsight_lab.session`).

nsight-lab's own additions: ``use_backend`` (the backend the next profiles use), and
``analyze.kernel``'s ``backend``/``warmup`` keywords.
"""

from __future__ import annotations

from nsight_lab.api import analyze, exceptions, experimental
from nsight_lab.api.collect import CollectionScope, InfoCollector
from nsight_lab.api.kernel import VerbosityLevel
from nsight_lab.api.plot import col_panel, row_panel
from nsight_lab.api.results import ProfileResults
from nsight_lab.api.tools import (
    Tool,
    activate,
    deactivate,
    get_active_tool,
    use_backend,
)
from nsight_lab.regions import annotate

__all__ = [
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
