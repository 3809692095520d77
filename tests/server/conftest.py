from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pathlib import Path

# pytest-jupyter's server fixtures (jp_fetch, jp_server_config, ...) are loaded for the
# whole run by `-p pytest_jupyter.jupyter_server` in pyproject.toml: pytest refuses
# `pytest_plugins` in a conftest below the top one.


@pytest.fixture
def jp_server_config():
    return {
        "ServerApp": {
            "jpserver_extensions": {"nsight_lab": True},
            # Test against a server which requires authentication on every endpoint.
            "allow_unauthenticated_access": False,
        },
    }


@pytest.fixture(autouse=True)
def nsight_lab_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the run store at a fresh directory, never the user's real one."""
    home = tmp_path / "nsight-lab-home"
    monkeypatch.setenv("NSIGHT_LAB_HOME", str(home))
    return home
