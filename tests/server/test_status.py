from __future__ import annotations

import json

import pytest
import tornado.httpclient

import nsight_lab
from nsight_lab.contract import records
from tests.conftest import POSTGRES_ONLY


async def test_status_answers_version_and_store(jp_fetch, nsight_lab_home):
    # When
    response = await jp_fetch("nsight-lab", "api", "status")

    # Then
    assert response.code == 200
    payload = json.loads(response.body)
    assert set(payload) == {
        "version",
        "store_engine",
        "store_path",
        "store_exists",
        "schema_version",
        "backends",
    }
    assert payload["version"] == nsight_lab.__version__
    assert payload["store_engine"] == "sqlite"
    assert payload["store_path"] == str(nsight_lab_home / "store.sqlite")
    assert payload["store_exists"] is False
    assert payload["schema_version"] == records.SCHEMA_VERSION


@POSTGRES_ONLY
async def test_status_says_it_reads_postgres_without_the_password(jp_fetch, db_path):
    # Given: NSIGHT_LAB_STORE names a PostgreSQL database (the db_path fixture)
    assert db_path.startswith("postgresql://nsight:nsight-test-secret@")

    # When
    response = await jp_fetch("nsight-lab", "api", "status")

    # Then: the engine, and the URL with its password masked
    payload = json.loads(response.body)
    assert payload["store_engine"] == "postgresql"
    assert payload["store_path"] == db_path.replace("nsight-test-secret", "***")
    assert "nsight-test-secret" not in response.body.decode()
    assert payload["store_exists"] is True


async def test_status_lists_the_registered_backends(jp_fetch, monkeypatch):
    # Given: one more backend in the registry
    from nsight_lab.contract import registry

    registered = [entry.id for entry in registry.registered()]
    extra = registry.BackendEntry("tiny", "tiny:Tiny", "a backend of one module")
    monkeypatch.setattr(
        registry, "BUILTIN_BACKENDS", (*registry.BUILTIN_BACKENDS, extra)
    )

    # When
    response = await jp_fetch("nsight-lab", "api", "status")

    # Then: the registry's order, each with its description
    listed = json.loads(response.body)["backends"]
    assert [b["id"] for b in listed] == [*registered, "tiny"]
    assert registered[:4] == ["cpu", "events", "cupti", "ncu"]
    assert listed[-1] == {"id": "tiny", "description": "a backend of one module"}
    assert all(b["description"] for b in listed)


async def test_status_sees_an_existing_store(jp_fetch, nsight_lab_home):
    # Given
    nsight_lab_home.mkdir(parents=True)
    (nsight_lab_home / "store.sqlite").touch()

    # When
    response = await jp_fetch("nsight-lab", "api", "status")

    # Then
    assert json.loads(response.body)["store_exists"] is True


async def test_status_refuses_a_request_without_a_token(jp_fetch):
    # When
    with pytest.raises(tornado.httpclient.HTTPClientError) as excinfo:
        await jp_fetch(
            "nsight-lab",
            "api",
            "status",
            headers={"Authorization": ""},
        )

    # Then
    assert excinfo.value.code in {401, 403}
