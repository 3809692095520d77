"""The warm-up: what the first ``%%nsight`` cell imports, imported at ``%load_ext``.

One :class:`WarmUp` per registered magic (the kernel's): ``%load_ext nsight_lab``
starts its daemon thread, and every ``%nsight`` call waits for it first, so nothing
is imported on two threads at once and no import competes with a measured run.
"""

from __future__ import annotations

import importlib
import sys
import threading
from dataclasses import dataclass, field

from nsight_lab.contract.registry import BUILTIN_BACKENDS

__all__ = [
    "WARM_UP_IDLE_S",
    "WARM_UP_IF_IDLE",
    "WARM_UP_MODULES",
    "WARM_UP_TORCH_MODULES",
    "WARM_UP_WAIT_S",
    "WarmUp",
]

WARM_UP_MODULES = (
    "nsight_lab.options",
    "nsight_lab.plan",
    "nsight_lab.backends",
    "nsight_lab.backends.inprocess",
    # every cell probes every backend: their collectors' modules
    *(entry.collector.partition(":")[0] for entry in BUILTIN_BACKENDS),
    "nsight_lab.distributed.collector",
    "nsight_lab.distributed.group_ranks",
    "nsight_lab.runner",
    "nsight_lab.store.run_store",
    "nsight_lab.store.writer",
    "nsight_lab.results.rows",  # no pandas: a cell imports it only for a DataFrame
    "nsight_lab.roofline.peaks",
    "nsight_lab.roofline.placement",
)
"""What every ``%%nsight`` cell imports before it runs, warmed at ``%load_ext``:
nsight-lab's own modules, no pandas, plotly or Triton (``tests/test_first_cell.py``
lists what a cell imports)."""
WARM_UP_TORCH_MODULES = (
    "nsight_lab.roofline.workmodel",
    "nsight_lab.roofline.torch_flops:flop_counter",  # PyTorch's formulas, no Triton
)
"""The work model's imports, warmed only where PyTorch is already imported
(``module:function``: the module's function is called, to import what it imports)."""
WARM_UP_IF_IDLE = ("nsight_lab.views.live",)
"""The live view (plotly, anywidget: 0.4 s): warmed only if no cell came meanwhile."""
WARM_UP_IDLE_S = 1.0
"""How long after the rest :data:`WARM_UP_IF_IDLE` waits for no cell to come."""
WARM_UP_WAIT_S = 30.0
"""The longest a cell waits for the warm-up before going on by itself."""


@dataclass
class WarmUp:
    """Imports what the first cell needs in a daemon thread, started once.

    Only imports: nothing is measured, no dispatch mode is entered (PyTorch keeps its
    dispatch-mode flags in module globals, which a mode entered on another thread
    would race with the user's own modes), and PyTorch itself is never imported here
    (importing it on two threads at once can deadlock): the work model's imports are
    warmed only if ``torch`` is already fully imported.
    """

    modules: tuple[str, ...] = WARM_UP_MODULES
    if_idle: tuple[str, ...] = WARM_UP_IF_IDLE
    idle_s: float = WARM_UP_IDLE_S
    wait_s: float = WARM_UP_WAIT_S
    thread: threading.Thread | None = None
    errors: list[str] = field(default_factory=list)
    """Modules the warm-up failed to import, and why (a cell imports them again)."""
    cell_waits: threading.Event = field(default_factory=threading.Event)

    def start(self) -> threading.Thread:
        """Start the thread (once: a second call returns the first thread)."""
        if self.thread is None:
            self.thread = threading.Thread(
                target=self.warm, name="nsight-lab-warm-up", daemon=True
            )
            self.thread.start()
        return self.thread

    def wait(self, timeout: float | None = None) -> None:
        """Wait until the warm-up has finished, if one runs.

        The warm-up then skips what a cell may not need (``if_idle``) unless it has
        begun: a cell run right after ``%load_ext`` waits for no more than it would
        import itself. At most ``timeout`` seconds (``wait_s`` by default): a
        warm-up that failed or hangs only leaves the cell to import by itself.
        """
        self.cell_waits.set()
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(self.wait_s if timeout is None else timeout)

    def warm(self) -> None:
        """The thread's work: import the modules, then the idle ones if no cell came."""
        modules = list(self.modules)
        torch = sys.modules.get("torch")
        spec = getattr(torch, "__spec__", None)
        if torch is not None and not getattr(spec, "_initializing", False):
            modules += WARM_UP_TORCH_MODULES
        for name in modules:
            self._import(name)
        if not self.cell_waits.wait(self.idle_s):  # no cell came: the user is typing
            for name in self.if_idle:
                self._import(name)

    def _import(self, name: str) -> None:
        module, _, function = name.partition(":")
        try:
            imported = importlib.import_module(module)
            if function:
                getattr(imported, function)()
        except Exception as exc:  # noqa: BLE001  (a cell imports it again, and says why)
            self.errors.append(f"{name}: {type(exc).__name__}: {exc}")
