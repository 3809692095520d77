"""``GET sessions?text=`` of 50,001+ characters is a one-line 400 (issue 29, item 5).

At 0ab1fce SQLite's "LIKE or GLOB pattern too complex" came back as a 500 that told
the user to check the store file was writable.
"""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize("length", [50_001, 1_001])
async def test_a_too_long_text_filter_is_a_400(jp_fetch, length) -> None:
    response = await jp_fetch(
        "nsight-lab", "api", "sessions", params={"text": "x" * length},
        raise_error=False,
    )  # fmt: skip
    body = json.loads(response.body)
    assert response.code == 400, body
    assert body["error"] == "QueryError"
    assert "\n" not in body["message"]
    assert "text filter" in body["message"]
    assert "writable" not in body["message"]


async def test_a_text_filter_at_the_limit_is_answered(jp_fetch) -> None:
    response = await jp_fetch(
        "nsight-lab", "api", "sessions", params={"text": "x" * 1000},
        raise_error=False,
    )  # fmt: skip
    assert response.code == 200
