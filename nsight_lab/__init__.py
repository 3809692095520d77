"""nsight-lab: GPU kernel profiling inside the notebook.

``%load_ext nsight_lab`` registers the ``%%nsight`` magic; ``nsight_lab.annotate`` marks
regions. Importing this package probes no hardware and loads no backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsight_lab.regions import annotate

try:
    from nsight_lab._version import __version__
except ImportError:  # a source checkout that was never built
    __version__ = "0.0.0+unknown"

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

__all__ = ["__version__", "annotate", "load_ipython_extension"]


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """Register the ``%nsight`` / ``%%nsight`` magics (called by ``%load_ext``)."""
    from nsight_lab.magic import register

    register(ipython)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "nsight-lab"}]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "nsight_lab"}]


def _load_jupyter_server_extension(server_app: Any) -> None:  # noqa: ANN401
    from nsight_lab.server import setup_handlers

    setup_handlers(server_app.web_app)
    server_app.log.info("[nsight-lab] server extension loaded")
