"""Sessions have an identity that survives a change of store (issue 22).

Ids are numbers of one store: session 7 of a laptop's store and session 7 of the
team's are different profiles. Each session gets a UUID beside its id (schema 5),
sessions stored before get one when their store is upgraded, and a saved output's
"Open in nsight-lab" link carries it (``views/bundle.py`` ``session_link``; the lab
checks it: ``src/widget/link.ts``).
"""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from nsight_lab.contract.records import SCHEMA_VERSION, session_to_json
from nsight_lab.store.run_store import RunStore
from nsight_lab.views.bundle import session_link
from tests.store.test_run_store import raw, record, set_user_version, user_version
from tests.store.test_runs_done import as_schema_5

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "h200_block.sqlite"
"""A store nsight-lab wrote at schema 4 on an H200 (tests/fixtures/h200_block.md)."""


@pytest.fixture
def db(store_location: Path | str) -> Any:
    return store_location


def _is_uuid(text: str) -> bool:
    return str(uuid.UUID(text)) == text


def test_every_new_session_has_its_own_uuid(db: Any) -> None:
    with RunStore(db) as store:
        made = [store.create_session(backend="cpu") for _ in range(3)]
        listed = store.list_sessions(limit=None)
    assert all(_is_uuid(s.uuid) for s in made)
    assert len({s.uuid for s in made}) == 3
    assert {s.id: s.uuid for s in listed} == {s.id: s.uuid for s in made}
    assert session_to_json(made[0])["uuid"] == made[0].uuid


def test_a_schema_4_store_is_upgraded_and_keeps_its_sessions(db: Any) -> None:
    # Given: a store as schema 4 left it (no uuid column), with sessions and runs
    with RunStore(db) as store:
        ids = [store.create_session(backend="cpu", name=f"s{i}").id for i in range(3)]
        store.add_runs([record(ids[0])])
    as_schema_5(db)
    conn = raw(db)
    conn.execute("DROP INDEX sessions_uuid")
    conn.execute("ALTER TABLE sessions DROP COLUMN uuid")
    conn.close()
    set_user_version(db, 4)

    # When: this nsight-lab opens it
    with RunStore(db) as store:
        sessions = {s.id: s for s in store.list_sessions(limit=None)}
        fresh = store.create_session(backend="cpu")
        runs = store.runs(ids[0])

    # Then: every old session got a UUID of its own, nothing else changed
    assert user_version(db) == SCHEMA_VERSION >= 5
    assert sorted(sessions) == ids
    assert [sessions[i].name for i in ids] == ["s0", "s1", "s2"]
    uuids = [sessions[i].uuid for i in ids] + [fresh.uuid]
    assert all(_is_uuid(u) for u in uuids)
    assert len(set(uuids)) == 4
    assert len(runs) == 1


def test_two_sessions_cannot_share_a_uuid(db: Any) -> None:
    with RunStore(db) as store:
        a = store.create_session(backend="cpu")
        b = store.create_session(backend="cpu")
    conn = raw(db)
    try:
        with pytest.raises(Exception, match=r"(?i)unique"):
            conn.execute("UPDATE sessions SET uuid = ? WHERE id = ?", (a.uuid, b.id))
    finally:
        conn.close()


def test_the_real_h200_store_of_schema_4_still_opens(tmp_path: Path) -> None:
    copy = tmp_path / "store.sqlite"
    shutil.copyfile(FIXTURE, copy)  # never write the fixture itself
    assert user_version(copy) == 4
    with RunStore(copy) as store:
        sessions = store.list_sessions(limit=None)
        runs = store.runs(sessions[-1].id)
    assert user_version(copy) == SCHEMA_VERSION
    assert len(sessions) == 6
    assert all(_is_uuid(s.uuid) for s in sessions)
    assert len({s.uuid for s in sessions}) == 6
    assert runs


def test_the_output_link_carries_the_uuid() -> None:
    sid, session_uuid = 7, "0f8c2a1e-6b1d-4c55-9a39-2f1f4b2a7c10"
    link = session_link(sid, session_uuid)
    # the pattern src/widget/link.ts parseSessionLink reads
    match = re.fullmatch(r"#nsight-lab/sessions/([0-9]+)\?uuid=([0-9a-f-]+)", link)
    assert match is not None
    assert match.groups() == ("7", session_uuid)
    assert session_link(3, "") == "#nsight-lab/sessions/3"
