"""A real Jupyter kernel for benchmarks that time cells as JupyterLab runs them.

Started with jupyter_client (as JupyterLab starts one) and given a throwaway run
store: ``cpu_session_drift.py`` and ``host_probe_cost.py`` use it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


def use_throwaway_store(prefix: str) -> None:
    """Point this process, and the kernels it starts, at a fresh empty store."""
    os.environ["NSIGHT_LAB_HOME"] = tempfile.mkdtemp(prefix=prefix)
    os.environ.pop("NSIGHT_LAB_STORE", None)


@contextlib.contextmanager
def jupyter_kernel() -> Iterator[Callable[[str], str]]:
    """Yield ``run(code) -> stdout`` on a fresh kernel, shut down on exit.

    ``run`` raises ``RuntimeError`` when the cell fails.
    """
    import jupyter_client

    manager, client = jupyter_client.manager.start_new_kernel(kernel_name="python3")

    def run(code: str) -> str:
        out: list[str] = []

        def hook(msg: dict) -> None:
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])

        reply = client.execute_interactive(code, output_hook=hook, timeout=600)
        if reply["content"]["status"] != "ok":
            msg = f"the cell failed: {reply['content']}"
            raise RuntimeError(msg)
        return "".join(out)

    try:
        yield run
    finally:
        manager.shutdown_kernel(now=True)
