"""The server reads a store it cannot write (a read-only mount, another user's)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from nsight_lab.store import sqlite_files as store_module
from tests.conftest import SQLITE_ONLY


@pytest.fixture
def unwritable(monkeypatch: pytest.MonkeyPatch) -> None:
    """``os.access`` says no file or directory is writable, as on a read-only mount
    (where it refuses root too; chmod does not stop root, so it cannot be made here).
    """
    real = os.access

    def access(path: Any, mode: int, **kw: Any) -> bool:
        return False if mode & os.W_OK else real(path, mode, **kw)

    monkeypatch.setattr(store_module.os, "access", access)


@SQLITE_ONLY  # a file the server may not write; PostgreSQL has its own permissions
@pytest.mark.usefixtures("unwritable")
async def test_server_reads_a_read_only_store(raw_fetch, filled):
    # When
    listed = await raw_fetch("nsight-lab/api/sessions")
    one = await raw_fetch(f"nsight-lab/api/sessions/{filled.base}?figures=1")
    compared = await raw_fetch(
        f"nsight-lab/api/compare?a={filled.base}&b={filled.candidate}"
    )
    deleted = await raw_fetch(f"nsight-lab/api/sessions/{filled.base}", method="DELETE")

    # Then: every read answers; the write is refused in one line
    assert listed.code == 200
    assert json.loads(listed.body)["total"] == 3
    assert one.code == 200
    payload = json.loads(one.body)
    assert len(payload["runs"]) == 11
    assert {"duration", "clocks"} <= set(payload["figures"])
    assert compared.code == 200
    assert deleted.code == 500
    body = json.loads(deleted.body)
    assert body["error"] == "StoreError"
    assert "read-only" in body["message"]
    assert "\n" not in body["message"]
    again = await raw_fetch(f"nsight-lab/api/sessions/{filled.base}")
    assert again.code == 200
