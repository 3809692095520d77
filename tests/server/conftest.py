from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

# pytest-jupyter's server fixtures (jp_fetch, jp_server_config, ...) are loaded for the
# whole run by `-p pytest_jupyter.jupyter_server` in pyproject.toml: pytest refuses
# `pytest_plugins` in a conftest below the top one.


@pytest.fixture(autouse=True)
def nsight_lab_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the run store at a fresh directory, never the user's real one."""
    home = tmp_path / "nsight-lab-home"
    monkeypatch.setenv("NSIGHT_LAB_HOME", str(home))
    monkeypatch.delenv("NSIGHT_LAB_STORE", raising=False)  # never a real team store
    return home


@pytest.fixture
def jp_server_config(nsight_lab_home, request: pytest.FixtureRequest):
    # Depends on nsight_lab_home so that the extension, which reads its config when it
    # loads, sees this test's NSIGHT_LAB_HOME; and, for a test of a store (db_path),
    # on it first: on PostgreSQL it sets NSIGHT_LAB_STORE, which the server reads.
    del nsight_lab_home
    if "db_path" in request.fixturenames:
        request.getfixturevalue("db_path")
    return {
        "ServerApp": {
            "jpserver_extensions": {"nsight_lab": True},
            # Test against a server which requires authentication on every endpoint.
            "allow_unauthenticated_access": False,
        },
    }


@pytest.fixture
def db_path(
    engine: str,
    nsight_lab_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> Path | str:
    """The server's run store: the SQLite file, or a PostgreSQL database's URL.

    A test that takes it runs on both engines (tests/conftest.py); on PostgreSQL the
    server reads the store through ``NSIGHT_LAB_STORE``, as a team's server would.
    """
    if engine == "sqlite":
        return nsight_lab_home / "store.sqlite"
    url = str(request.getfixturevalue("postgres_url"))
    monkeypatch.setenv("NSIGHT_LAB_STORE", url)
    return url


@pytest.fixture
def reports_dir(nsight_lab_home: Path) -> Path:
    return nsight_lab_home / "reports"


def make_record(  # noqa: PLR0913
    session_id: int,
    annotation: str,
    duration_ns: float,
    *,
    config_index: int = 0,
    config: dict | None = None,
    run_index: int = 0,
    metrics: dict | None = None,
) -> RunRecord:
    return RunRecord(
        session_id=session_id,
        config_index=config_index,
        config={"n": 1024} if config is None else config,
        run_index=run_index,
        annotation=annotation,
        duration_ns=duration_ns,
        backend="cpu",
        kernels=("k0",),
        metrics=metrics or {},
        telemetry=Telemetry(sm_clock_mhz=1980.0, temperature_c=41.0),
    )


def series(session_id, annotation, values, *, config_index, config, metrics=None):  # noqa: PLR0913
    return [
        make_record(
            session_id,
            annotation,
            v,
            config_index=config_index,
            config=config,
            run_index=i,
            metrics=None if metrics is None else {k: m[i] for k, m in metrics.items()},
        )
        for i, v in enumerate(values)
    ]


# Per-run durations (ns) of the fixture sessions, by (annotation, config n).
BASE = {
    ("matmul", 1024): [100_000.0, 102_000.0, 98_000.0, 101_000.0, 99_000.0],
    ("matmul", 2048): [400_000.0, 410_000.0, 390_000.0],
    ("add", 1024): [10_000.0, 11_000.0, 12_000.0],
}
CANDIDATE = {
    ("matmul", 1024): [80_000.0, 82_000.0, 79_000.0, 81_000.0],
    ("matmul", 2048): [405_000.0, 395_000.0, 400_000.0],
    ("copy", 1024): [5_000.0, 5_100.0],
}
BYTES = {
    ("matmul", 1024): [1.0e6, 1.1e6, 0.9e6, 1.0e6, 1.0e6],
}
BYTES_CANDIDATE = {
    ("matmul", 1024): [2.0e6, 2.1e6, 1.9e6, 2.0e6],
}


@dataclass(frozen=True)
class Filled:
    """Ids of the sessions in the filled store, oldest first."""

    base: int
    candidate: int
    running: int
    created_at: tuple[str, str, str]


def _add(store, sid, data, configs, extra=None):
    index = {c["n"]: i for i, c in enumerate(configs)}
    for (annotation, n), values in data.items():
        metrics = None
        if extra and (annotation, n) in extra:
            metrics = {"dram__bytes_read.sum": extra[annotation, n]}
        store.add_runs(
            series(
                sid, annotation, values, config_index=index[n], config={"n": n},
                metrics=metrics,
            )
        )  # fmt: skip


@pytest.fixture
def filled(db_path: Path | str) -> Iterator[Filled]:
    """A real store with three hand-made sessions (two finished, one running).

    The writing store stays open for the test: on PostgreSQL its connection is what
    keeps the running session's writer alive (store/postgres.py).
    """
    with RunStore(db_path) as store:
        configs_a = [{"n": 1024}, {"n": 2048}]
        a = store.create_session(
            backend="events", name="baseline", notebook="work/a.ipynb",
            device="NVIDIA H200", configs=configs_a, runs_planned=5,
            options={"params": {"n": [1024, 2048]}}, cell_source="a @ a",
        )  # fmt: skip
        _add(store, a.id, BASE, configs_a, BYTES)
        store.finish_session(a.id, "completed")
        configs_b = [{"n": 2048}, {"n": 1024}]  # other order: configs match by value
        b = store.create_session(
            backend="cpu", name="candidate", notebook="work/b.ipynb",
            device="NVIDIA H100", configs=configs_b, runs_planned=4,
            options={"params": {"n": [2048, 1024]}}, cell_source="torch.mm(a, a)",
        )  # fmt: skip
        _add(store, b.id, CANDIDATE, configs_b, BYTES_CANDIDATE)
        store.finish_session(b.id, "failed", "boom")
        c = store.create_session(
            backend="cpu", name="live", notebook="work/a.ipynb",
            cell_source="special-needle()",
        )  # fmt: skip
        created = tuple(store.get_session(s.id).created_at for s in (a, b, c))
        yield Filled(a.id, b.id, c.id, created)


@pytest.fixture
def record_factory():
    """``make_record(session_id, annotation, duration_ns, **fields)``."""
    return make_record


@pytest.fixture
def raw_fetch(http_server_client, jp_auth_header, jp_base_url):
    """Fetch a path exactly as given (no quoting), with the token unless told not to."""

    def fetch(path: str, *, token: bool = True, headers=None, **kwargs):
        sent = dict(jp_auth_header) if token else {"Authorization": ""}
        sent.update(headers or {})
        return http_server_client.fetch(
            jp_base_url.rstrip("/") + "/" + path.lstrip("/"),
            headers=sent,
            raise_error=False,
            **kwargs,
        )

    return fetch
