"""No request input takes the server down; refusals that protect the store hold.

- REST fuzzing (hypothesis) of every route and query argument: never a 5xx, and
  every 4xx from an nsight-lab handler is one ``{"message", "error"}`` line;
- a session still being written by a live process is not deleted (409);
- XSRF: a cookie-authenticated DELETE without the ``_xsrf`` token is refused;
- a websocket upgrade from another origin is refused (403).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import urllib.parse
from http.cookies import SimpleCookie
from typing import TYPE_CHECKING

import pytest
import tornado.httpclient
import tornado.websocket
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nsight_lab.server.handlers import FILTERS
from nsight_lab.store.run_store import RunStore

INPUT_ERRORS = {"RequestError", "QueryError", "BaselineError"}
"""What a malformed request is answered with (subclasses of InputError: 400)."""

if TYPE_CHECKING:
    from pathlib import Path

# -- fuzzing -------------------------------------------------------------------------

HUGE = "9" * 5_000
"""More digits than Python converts (4,300) to an int."""
EDGE_VALUES = [
    HUGE, "-" + HUGE, "0" * 5_000 + "1", "-1", "0", "1", "1.5", "1e3", "0x10",
    "9223372036854775807", "9223372036854775808", "\u0661\u0662", "\uff11\uff12",
    " 7 ", "",
    "9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00",
    "9999-12-31T23:59:59.999999", "0001-01-01", "2025-06-01T12:00:00Z",
    "2025-13-45", "\x00", "\u202e", "é", "😀" * 100, "a" * 10_000, "true", "maybe",
    "csv", "parquet", "runs", "results", "running", "=HYPERLINK(1)",
]  # fmt: skip
PARAMS = [
    "limit", "offset", "after_id", "tail", "figures", "format", "what", "config",
    "a", "b", "threshold", *FILTERS,
]  # fmt: skip
"""Every query argument a handler reads (the session filters from their one table)."""
ROUTES = [
    ("GET", "status"),
    ("GET", "sessions"),
    ("GET", "sessions/{id}"),
    ("DELETE", "sessions/{id}"),
    ("GET", "sessions/{id}/export"),
    ("GET", "sessions/{id}/report"),
    ("GET", "compare"),
]
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
_VALUES = st.one_of(
    st.sampled_from(EDGE_VALUES),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    _TEXT,
)
_IDS = st.one_of(
    st.sampled_from(["1", "2", "3", "0", HUGE, "0" * 4_999 + "1", "-1", "x", "\u0661"]),
    st.integers(min_value=0, max_value=10**40).map(str),
    _TEXT,
)
_REQUESTS = st.tuples(
    st.sampled_from(ROUTES),
    _IDS,
    st.dictionaries(st.one_of(st.sampled_from(PARAMS), _TEXT), _VALUES, max_size=4),
)
N_EXAMPLES = 400


def _draw_requests() -> list[tuple[str, str]]:
    """Let hypothesis draw the requests (the server is awaited afterwards)."""
    drawn: list[tuple[str, str]] = []

    @settings(
        max_examples=N_EXAMPLES, database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(_REQUESTS)
    def draw(request):
        (method, route), sid, params = request
        path = route.replace("{id}", urllib.parse.quote(sid, safe=""))
        query = urllib.parse.urlencode(params)
        drawn.append((method, f"{path}?{query}" if query else path))

    draw()
    return drawn


async def test_fuzzed_requests_never_answer_5xx(raw_fetch, filled):
    # Given: every route once with each edge value in each argument, then hypothesis
    requests = [
        (method, route.replace("{id}", sid) + "?" + urllib.parse.urlencode({p: v}))
        for method, route in ROUTES
        for sid in (str(filled.base), HUGE)
        for p in PARAMS
        for v in EDGE_VALUES
        if method == "GET"
    ]
    requests += [("DELETE", f"sessions/{HUGE}"), ("DELETE", "sessions/-1")]
    requests += _draw_requests()

    # When
    failures = []
    codes: dict[int, int] = {}
    for method, path in requests:
        response = await raw_fetch(
            f"nsight-lab/api/{path}", method=method, request_timeout=60,
            follow_redirects=False,
        )  # fmt: skip
        codes[response.code] = codes.get(response.code, 0) + 1
        if response.code >= 500:
            failures.append((method, path[:120], response.code, response.body[:200]))
        elif response.code >= 400 and response.body.startswith(b'{"message"'):
            body = json.loads(response.body)
            assert set(body) == {"message", "error"}, body
            assert "\n" not in body["message"]
            assert len(body["message"]) < 600, body["message"]

    # Then
    print(f"{len(requests)} requests, answers by status: {sorted(codes.items())}")  # noqa: T201
    assert failures == []


@pytest.mark.parametrize(
    ("params", "first_id"),
    [
        ({"since": "9999-12-31T23:59:59-05:00"}, None),  # clamped: nothing after
        ({"until": "9999-12-31T23:59:59-05:00"}, "running"),  # everything before
        ({"since": "0001-01-01T00:00:00+05:00"}, "running"),
        ({"until": "0001-01-01T00:00:00+05:00"}, None),
    ],
)
async def test_dates_at_the_ends_of_the_range_are_clamped(
    raw_fetch, filled, params, first_id
):
    response = await raw_fetch(
        f"nsight-lab/api/sessions?{urllib.parse.urlencode(params)}"
    )
    assert response.code == 200
    sessions = json.loads(response.body)["sessions"]
    assert [s["id"] for s in sessions][:1] == (
        [] if first_id is None else [getattr(filled, first_id)]
    )


@pytest.mark.parametrize("value", [HUGE, "1" + "0" * 5_000, "-" + HUGE])
@pytest.mark.parametrize(
    "path",
    [
        "sessions?limit={v}", "sessions?offset={v}", "sessions/1?after_id={v}",
        "sessions/1?limit={v}", "sessions/1?tail={v}", "sessions/{v}",
        "sessions/1/report?config={v}", "compare?a={v}&b=1", "compare?a=1&b={v}",
        "sessions/{v}/export",
    ],
)  # fmt: skip
async def test_huge_numbers_are_one_line_400s(raw_fetch, filled, path, value):
    del filled
    response = await raw_fetch("nsight-lab/api/" + path.format(v=value))
    if value.startswith("-") and path.startswith("sessions/{v}"):
        assert response.code == 404  # the route takes digits only
        return
    body = json.loads(response.body)
    assert response.code == 400, body
    assert body["error"] in INPUT_ERRORS
    assert "\n" not in body["message"]
    assert len(body["message"]) < 200


# -- a running session is not deleted ------------------------------------------------

_HOLDER = textwrap.dedent(
    """
    import sys, time
    from nsight_lab.store.run_store import RunStore
    with RunStore(sys.argv[1]) as store:
        print(store.create_session(backend="cpu", name="held").id, flush=True)
        time.sleep(120)  # alive, and (PostgreSQL) connected
    """
)


async def test_a_session_of_a_live_writer_is_not_deleted(raw_fetch, db_path: Path):
    # Given: a session written by another process that is still alive
    holder = subprocess.Popen(  # noqa: S603, ASYNC220  (a writer for the test's life)
        [sys.executable, "-c", _HOLDER, str(db_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        sid = int(holder.stdout.readline())

        # When
        refused = await raw_fetch(f"nsight-lab/api/sessions/{sid}", method="DELETE")

        # Then: 409, one line, and the session is still there
        body = json.loads(refused.body)
        assert refused.code == 409, body
        assert body["error"] == "SessionRunningError"
        assert body["message"].startswith(f"session {sid} is still running")
        assert "stop the cell first" in body["message"]
        assert "\n" not in body["message"]
        with RunStore(db_path) as store:
            assert store.get_session(sid).status == "running"
    finally:
        holder.kill()
        holder.wait()

    # When: the writer is gone (PostgreSQL sees its connection drop a moment later)
    for _ in range(100):
        deleted = await raw_fetch(f"nsight-lab/api/sessions/{sid}", method="DELETE")
        if deleted.code != 409:
            break
        await asyncio.sleep(0.05)

    # Then: it may be deleted
    assert deleted.code == 204
    with RunStore(db_path) as store:
        assert store.run_counts([sid]) == {}


async def test_the_current_process_counts_as_a_live_writer(raw_fetch, filled, db_path):
    # filled.running was created by this (live) process
    response = await raw_fetch(
        f"nsight-lab/api/sessions/{filled.running}", method="DELETE"
    )
    assert response.code == 409
    with RunStore(db_path) as store:
        store.finish_session(filled.running, "completed")
    response = await raw_fetch(
        f"nsight-lab/api/sessions/{filled.running}", method="DELETE"
    )
    assert response.code == 204


# -- XSRF and cross-origin websockets ------------------------------------------------


async def _login_cookies(raw_fetch, jp_auth_header) -> dict[str, str]:
    """Log in the way a browser does (``?token=`` once) and return its cookies."""
    token = jp_auth_header["Authorization"].split()[-1]
    response = await raw_fetch(f"nsight-lab/api/status?token={token}", token=False)
    assert response.code == 200
    cookies: dict[str, str] = {}
    for header in response.headers.get_list("Set-Cookie"):
        jar: SimpleCookie = SimpleCookie()
        jar.load(header)
        cookies.update({k: m.value for k, m in jar.items()})
    assert cookies, "the server set no login cookie"
    return cookies


def _cookie_header(cookies: dict[str, str]) -> str:
    return "; ".join(f"{k}={v}" for k, v in cookies.items())


async def test_cookie_authenticated_delete_needs_the_xsrf_token(
    raw_fetch, jp_auth_header, filled, db_path
):
    # Given: a browser's login cookie, no token header
    cookies = await _login_cookies(raw_fetch, jp_auth_header)
    path = f"nsight-lab/api/sessions/{filled.base}"
    get = await raw_fetch(
        path, token=False, headers={"Cookie": _cookie_header(cookies)}
    )
    assert get.code == 200  # the cookie authenticates

    # When: a DELETE with the cookie only (what a forged cross-site form sends)
    forged = await raw_fetch(
        path, token=False, method="DELETE",
        headers={"Cookie": _cookie_header(cookies)},
    )  # fmt: skip

    # Then: refused, nothing deleted
    assert forged.code == 403
    with RunStore(db_path) as store:
        assert store.get_session(filled.base).id == filled.base

    # When: the same with the _xsrf cookie and its header (what the sidebar sends)
    xsrf = "2|abcdef01|0123456789abcdef0123456789abcdef|1700000000"
    allowed = await raw_fetch(
        path, token=False, method="DELETE",
        headers={
            "Cookie": _cookie_header({**cookies, "_xsrf": xsrf}),
            "X-XSRFToken": xsrf,
        },
    )  # fmt: skip

    # Then
    assert allowed.code == 204


async def test_websocket_from_another_origin_is_refused(
    raw_fetch, jp_auth_header, jp_http_port, jp_base_url
):
    # Given: a browser's login cookie (token-authenticated sockets skip the check)
    cookies = await _login_cookies(raw_fetch, jp_auth_header)
    url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}nsight-lab/api/events"

    def upgrade(origin: str):
        request = tornado.httpclient.HTTPRequest(
            url,
            headers={
                "Cookie": _cookie_header(cookies),
                "Origin": origin,
                "Host": f"127.0.0.1:{jp_http_port}",
            },
        )
        return tornado.websocket.websocket_connect(request)

    # When / Then: a page of evil.example is refused
    with pytest.raises(tornado.httpclient.HTTPClientError) as refused:
        await upgrade("http://evil.example")
    assert refused.value.code == 403

    # ... while the server's own origin is let in (the check is the origin)
    ws = await upgrade(f"http://127.0.0.1:{jp_http_port}")
    ws.close()
