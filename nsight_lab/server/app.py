"""The extension as Jupyter Server runs it: routes on load, children stopped on stop.

An :class:`~jupyter_server.extension.application.ExtensionApp` rather than a bare
module, for its stop hook: the server's own shutdown (and each test server's
clean-up) calls :meth:`NsightLabApp.stop_extension`, which stops the pool of child
processes (:class:`~nsight_lab.server.workers.Workers`, started as the extension
loads), the event watcher's thread and the store connections. Without it every
server left its two spawned children running: a test run that starts a server per
test left hundreds (22 GB on the 2-core CI machine, and the kernel's OOM killer).
"""

from __future__ import annotations

import asyncio
from typing import Any

from jupyter_server.extension.application import ExtensionApp

from nsight_lab.server import setup_handlers, stop_handlers

__all__ = ["NsightLabApp"]


class NsightLabApp(ExtensionApp):
    """nsight-lab's server extension (``jpserver_extensions: nsight_lab``)."""

    # The module's name: the one ``jpserver_extensions`` enables. ExtensionApp also
    # puts its (empty) traitlets config at settings["nsight_lab_config"];
    # setup_handlers runs after and sets nsight-lab's own config there.
    name = "nsight_lab"
    load_other_extensions = True

    def initialize_handlers(self) -> None:
        """Register every route (the routes carry the base URL themselves)."""
        setup_handlers(self.serverapp.web_app)  # type: ignore[union-attr]
        self.log.info("[nsight-lab] server extension loaded")

    async def stop_extension(self) -> None:
        """Stop the child processes, the event watcher and the store connections."""
        settings: dict[str, Any] = self.serverapp.web_app.settings  # type: ignore[union-attr]
        await asyncio.to_thread(stop_handlers, settings)
