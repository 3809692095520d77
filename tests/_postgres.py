"""A throwaway PostgreSQL cluster for the tests: ``initdb``/``pg_ctl`` on a free port.

Used by the session-scoped ``postgres_server`` fixture (tests/conftest.py); also runs
alone (``python tests/_postgres.py``) to start one by hand and print its URL, or
(``python tests/_postgres.py --url-file F -- CMD ARGS…``) to run a command against one:
the ui-tests' PostgreSQL JupyterLab (ui-tests/playwright.config.js).

PostgreSQL refuses to run as root, so under root the cluster belongs to the
``postgres`` user (Debian's package creates it), else to ``nobody``; its data and
socket live in a fresh directory of its own under the system temp directory.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "nsight"
PASSWORD = "nsight-test-secret"  # noqa: S105  (a throwaway local cluster)


def find_bin_dir() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``, newest Debian version first.

    ``$NSIGHT_LAB_PG_BIN`` wins; then Debian's ``/usr/lib/postgresql/<N>/bin`` (the
    package does not put them on PATH); then PATH.
    """
    env = os.environ.get("NSIGHT_LAB_PG_BIN")
    if env:
        return Path(env)
    debian = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: (
            int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0
        ),
    )
    if debian:
        return debian[-1].parent
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    return None


def missing_reason() -> str | None:
    """Why a cluster cannot be started here (one line), or ``None`` when it can."""
    try:
        import psycopg  # noqa: F401  (only asks whether it is installed)
    except ImportError:
        return "psycopg is not installed: pip install -e '.[test]'"
    if find_bin_dir() is None:
        return (
            "PostgreSQL is not installed (no initdb/pg_ctl in "
            "/usr/lib/postgresql/*/bin or on PATH): run scripts/setup.sh, or "
            "apt-get install postgresql"
        )
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    """A running cluster; :meth:`stop` ends it and removes its files."""

    bin_dir: Path
    root: Path
    port: int
    owner: str | None
    """The user the server runs as (``None``: the current user)."""

    @property
    def data(self) -> Path:
        """The cluster's data directory."""
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        """A connection URL for ``database`` (with the superuser's password)."""
        return f"postgresql://{SUPERUSER}:{PASSWORD}@127.0.0.1:{self.port}/{database}"

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run a PostgreSQL program of ``bin_dir`` as the cluster's owner."""
        cmd = [str(self.bin_dir / args[0]), *args[1:]]
        if self.owner is not None:
            cmd = ["runuser", "-u", self.owner, "--", *cmd]
        return subprocess.run(  # noqa: S603  (our own arguments)
            cmd, capture_output=True, text=True, check=False, timeout=120
        )

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove the cluster's directory."""
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self.run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate", "-w")
        shutil.rmtree(self.root, ignore_errors=True)


def _owner() -> str | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    msg = "running as root and neither a postgres nor a nobody user exists"
    raise RuntimeError(msg)


def start(bin_dir: Path) -> Cluster:
    """Create and start a cluster on a free loopback port.

    Raises:
        RuntimeError: ``initdb`` or ``pg_ctl start`` failed (their output in it).
    """
    owner = _owner()
    root = Path(tempfile.mkdtemp(prefix="nsight-lab-pg-"))
    pwfile = root / "pw"
    pwfile.write_text(PASSWORD + "\n")
    if owner is not None:
        entry = pwd.getpwnam(owner)
        os.chown(root, entry.pw_uid, entry.pw_gid)
        os.chown(pwfile, entry.pw_uid, entry.pw_gid)
    root.chmod(0o700)
    cluster = Cluster(bin_dir, root, _free_port(), owner)
    init = cluster.run(
        "initdb", "-D", str(cluster.data), "-U", SUPERUSER, "--pwfile", str(pwfile),
        "-A", "scram-sha-256", "-E", "UTF8", "--no-instructions",
    )  # fmt: skip
    if init.returncode != 0:
        cluster.stop()
        msg = f"initdb failed: {init.stdout}{init.stderr}"
        raise RuntimeError(msg)
    # Throwaway: no durability, a socket in our own folder, enough connections for
    # the concurrency tests (8 writer processes, a server's worker threads).
    options = (
        f"-p {cluster.port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        " -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
    )
    started = cluster.run(
        "pg_ctl", "start", "-D", str(cluster.data), "-w", "-t", "60",
        "-l", str(root / "log"), "-o", options,
    )  # fmt: skip
    if started.returncode != 0:
        log = (
            (root / "log").read_text(errors="replace")
            if (root / "log").exists()
            else ""
        )
        cluster.stop()
        msg = f"pg_ctl start failed: {started.stdout}{started.stderr}{log}"
        raise RuntimeError(msg)
    return cluster


def _run_command(cluster: Cluster, url_file: Path | None, command: list[str]) -> int:
    """Run ``command`` with ``NSIGHT_LAB_STORE`` set to the cluster; its exit status.

    A SIGTERM or SIGINT (Playwright's webServer shutdown signals the whole process
    group) ends the command; the caller then stops the cluster, whose postmaster
    ``pg_ctl`` detached from this process group.
    """
    url = cluster.url()
    if url_file is not None:
        url_file.write_text(url + "\n")
    child = subprocess.Popen(  # noqa: S603  (the caller's own command)
        command, env={**os.environ, "NSIGHT_LAB_STORE": url}
    )

    def _end(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    signal.signal(signal.SIGTERM, _end)
    signal.signal(signal.SIGINT, _end)
    try:
        return child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if url_file is not None:
            url_file.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    """Start a cluster; print its URL and wait, or run a command against it."""
    parser = argparse.ArgumentParser(
        description="A throwaway PostgreSQL cluster on a free loopback port."
    )
    parser.add_argument(
        "--url-file", type=Path, help="write the cluster's URL to this file too"
    )
    parser.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        help="after --: run this with NSIGHT_LAB_STORE set, stop when it ends",
    )
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    reason = missing_reason()
    if reason is not None:
        msg = f"cannot start PostgreSQL: {reason}"
        raise SystemExit(msg)
    bin_dir = find_bin_dir()
    assert bin_dir is not None  # missing_reason checked it
    cluster = start(bin_dir)
    try:
        if command:
            return _run_command(cluster, args.url_file, command)
        if args.url_file is not None:
            args.url_file.write_text(cluster.url() + "\n")
        print(cluster.url(), flush=True)  # noqa: T201
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
        return 0
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
