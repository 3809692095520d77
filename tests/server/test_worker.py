"""The server's child processes are started, and warm, before the first request."""

from __future__ import annotations

import json

import tornado.web

from nsight_lab.server import _worker, setup_handlers


def test_loading_the_extension_starts_the_children_and_their_imports() -> None:
    _worker.shutdown()  # no pool left by another test
    setup_handlers(tornado.web.Application(base_url="/"))
    pool = _worker._pool  # noqa: SLF001
    assert pool is not None  # started by the extension, not by a request
    children = list(pool._processes.values())  # noqa: SLF001
    assert len(children) == _worker.WORKERS
    # Each child imports plotly, pandas and the figure code: what made the first
    # request wait. Tasks queued after the warm-up find them loaded.
    held = [future.result(timeout=120) for future in _worker.warm()]
    assert held == [sorted(_worker.HEAVY)] * _worker.WORKERS
    assert len(pool._processes) == _worker.WORKERS  # noqa: SLF001  (no more started)


async def test_a_session_view_is_built_by_the_warm_children(jp_fetch, filled) -> None:
    pool = _worker._pool  # noqa: SLF001
    assert pool is not None
    before = set(pool._processes)  # noqa: SLF001
    response = await jp_fetch(
        "nsight-lab", "api", "sessions", str(filled.base), params={"figures": "1"}
    )
    assert response.code == 200
    assert json.loads(response.body)["figures"]
    assert set(pool._processes) == before  # noqa: SLF001  (served, none started)


def test_a_host_that_cannot_start_children_now_still_loads_the_extension(
    monkeypatch, caplog
) -> None:
    def refuse() -> None:
        msg = "[Errno 11] Resource temporarily unavailable"
        raise OSError(msg)

    monkeypatch.setattr(_worker, "warm", refuse)
    app = tornado.web.Application(base_url="/")
    setup_handlers(app)
    paths = [
        rule.matcher._path  # noqa: SLF001
        for host in app.default_router.rules
        for rule in host.target.rules
    ]
    assert "/nsight-lab/api/status" in paths  # the routes are registered all the same
    assert "figure workers not started ahead: [Errno 11]" in caplog.text
