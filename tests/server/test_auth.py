"""Every nsight-lab route refuses requests without a valid token."""

from __future__ import annotations

import pytest
import tornado.httpclient
from tornado.routing import Router

from nsight_lab.store.run_store import RunStore

# (method, path below <base_url>/nsight-lab/api/): every verb of every route.
REQUESTS = [
    ("GET", "status"),
    ("GET", "sessions"),
    ("GET", "sessions?notebook=a.ipynb&limit=5"),
    ("GET", "sessions/1"),
    ("GET", "sessions/1?figures=1"),
    ("DELETE", "sessions/1"),
    ("GET", "sessions/1/export?format=csv"),
    ("GET", "sessions/1/export?format=parquet&what=results"),
    ("GET", "sessions/1/report"),
    ("GET", "compare?a=1&b=2"),
]
WEBSOCKETS = ["events"]
VERBS = ("get", "post", "put", "patch", "delete")


def nsight_rules(router, found=None):
    """Yield ``(regex, handler class)`` of every nsight-lab route in the app."""
    found = [] if found is None else found
    for rule in getattr(router, "rules", []):
        if isinstance(rule.target, Router):
            nsight_rules(rule.target, found)
            continue
        regex = getattr(rule.matcher, "regex", None)
        if regex is not None and "/nsight-lab/api/" in regex.pattern:
            found.append((regex, rule.target))
    return found


def test_every_route_and_verb_is_in_the_refusal_tables(jp_web_app, jp_base_url):
    # Given: the routes the extension registered
    rules = nsight_rules(jp_web_app.default_router)
    assert len(rules) == 7
    requests = [(m.lower(), p.partition("?")[0]) for m, p in REQUESTS]
    requests += [("get", p) for p in WEBSOCKETS]

    # Then: each verb each handler defines is requested below without a token
    for regex, handler in rules:
        verbs = {v for v in VERBS if v in vars(handler)}
        assert verbs, handler
        for verb in verbs:
            assert any(
                method == verb
                and regex.fullmatch(f"{jp_base_url}nsight-lab/api/{path}")
                for method, path in requests
            ), (handler.__name__, verb)


@pytest.fixture
def store_with_a_session(db_path):
    with RunStore(db_path) as store:
        a = store.create_session(backend="cpu").id
        b = store.create_session(backend="cpu").id
        store.finish_session(a, "completed")  # a running session is not deleted (409)
    assert (a, b) == (1, 2)
    return db_path


@pytest.mark.usefixtures("store_with_a_session")
@pytest.mark.parametrize(("method", "path"), REQUESTS)
@pytest.mark.parametrize("authorization", ["", "token not-the-token"])
async def test_rest_refuses_without_a_token(raw_fetch, method, path, authorization):
    # When
    response = await raw_fetch(
        f"nsight-lab/api/{path}", token=False, method=method,
        headers={"Authorization": authorization},
    )  # fmt: skip

    # Then
    assert response.code in {401, 403}
    assert b"schema_version" not in (response.body or b"")


async def test_refused_delete_deletes_nothing(raw_fetch, store_with_a_session):
    response = await raw_fetch(
        "nsight-lab/api/sessions/1", token=False, method="DELETE"
    )
    assert response.code in {401, 403}
    with RunStore(store_with_a_session) as store:
        assert store.get_session(1).id == 1


@pytest.mark.usefixtures("store_with_a_session")
@pytest.mark.parametrize("path", WEBSOCKETS)
@pytest.mark.parametrize("authorization", ["", "token not-the-token"])
async def test_websocket_refuses_without_a_token(jp_ws_fetch, path, authorization):
    # When
    with pytest.raises(tornado.httpclient.HTTPClientError) as excinfo:
        await jp_ws_fetch(
            "nsight-lab", "api", path, headers={"Authorization": authorization}
        )

    # Then
    assert excinfo.value.code in {401, 403}


@pytest.mark.usefixtures("store_with_a_session")
@pytest.mark.parametrize(("method", "path"), REQUESTS)
async def test_rest_answers_with_the_token(raw_fetch, method, path):
    response = await raw_fetch(f"nsight-lab/api/{path}", method=method)
    expected = {404} if path.endswith("report") else {200, 204}  # no kept report
    assert response.code in expected


async def test_websocket_accepts_the_token(jp_ws_fetch):
    ws = await jp_ws_fetch("nsight-lab", "api", "events")
    ws.close()
