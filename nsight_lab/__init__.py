"""nsight-lab: GPU kernel profiling inside the notebook.

``%load_ext nsight_lab`` registers the ``%%nsight`` magic; ``nsight_lab.annotate`` marks
regions. ``import nsight_lab as nsight`` is nsight-python 1.1.0's API (``analyze``,
``experimental``, ``ProfileResults``, ...: :mod:`nsight_lab.api`), loaded on first
use. Importing this package probes no hardware and loads no backend.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nsight_lab.nsight_modules import NSIGHT_PYTHON_VERSION
from nsight_lab.regions import annotate

try:
    from nsight_lab._version import __version__
except ImportError:  # a source checkout that was never built
    __version__ = "0.0.0+unknown"

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

__all__ = [
    "NSIGHT_PYTHON_VERSION",
    "CollectionScope",
    "InfoCollector",
    "ProfileResults",
    "Tool",
    "VerbosityLevel",
    "__version__",
    "activate",
    "analyze",
    "annotate",
    "col_panel",
    "deactivate",
    "exceptions",
    "experimental",
    "get_active_tool",
    "load_ipython_extension",
    "row_panel",
    "use_backend",
]

API_NAMES = frozenset(
    {
        "CollectionScope", "InfoCollector", "ProfileResults", "Tool", "VerbosityLevel",
        "activate", "analyze", "annotation", "col_panel", "collection", "deactivate",
        "exceptions", "experimental", "extraction", "get_active_tool", "info_collector",
        "row_panel", "thermovision", "tools_manager", "transformation", "use_backend",
        "utils", "visualization",
    }
)  # fmt: skip
"""nsight-python's names and submodules, from :mod:`nsight_lab.api` on first use.

``__version__`` here is nsight-lab's own; ``NSIGHT_PYTHON_VERSION`` the nsight-python
release whose API it serves (``nsight.__version__`` where ``import nsight`` is
nsight-lab's stand-in).

The Jupyter server imports this package: pandas and plotly load only when a profile
needs them.
"""


def __getattr__(name: str) -> Any:  # noqa: ANN401  (module attributes of any kind)
    """nsight-python's API names, imported from :mod:`nsight_lab.api` when asked.

    Raises:
        AttributeError: ``name`` is not one of them.
    """
    if name in API_NAMES:
        api = importlib.import_module("nsight_lab.api")
        value = getattr(api, name)
        globals()[name] = value
        return value
    msg = f"module 'nsight_lab' has no attribute {name!r}"
    raise AttributeError(msg)


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """Register the ``%nsight`` / ``%%nsight`` magics (called by ``%load_ext``).

    They start importing what the first ``%%nsight`` cell needs in the background
    (:class:`nsight_lab.magic.warmup.WarmUp`).
    """
    from nsight_lab.magic import register  # noqa: PLC0415  (IPython: on %load_ext)

    register(ipython)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "nsight-lab"}]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    # An ExtensionApp, for its stop hook (nsight_lab.server.app says why).
    from nsight_lab.server.app import NsightLabApp  # noqa: PLC0415  (jupyter_server: server only)

    return [{"module": "nsight_lab", "app": NsightLabApp}]
