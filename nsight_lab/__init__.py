"""nsight-lab: GPU kernel profiling inside the notebook.

``%load_ext nsight_lab`` registers the ``%%nsight`` magic; ``nsight_lab.annotate`` marks
regions. ``import nsight_lab as nsight`` is nsight-python 1.1.0's API (``analyze``,
``experimental``, ``ProfileResults``, ...: :mod:`nsight_lab.api`), loaded on first
use. Importing this package probes no hardware and loads no backend.
"""

from __future__ import annotations

import importlib
import sys
import threading
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
    "start_warm_up",
    "use_backend",
    "wait_for_warm_up",
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

    Then start importing what the first ``%%nsight`` cell needs in the background
    (:func:`start_warm_up`).
    """
    from nsight_lab.magic import register

    register(ipython)
    start_warm_up()


WARM_UP_MODULES = (
    "nsight_lab.options",
    "nsight_lab.plan",
    "nsight_lab.backends",
    "nsight_lab.backends.inprocess",
    "nsight_lab.runner",
    "nsight_lab.store.run_store",
    "nsight_lab.store.writer",
    "nsight_lab.results",  # pandas: 0.2 s on a 2-core CPU, 0.65 s on the H200
    "nsight_lab.roofline.peaks",
    "nsight_lab.roofline.placement",
)
"""What every ``%%nsight`` cell imports before it runs, warmed at ``%load_ext``."""
WARM_UP_TORCH_MODULES = ("nsight_lab.roofline.workmodel", "torch.utils.flop_counter")
"""The work model's imports, warmed only where PyTorch is already imported."""
WARM_UP_IF_IDLE = ("nsight_lab.views.live",)
"""The live view (plotly, anywidget: 0.4 s): warmed only if no cell came meanwhile."""
WARM_UP_IDLE_S = 1.0
"""How long after the rest :data:`WARM_UP_IF_IDLE` waits for no cell to come."""
WARM_UP_WAIT_S = 30.0
"""The longest a cell waits for the warm-up before going on by itself."""

_warm_up: threading.Thread | None = None
_cell_waits = threading.Event()
warm_up_errors: list[str] = []
"""Modules the warm-up failed to import, and why (a cell imports them again)."""


def start_warm_up() -> threading.Thread:
    """Import what the first cell needs in a daemon thread (once per process).

    Only imports: nothing is measured, no dispatch mode is entered (PyTorch keeps its
    dispatch-mode flags in module globals, which a mode entered on another thread
    would race with the user's own modes), and PyTorch itself is never imported here
    (importing it on two threads at once can deadlock): the work model's imports are
    warmed only if ``torch`` is already fully imported. A ``%nsight`` call waits for
    the thread (:func:`wait_for_warm_up`), so nothing is imported on two threads at
    once and no import competes with a measured run.
    """
    global _warm_up  # noqa: PLW0603  (one warm-up per process)
    if _warm_up is None:
        _warm_up = threading.Thread(
            target=_warm, name="nsight-lab-warm-up", daemon=True
        )
        _warm_up.start()
    return _warm_up


def wait_for_warm_up(timeout: float | None = None) -> None:
    """Wait until the warm-up has finished, if one runs.

    The warm-up then skips what a cell may not need (:data:`WARM_UP_IF_IDLE`) unless
    it has begun: a cell run right after ``%load_ext`` waits for no more than it
    would import itself. At most ``timeout`` seconds (:data:`WARM_UP_WAIT_S` by
    default): a warm-up that failed or hangs only leaves the cell to import by
    itself.
    """
    _cell_waits.set()
    thread = _warm_up
    if thread is not None and thread is not threading.current_thread():
        thread.join(WARM_UP_WAIT_S if timeout is None else timeout)


def _warm() -> None:
    modules = list(WARM_UP_MODULES)
    torch = sys.modules.get("torch")
    spec = getattr(torch, "__spec__", None)
    if torch is not None and not getattr(spec, "_initializing", False):
        modules += WARM_UP_TORCH_MODULES
    for name in modules:
        _import(name)
    if not _cell_waits.wait(WARM_UP_IDLE_S):  # no cell came: the user is typing
        for name in WARM_UP_IF_IDLE:
            _import(name)


def _import(name: str) -> None:
    try:
        importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001  (a cell imports it again, and says why)
        warm_up_errors.append(f"{name}: {type(exc).__name__}: {exc}")


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "nsight-lab"}]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "nsight_lab"}]


def _load_jupyter_server_extension(server_app: Any) -> None:  # noqa: ANN401
    from nsight_lab.server import setup_handlers

    setup_handlers(server_app.web_app)
    server_app.log.info("[nsight-lab] server extension loaded")
