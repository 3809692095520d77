"""The server's child processes are started, and warm, before the first request.

The extension owns them (a :class:`Workers` in its settings, no process-wide pool).
"""

from __future__ import annotations

import json
from pathlib import Path

import tornado.web

from nsight_lab.server import setup_handlers, workers
from nsight_lab.server.base import WORKERS_KEY


def test_loading_the_extension_starts_the_children_and_their_imports() -> None:
    app = tornado.web.Application(base_url="/")
    setup_handlers(app)
    owned = app.settings[WORKERS_KEY]
    try:
        pool = owned.pool
        assert pool is not None  # started by the extension, not by a request
        children = list(pool._processes.values())  # noqa: SLF001
        assert len(children) == workers.WORKERS
        # Each child imports pandas and the view model's jobs: what made the first
        # request wait. Tasks queued after the warm-up find them loaded.
        held = [future.result(timeout=120) for future in owned.warm()]
        assert held == [sorted(workers.HEAVY)] * workers.WORKERS
        assert len(pool._processes) == workers.WORKERS  # noqa: SLF001  (no more)
    finally:
        owned.shutdown()
    assert owned.pool is None


def test_two_extensions_hold_two_pools() -> None:
    first, second = (
        tornado.web.Application(base_url="/"),
        tornado.web.Application(base_url="/"),
    )
    setup_handlers(first)
    setup_handlers(second)
    try:
        assert first.settings[WORKERS_KEY] is not second.settings[WORKERS_KEY]
    finally:
        first.settings[WORKERS_KEY].shutdown()
        second.settings[WORKERS_KEY].shutdown()


async def test_a_comparison_is_built_by_the_warm_children(
    jp_fetch, jp_web_app, filled
) -> None:
    pool = jp_web_app.settings[WORKERS_KEY].pool
    assert pool is not None
    before = set(pool._processes)  # noqa: SLF001
    response = await jp_fetch(
        "nsight-lab",
        "api",
        "compare",
        params={"a": str(filled.base), "b": str(filled.base)},
    )
    assert response.code == 200
    assert json.loads(response.body)["rows"]
    assert set(pool._processes) == before  # noqa: SLF001  (served, none started)


def test_a_host_that_cannot_start_children_now_still_loads_the_extension(
    monkeypatch, caplog
) -> None:
    def refuse(self) -> None:  # noqa: ARG001  (a method)
        msg = "[Errno 11] Resource temporarily unavailable"
        raise OSError(msg)

    monkeypatch.setattr(workers.Workers, "warm", refuse)
    app = tornado.web.Application(base_url="/")
    setup_handlers(app)
    paths = [
        rule.matcher._path  # noqa: SLF001
        for host in app.default_router.rules
        for rule in host.target.rules
    ]
    assert "/nsight-lab/api/status" in paths  # the routes are registered all the same
    assert "figure workers not started ahead: [Errno 11]" in caplog.text


async def test_the_servers_shutdown_stops_its_children(jp_serverapp) -> None:
    """A server that stops leaves no child behind (each test server left two: 22 GB).

    The server's own shutdown path (``cleanup_extensions``, what ``_cleanup`` and a
    Ctrl-C of ``jupyter lab`` run) reaches the extension's stop hook.
    """
    owned = jp_serverapp.web_app.settings[WORKERS_KEY]
    [future.result(timeout=120) for future in owned.warm()]
    pids = list(owned.pool._processes)  # noqa: SLF001
    assert len(pids) == workers.WORKERS
    assert _alive(pids) == pids
    await jp_serverapp.cleanup_extensions()
    assert owned.pool is None
    assert _alive(pids) == []
    await jp_serverapp.cleanup_extensions()  # idempotent: a second stop is harmless


def _alive(pids: list[int]) -> list[int]:
    """The pids of processes that still exist (a reaped child has no /proc entry)."""
    return [pid for pid in pids if Path(f"/proc/{pid}").exists()]
