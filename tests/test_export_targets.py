"""``nsight-lab export -o PATH`` writes regular files only (issue 29, item 2).

At 0ab1fce the export renamed a temporary file over whatever PATH was: a device node
became a regular file (as root, ``-o /dev/full`` replaced the device), a FIFO was
replaced (its reader got 0 bytes), a symlink was replaced (``-o /proc/self/fd/1``
wrote nothing to stdout), a hard link was broken and missing folders were created
silently, each with status 0. Every target here is a real file of its kind in the
test's temporary folder (the device node is a ``mknod`` of /dev/null's numbers, made
only as root); no file outside it is written, which ``outside_untouched`` checks.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nsight_lab.cli import EXIT_USAGE, main
from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = os.geteuid() == 0
WATCHED = (
    "/dev/null",
    "/dev/full",
    "/dev/zero",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/fd",
)


def _fingerprint(path: str) -> tuple[object, ...] | None:
    try:
        s = os.lstat(path)
    except OSError:
        return None
    return (s.st_mode, s.st_ino, s.st_rdev, s.st_nlink, s.st_uid)


@pytest.fixture(autouse=True)
def outside_untouched() -> Iterator[None]:
    """Every device and link nsight-lab might be pointed at is the same afterwards,
    and the working folder holds the same names (nothing written beside it)."""
    before = {p: _fingerprint(p) for p in WATCHED}
    cwd = sorted(p.name for p in Path().iterdir())
    yield
    assert {p: _fingerprint(p) for p in WATCHED} == before
    assert sorted(p.name for p in Path().iterdir()) == cwd


@pytest.fixture
def session() -> int:
    with RunStore() as store:
        sid = store.create_session(
            backend="cpu", name="x", device="dev",
            options={"params": {"n": [1]}}, configs=[{"n": 1}],
        ).id  # fmt: skip
        store.add_runs([
            RunRecord(
                session_id=sid, config_index=0, config={"n": 1}, run_index=r,
                annotation="op", duration_ns=1000.0 + r, backend="cpu",
                telemetry=Telemetry(),
            )
            for r in range(3)
        ])  # fmt: skip
        store.finish_session(sid, "completed")
    return sid


def _export(sid: int, target: str | Path, *more: str) -> tuple[int, str]:
    """Run ``export`` in this process; its status and stderr's one line."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(["export", str(sid), "-o", str(target), *more])
    return status, err.getvalue()


def _wrote(path: Path) -> str:
    """The line a successful export says, up to its size (issue 30)."""
    return f"wrote the runs of session 1 to {path} ("


def _export_cli(
    sid: int, target: str, *, cwd: Path, stdout: int | IO[bytes] = subprocess.PIPE
) -> subprocess.CompletedProcess[bytes]:
    """Run ``nsight-lab export`` as its own process (stdout a pipe, or ``stdout``)
    in ``cwd`` (a temporary folder: what it might write lands there)."""
    return subprocess.run(  # noqa: S603  (our own interpreter and arguments)
        [sys.executable, "-m", "nsight_lab.cli", "export", str(sid), "-o", target],
        stdout=stdout, stderr=subprocess.PIPE, check=False, timeout=120, cwd=cwd,
    )  # fmt: skip


def _one_line(err: str) -> str:
    assert err.count("\n") == 1, err
    assert err.startswith("nsight-lab: "), err
    return err


def test_a_fifo_is_refused_and_stays_a_fifo(session: int, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    status, err = _export(session, fifo)
    assert status == EXIT_USAGE
    assert "FIFO" in _one_line(err)
    assert "-o -" in err
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nsight-home", "pipe"]


@pytest.mark.skipif(not ROOT, reason="mknod of a device node needs root")
def test_a_device_node_is_refused_and_stays_a_device(
    session: int, tmp_path: Path
) -> None:
    node = tmp_path / "null"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
    status, err = _export(session, node)
    assert status == EXIT_USAGE
    assert "character device" in _one_line(err)
    mode = node.lstat().st_mode
    assert stat.S_ISCHR(mode)
    assert node.lstat().st_rdev == os.makedev(1, 3)


def test_a_socket_and_a_folder_are_refused(session: int, tmp_path: Path) -> None:
    import socket

    sock_path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        status, err = _export(session, sock_path)
    assert status == EXIT_USAGE
    assert "socket" in _one_line(err)
    assert stat.S_ISSOCK(sock_path.lstat().st_mode)
    folder = tmp_path / "out"
    folder.mkdir()
    status, err = _export(session, folder)
    assert (status, "a folder" in _one_line(err)) == (EXIT_USAGE, True)
    assert list(folder.iterdir()) == []


def test_a_missing_folder_is_named_not_created(session: int, tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "out.csv"
    status, err = _export(session, target)
    assert status == EXIT_USAGE
    assert str(tmp_path / "no" / "such") in _one_line(err)
    assert "does not exist" in err
    assert not (tmp_path / "no").exists()


def test_a_symlink_is_written_through_and_stays_a_link(
    session: int, tmp_path: Path
) -> None:
    real = tmp_path / "real.csv"
    real.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    status, said = _export(session, link)
    assert status == 0
    assert said.startswith(_wrote(link.resolve()))  # written through: the target
    assert link.is_symlink()
    assert link.readlink() == real
    assert len(pd.read_csv(real)) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "link.csv", "nsight-home", "real.csv",
    ]  # fmt: skip


def test_a_dangling_symlink_is_refused(session: int, tmp_path: Path) -> None:
    link = tmp_path / "link.csv"
    link.symlink_to(tmp_path / "gone.csv")
    status, err = _export(session, link)
    assert status == EXIT_USAGE
    assert "does not exist" in _one_line(err)
    assert not (tmp_path / "gone.csv").exists()


def test_a_hard_link_keeps_both_names_on_one_file(session: int, tmp_path: Path) -> None:
    a = tmp_path / "a.csv"
    a.write_text("old\n")
    b = tmp_path / "b.csv"
    os.link(a, b)
    inode = a.stat().st_ino
    status, said = _export(session, a)
    assert status == 0
    assert said.startswith(_wrote(a))
    assert a.stat().st_ino == b.stat().st_ino == inode
    assert a.stat().st_nlink == 2
    assert b.read_text() == a.read_text()
    assert len(pd.read_csv(b)) == 3
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_regular_file_is_replaced_whole_keeping_its_mode(
    session: int, tmp_path: Path
) -> None:
    out = tmp_path / "out.csv"
    out.write_text("old\n")
    out.chmod(0o640)
    status, said = _export(session, out)
    assert status == 0
    assert said.startswith(_wrote(out))
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert len(pd.read_csv(out)) == 3


@pytest.mark.parametrize("spelling", ["-", "stdout-link", "/proc/self/fd/1"])
def test_stdout_spellings_write_to_the_pipe(
    session: int, spelling: str, tmp_path: Path
) -> None:
    """``-``, a symlink to stdout (as /dev/stdout is: never the real one here, which
    the code of 0ab1fce replaced with a file) and /proc/self/fd/1 write to the pipe.
    """
    if spelling == "stdout-link":
        (tmp_path / spelling).symlink_to("/proc/self/fd/1")
    done = _export_cli(session, spelling, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines()[0].startswith("session_id")
    assert len(done.stdout.decode().splitlines()) == 4
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "nsight-home") == (
        ["stdout-link"] if spelling == "stdout-link" else []
    )
    if spelling == "stdout-link":
        assert (tmp_path / spelling).is_symlink()


def test_a_link_to_stdout_redirected_to_a_file_keeps_the_file(
    session: int, tmp_path: Path
) -> None:
    out = tmp_path / "out.csv"
    link = tmp_path / "stdout-link"
    link.symlink_to("/proc/self/fd/1")
    with out.open("wb") as sink:
        done = _export_cli(session, str(link), stdout=sink, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(pd.read_csv(out)) == 3
    assert link.is_symlink()


def test_a_full_disk_leaves_no_half_written_file(session: int, tmp_path: Path) -> None:
    """A real write limit (``ulimit -f`` in the child): the old file stays whole."""
    out = tmp_path / "out.csv"
    out.write_text("old\n")
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (10, resource.RLIM_INFINITY))\n"
        "from nsight_lab.cli import main\n"
        f"sys.exit(main(['export', '{session}', '-o', {str(out)!r}]))\n"
    )
    done = subprocess.run(  # noqa: S603  (our own interpreter and code)
        [sys.executable, "-c", code], capture_output=True, check=False, timeout=120
    )
    assert done.returncode == EXIT_USAGE, done.stderr
    assert out.read_text() == "old\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


KINDS = (
    "fifo",
    "folder",
    "socket",
    "dangling",
    "missing_dir",
    "hardlink",
    "symlink",
    "file",
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=4))
def test_fuzz_special_targets_are_never_replaced(  # noqa: C901, PLR0912  (one branch per kind)
    session: int, tmp_path_factory: pytest.TempPathFactory, kinds: list[str]
) -> None:
    """Any chain of symlinks ending in any kind of file: only a regular file's
    content changes, every other file keeps its kind, and nothing else appears."""
    import socket

    folder = tmp_path_factory.mktemp("fuzz")
    end = folder / "end"
    kind = kinds[-1]
    sock = None
    if kind == "fifo":
        os.mkfifo(end)
    elif kind == "folder":
        end.mkdir()
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(end))
    elif kind == "missing_dir":
        end = folder / "none" / "end"
    elif kind == "hardlink":
        end.write_text("old\n")
        os.link(end, folder / "other")
    elif kind in {"file", "symlink"}:
        end.write_text("old\n")
    target = end
    if kind == "dangling" and len(kinds) == 1:
        kinds = ["symlink", *kinds]  # a link to nothing needs a link
    for i, _ in enumerate(kinds[:-1]):
        link = folder / f"link{i}"
        link.symlink_to(target)
        target = link
    before = {p.name: p.lstat().st_mode for p in folder.iterdir()}
    try:
        status, err = _export(session, target)
    finally:
        if sock is not None:
            sock.close()
    after = {p.name: p.lstat().st_mode for p in folder.iterdir()}
    assert {n: stat.S_IFMT(m) for n, m in after.items()} == {
        n: stat.S_IFMT(m) for n, m in before.items()
    }
    if kind in {"file", "symlink", "hardlink"}:
        assert status == 0, err
        assert len(pd.read_csv(end)) == 3
        if kind == "hardlink":
            assert (folder / "other").read_text() == end.read_text()
    else:
        assert status == EXIT_USAGE
        _one_line(err)
