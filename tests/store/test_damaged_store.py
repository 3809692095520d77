"""A damaged store, a full disk and a too-long filter say what they are (issue 29, 5).

At 0ab1fce a store whose pages were overwritten read "database disk image is
malformed; check the file and its folder are writable, or run: nsight-lab doctor",
``doctor`` never looked at the store, and ``baseline set`` wrote into the damaged
file; a 50,001-character ``history --text`` was "LIKE or GLOB pattern too complex;
check ... writable"; a full disk said "check ... writable" too. Each store here is a
real SQLite file damaged by overwriting its pages; the full disk is a real 1 MiB
tmpfs (root) or a real ``ulimit -f`` (tests/store/test_whole_runs.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import shutil
import subprocess
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nsight_lab.cli import EXIT_USAGE, main
from nsight_lab.contract.records import RunRecord
from nsight_lab.errors import StoreError
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

PAGE = 4096


def _filled(path: Path, runs: int = 2000) -> int:
    """A store of one completed session of ``runs`` runs of 3 regions; its pages."""
    with RunStore(path) as store:
        sid = store.create_session(backend="cpu").id
        store.add_runs([
            RunRecord(
                session_id=sid, config_index=0, config={}, run_index=i,
                annotation=a, duration_ns=1.0, backend="cpu",
            )
            for i in range(runs)
            for a in "abc"
        ])  # fmt: skip
        store.finish_session(sid, "completed")
    return path.stat().st_size // PAGE


def _overwrite(path: Path, first: int, count: int, byte: int = 0xA5) -> None:
    """Overwrite pages ``first``.. (1-based) with ``byte``: a real damaged file."""
    with path.open("r+b") as f:
        f.seek(PAGE * (first - 1))
        f.write(bytes([byte]) * PAGE * count)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def store_file(nsight_home: Path) -> Path:
    return nsight_home / "store.sqlite"


@pytest.fixture
def damaged_tail(store_file: Path) -> Iterator[Path]:
    """Pages near the end (runs) overwritten: sessions and baselines still read."""
    pages = _filled(store_file)
    _overwrite(store_file, pages - 20, 10)
    return store_file


def test_a_damaged_store_says_so_with_a_real_fix(store_file: Path) -> None:
    _filled(store_file)
    _overwrite(store_file, 2, 9)  # pages 2-10, as the issue's
    status, _, err = _cli("history")
    assert status == EXIT_USAGE
    line = err.strip().splitlines()[-1]
    assert f"the store {str(store_file)!r} is damaged (" in line
    assert "malformed" in line
    assert ".recover" in line
    assert "writable" not in line


def test_baseline_set_refuses_a_damaged_store_and_leaves_it_as_it_was(
    damaged_tail: Path,
) -> None:
    before = _digest(damaged_tail)
    status, out, err = _cli("baseline", "set", "b1", "1")
    assert (status, out) == (EXIT_USAGE, "")
    assert "is damaged" in err
    assert _digest(damaged_tail) == before
    assert not damaged_tail.with_name("store.sqlite-wal").exists() or (
        damaged_tail.with_name("store.sqlite-wal").stat().st_size == 0
    )


@pytest.mark.usefixtures("damaged_tail")
def test_doctor_checks_the_store() -> None:
    status, out, _ = _cli("doctor", "--json")
    assert status == 0
    checks = {c["name"]: c for c in json.loads(out)}
    assert checks["store"]["status"] == "error"
    assert "quick_check" in checks["store"]["detail"]
    assert ".recover" in checks["store"]["hint"]
    assert checks["store space"]["status"] in {"ok", "warn"}
    assert "free on the disk" in checks["store space"]["detail"]


def test_doctor_says_a_sound_store_is_sound(store_file: Path) -> None:
    _filled(store_file, runs=10)
    status, out, _ = _cli("doctor", "--json")
    assert status == 0
    check = {c["name"]: c for c in json.loads(out)}["store"]
    assert check["status"] == "ok"
    assert "quick_check ok, schema" in check["detail"]


def test_a_write_meeting_a_damaged_page_stops_every_later_write(
    store_file: Path,
) -> None:
    pages = _filled(store_file)
    _overwrite(store_file, pages - 20, 10)
    with RunStore(store_file) as store:
        with pytest.raises(StoreError, match="is damaged"):
            store.check_integrity()
        before = _digest(store_file)
        with pytest.raises(StoreError, match="is damaged"):
            store.set_baseline("b1", 1)
        assert _digest(store_file) == before


@pytest.mark.parametrize("length", [50_001, 1_001])
def test_a_too_long_text_filter_is_one_line(store_file: Path, length: int) -> None:
    _filled(store_file, runs=2)
    status, out, err = _cli("history", "--text", "x" * length)
    assert (status, out) == (EXIT_USAGE, "")
    assert err.count("\n") == 1
    assert "text filter" in err
    assert "at most 1,000" in err
    assert "writable" not in err


def test_a_text_filter_at_the_limit_is_searched(store_file: Path) -> None:
    _filled(store_file, runs=2)
    status, out, _ = _cli("history", "--text", "é" * 1000, "--json")
    assert (status, json.loads(out)) == (0, [])


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB tmpfs (root only), unmounted afterwards."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    where = tmp_path / "disk"
    where.mkdir()
    done = subprocess.run(  # noqa: S603  (fixed arguments)
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)],  # noqa: S607
        capture_output=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)  # noqa: S603, S607


def test_a_full_disk_says_no_space_left(tiny_disk: Path) -> None:
    path = tiny_disk / "store.sqlite"
    with RunStore(path) as store:
        sid = store.create_session(backend="cpu").id
        with pytest.raises(StoreError) as caught:  # noqa: PT012  (until it is full)
            for start in range(0, 100_000, 500):
                store.add_runs([
                    RunRecord(
                        session_id=sid, config_index=0, config={"pad": "x" * 200},
                        run_index=i, annotation="a", duration_ns=1.0, backend="cpu",
                    )
                    for i in range(start, start + 500)
                ])  # fmt: skip
    message = str(caught.value)
    assert f"no space left on the disk of {str(tiny_disk)!r}" in message, message
    assert "writable" not in message
    assert "\n" not in message


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 12))
def test_fuzz_damaged_pages_never_get_written_or_a_traceback(
    tmp_path_factory: pytest.TempPathFactory, seed: int, count: int
) -> None:
    """Random pages overwritten with random bytes: every command is one line or
    works, and ``baseline set`` never changes a file that fails its check."""
    folder = tmp_path_factory.mktemp("damaged")
    path = folder / "store.sqlite"
    pages = _filled(path, runs=600)
    rng = random.Random(seed)  # noqa: S311  (which pages to damage)
    with path.open("r+b") as f:
        for _ in range(count):
            f.seek(PAGE * rng.randrange(1, pages))
            f.write(rng.randbytes(rng.choice([16, PAGE])))
    env = {"NSIGHT_LAB_HOME": str(folder)}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        for argv in (("history", "--json"), ("show", "1", "--json"), ("doctor",)):
            status, _, err = _cli(*argv)
            assert status in {0, EXIT_USAGE}
            assert err.count("\n") <= 2, err  # a log line and the error at most
        sound = {c.name: c for c in _store_checks(str(path))}["store"].status == "ok"
        before = _digest(path)
        status, _, err = _cli("baseline", "set", "b1", "1")
        if not sound:
            assert status == EXIT_USAGE, err
            assert _digest(path) == before


def _store_checks(location: str) -> list:
    from nsight_lab.cli.doctor import store_checks

    return store_checks(location)
