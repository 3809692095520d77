"""Shared fixtures.

Tests marked for hardware that is absent are skipped, with the reason printed.

The run store's tests run on both engines: a test that takes ``store_location`` (or
``engine``) runs once on a SQLite file and once on a fresh PostgreSQL database of a
throwaway cluster that this test session starts (tests/_postgres.py) and stops. A
test for one engine only says so with ``@SQLITE_ONLY`` / ``@POSTGRES_ONLY``. Without
PostgreSQL's binaries the PostgreSQL cases are skipped with the reason printed; with
``CI=true`` that is a failure instead.
"""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests import _postgres

if TYPE_CHECKING:
    from collections.abc import Iterator

    from IPython.core.interactiveshell import InteractiveShell

ENGINES = ("sqlite", "postgresql")
SQLITE_ONLY = pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
"""For a test of what only SQLite has (a file, PRAGMAs, pids on this host)."""
POSTGRES_ONLY = pytest.mark.parametrize("engine", ["postgresql"], indirect=True)
"""For a test of what only PostgreSQL has (advisory locks, NOTIFY)."""
_DATABASES = itertools.count()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[_postgres.Cluster]:
    """A throwaway PostgreSQL cluster for the whole test session."""
    reason = _postgres.missing_reason()
    if reason is not None:
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(f"CI needs PostgreSQL for the store suite: {reason}")
        pytest.skip(reason)
    bin_dir = _postgres.find_bin_dir()
    assert bin_dir is not None
    cluster = _postgres.start(bin_dir)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_server: _postgres.Cluster) -> Iterator[str]:
    """A fresh, empty database of the test cluster, dropped afterwards."""
    import psycopg

    name = f"t{os.getpid()}_{next(_DATABASES)}"
    with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield postgres_server.url(name)
    finally:
        with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """The run store engine under test."""
    return str(request.param)


@pytest.fixture
def store_location(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Path | str:
    """Where the test's run store lives: a SQLite file, or a PostgreSQL URL."""
    if engine == "sqlite":
        return tmp_path / "home" / "store.sqlite"
    return str(request.getfixturevalue("postgres_url"))


def _gpu_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "no GPU: PyTorch is not installed"
    if not torch.cuda.is_available():
        return "no GPU: torch.cuda.is_available() is False on this machine"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip tests marked gpu when no CUDA device is visible, saying so."""
    reason = None
    checked = False
    for item in items:
        # The marker, not `"gpu" in item.keywords`: keywords hold the names of the
        # item's folders too, and everything under tests/gpu/ would be skipped.
        if item.get_closest_marker("gpu") is not None:
            if not checked:
                reason, checked = _gpu_reason(), True
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(autouse=True)
def nsight_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own store directory."""
    home = tmp_path / "nsight-home"
    monkeypatch.setenv("NSIGHT_LAB_HOME", str(home))
    monkeypatch.delenv("NSIGHT_LAB_STORE", raising=False)  # never a real team store
    return home


@pytest.fixture(scope="session")
def ip() -> InteractiveShell:
    """One real IPython shell for the session, with nsight_lab loaded."""
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    shell = (
        start_ipython() or get_ipython()
    )  # start_ipython() returns None once started
    assert shell is not None
    shell.run_line_magic("load_ext", "nsight_lab")
    return shell


FAKE_NCU = Path(__file__).parent / "fixtures" / "fake_ncu.py"


@pytest.fixture
def fake_ncu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Install the stand-in ``ncu`` (tests/fixtures/fake_ncu.py) on PATH; return it."""
    from nsight_lab.gpu import stack as gpu_stack

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ncu = bin_dir / "ncu"
    ncu.write_text(f"#!{sys.executable}\n" + FAKE_NCU.read_text(encoding="utf-8"))
    ncu.chmod(0o755)
    monkeypatch.delenv(gpu_stack.NCU_ENV_VAR, raising=False)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(sys.executable).parent}:/usr/bin:/bin")
    for var in (
        "FAKE_NCU_MODE",
        "FAKE_NCU_KERNELS",
        "FAKE_NCU_KERNELS_BY_CONFIG",
        "FAKE_NCU_DURATION_NS",
    ):
        monkeypatch.delenv(var, raising=False)
    return ncu
