from __future__ import annotations

import json

import pytest

from nsight_lab.server.config import NsightLabConfig
from nsight_lab.store.run_store import RunStore


@pytest.fixture
def custom_db(tmp_path):
    return tmp_path / "elsewhere" / "custom.sqlite"


@pytest.fixture
def jp_server_config(custom_db, tmp_path):
    return {
        "ServerApp": {
            "jpserver_extensions": {"nsight_lab": True},
            "allow_unauthenticated_access": False,
        },
        "NsightLabConfig": {
            "db_path": str(custom_db),
            "reports_dir": str(tmp_path / "elsewhere" / "reports"),
            "poll_interval_s": 0.05,
        },
    }


def test_defaults_follow_nsight_lab_home(nsight_lab_home):
    config = NsightLabConfig()
    assert config.db_path == str(nsight_lab_home / "store.sqlite")
    assert config.reports_dir == str(nsight_lab_home / "reports")
    assert config.poll_interval_s == 0.1


async def test_server_config_is_read_at_load_time(jp_fetch, jp_web_app, custom_db):
    # Given: a store at the configured path, not under NSIGHT_LAB_HOME
    with RunStore(custom_db) as store:
        sid = store.create_session(backend="cpu").id

    # When
    status = json.loads((await jp_fetch("nsight-lab", "api", "status")).body)
    listed = json.loads((await jp_fetch("nsight-lab", "api", "sessions")).body)

    # Then
    config = jp_web_app.settings["nsight_lab_config"]
    assert config.poll_interval_s == 0.05
    assert status["store_path"] == str(custom_db)
    assert status["store_exists"] is True
    assert [s["id"] for s in listed["sessions"]] == [sid]
