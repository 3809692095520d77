"""A real Jupyter server with nsight-lab on a fresh store, for the server benchmarks.

What ``live_refresh.py`` and ``websocket_fanout.py`` share: a throwaway store per
engine (:func:`fresh_store`: a SQLite file in a temporary home, or a throwaway
PostgreSQL cluster from ``tests/_postgres.py``), the server started on it
(:class:`Server`, optionally logging each request's own server time through a
``log_function`` in its config), the latency summary (:func:`summary`), the
arguments every server benchmark takes (:func:`engine_parser`) and the run over
the engines into one result file (:func:`run_info`, :func:`measure_engines`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

ROOT = Path(__file__).resolve().parent.parent
SMALL_PATHS = ("nsight-lab/api/status", "nsight-lab/api/sessions?limit=20")
"""The small requests both benchmarks time beside their load."""
START_TIMEOUT_S = 90.0

_CONFIG = r"""
import time

_LOG = open({log!r}, "a", buffering=1)


def _log_function(handler):
    _LOG.write(
        "%.6f\t%d\t%.3f\t%s\n"
        % (
            time.time(),
            handler.get_status(),
            1000.0 * handler.request.request_time(),
            handler.request.uri,
        )
    )


c.ServerApp.tornado_settings = {{"log_function": _log_function}}
"""

_SAMPLER = r"""
# NSIGHT_LAB_BENCH_PROFILE: sample every thread's stack every 5 ms (py-spy's
# poor cousin: where the server's wall time goes, per thread), written as
# collapsed stacks ("thread;frame;frame count") every 5 s.
import collections, sys, threading, time

def _sample(path=os.environ["NSIGHT_LAB_BENCH_PROFILE"]):
    counts = collections.Counter()
    me = threading.get_ident()
    last = time.monotonic()
    while True:
        time.sleep(0.005)
        names = {{t.ident: t.name for t in threading.enumerate()}}
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            stack = []
            while frame is not None:
                code = frame.f_code
                where = code.co_filename.rsplit("/", 2)[-1]
                stack.append(f"{{where}}:{{code.co_name}}")
                frame = frame.f_back
            name = names.get(ident, str(ident)).split(" ")[0].split("_")[0]
            counts[";".join([name, *reversed(stack)])] += 1
        if time.monotonic() - last > 5:
            last = time.monotonic()
            with open(path, "w") as out:
                for stack, n in counts.most_common():
                    out.write(f"{{stack}} {{n}}\n")

threading.Thread(target=_sample, name="bench-sampler", daemon=True).start()

# And every garbage collection's pause (it holds the GIL: every thread waits).
import gc
_GC = {{"at": 0.0, "pauses": collections.defaultdict(list)}}

def _gc(phase, info):
    if phase == "start":
        _GC["at"] = time.perf_counter()
        return
    ms = 1000.0 * (time.perf_counter() - _GC["at"])
    pauses = _GC["pauses"][info["generation"]]
    pauses.append(round(ms, 2))
    if info["generation"] == 2 or len(pauses) % 200 == 0:
        with open(os.environ["NSIGHT_LAB_BENCH_PROFILE"] + ".gc", "w") as out:
            for gen, values in sorted(_GC["pauses"].items()):
                big = sorted(values)[-5:]
                out.write(f"gen {{gen}}: n {{len(values)}}, total ms "
                          f"{{sum(values):.0f}}, longest {{big}}\n")

gc.callbacks.append(_gc)
"""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def summary(values_ms: list[float], failed: int | None = None) -> dict[str, Any]:
    """``n``, p50, p99 and max of some latencies; ``failed`` too where given."""
    extra = {} if failed is None else {"failed": failed}
    if not values_ms:
        return {"n": 0, **extra}
    ordered = sorted(values_ms)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered), 1),
        "p99_ms": round(p99, 1),
        "max_ms": round(ordered[-1], 1),
        **extra,
    }


def run_info(repo: Path) -> dict[str, Any]:
    """The commit served and the machine, for a result file's header."""
    commit = subprocess.run(  # noqa: S603
        ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],  # noqa: S607
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {
        "commit": commit,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
    }


@dataclass(frozen=True)
class Store:
    """A fresh store of one engine, in a temporary home."""

    home: Path
    """The server's ``NSIGHT_LAB_HOME`` (its log and request times go here too)."""
    location: str
    """What writers open: the SQLite file or the cluster's URL."""
    served: str | None
    """The server's ``NSIGHT_LAB_STORE``: the URL; ``None`` for the home's file."""


@contextlib.contextmanager
def fresh_store(engine: str, prefix: str) -> Iterator[Store | None]:
    """A fresh ``engine`` store (``None``: no PostgreSQL binaries), removed after."""
    cluster = None
    home = Path(tempfile.mkdtemp(prefix=f"{prefix}-{engine}-"))
    try:
        if engine == "postgresql":
            sys.path.insert(0, str(ROOT))
            from tests import _postgres  # noqa: PLC0415  (only for this engine)

            bin_dir = _postgres.find_bin_dir()
            if bin_dir is None:
                yield None
                return
            cluster = _postgres.start(bin_dir)
            yield Store(home, cluster.url(), cluster.url())
        else:
            yield Store(home, str(home / "store.sqlite"), None)
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(home, ignore_errors=True)


class Server:
    """A Jupyter server with nsight-lab on ``store``, serving ``repo``'s code.

    With ``log_times``, the server writes each request's own time (tornado's
    ``request_time()``) to a file, read back by :meth:`request_times`.
    """

    def __init__(self, repo: Path, store: Store, *, log_times: bool = False) -> None:
        """Start the server and wait until it answers."""
        home = store.home
        self.repo = repo
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}/"
        self.times = home / "request_times.tsv"
        options = []
        if log_times:
            config = home / "jupyter_server_config.py"
            text = _CONFIG.format(log=str(self.times))
            if os.environ.get("NSIGHT_LAB_BENCH_PROFILE"):
                text = "import os\n" + text + _SAMPLER.format()
            config.write_text(text)
            options.append(f"--config={config}")
        env = dict(os.environ, NSIGHT_LAB_HOME=str(home), PYTHONPATH=str(repo))
        env.pop("NSIGHT_LAB_STORE", None)
        if store.served is not None:
            env["NSIGHT_LAB_STORE"] = store.served
        self.log = (home / "server.log").open("w")
        self.proc = subprocess.Popen(  # noqa: S603  (our own arguments)
            [
                sys.executable,
                "-m",
                "jupyter_server",
                *options,
                f"--ServerApp.port={self.port}",
                "--ServerApp.ip=127.0.0.1",
                f"--IdentityProvider.token={self.token}",
                "--ServerApp.open_browser=False",
                "--ServerApp.allow_root=True",
                "--ServerApp.jpserver_extensions={'nsight_lab': True}",
                f"--ServerApp.root_dir={home}",
            ],
            cwd=repo,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.time() + START_TIMEOUT_S
        while not self._answers():
            if time.time() > deadline or self.proc.poll() is not None:
                self.stop()
                tail = (home / "server.log").read_text()[-2000:]
                msg = f"the server did not start:\n{tail}"
                raise RuntimeError(msg)
            time.sleep(0.2)

    def _answers(self) -> bool:
        try:
            self.get("nsight-lab/api/status")
        except OSError:
            return False
        return True

    def get(self, path: str) -> bytes:
        """GET ``path`` (below the base URL) with the token; the body."""
        req = urllib.request.Request(  # noqa: S310  (our own local server)
            self.base + path, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(req, timeout=120) as resp:  # noqa: S310
            return bytes(resp.read())

    def request_times(self) -> list[tuple[float, int, float, str]]:
        """(finished at, status, server ms, uri) of every request served so far."""
        rows = []
        for line in self.times.read_text().splitlines():
            at, status, ms, uri = line.split("\t", 3)
            rows.append((float(at), int(status), float(ms), uri))
        return rows

    def stop(self) -> None:
        """Stop the server."""
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@contextlib.contextmanager
def running_server(
    repo: Path, store: Store, *, log_times: bool = False
) -> Iterator[Server]:
    """A :class:`Server` on ``store``, stopped on exit."""
    server = Server(repo, store, log_times=log_times)
    try:
        yield server
    finally:
        server.stop()


def engine_parser(doc: str, result_name: str) -> argparse.ArgumentParser:
    """A parser with ``OUT``, ``--engine`` and ``--repo``; ``doc``'s first line.

    ``OUT`` defaults to ``benchmarks/results/<result_name>``, ``--engine`` (sqlite,
    postgresql or both) to both, ``--repo`` (the nsight_lab served) to this checkout.
    """
    parser = argparse.ArgumentParser(description=doc.split("\n", maxsplit=1)[0])
    parser.add_argument(
        "out",
        nargs="?",
        type=Path,
        default=ROOT / "benchmarks" / "results" / result_name,
    )
    parser.add_argument(
        "--engine", choices=("sqlite", "postgresql", "both"), default="both"
    )
    parser.add_argument("--repo", type=Path, default=ROOT, help="the nsight_lab served")
    return parser


def measure_engines(
    name: str,
    args: argparse.Namespace,
    out: dict[str, Any],
    run_engine: Callable[[str, argparse.Namespace], dict[str, Any]],
) -> None:
    """``run_engine`` for each of ``args.engine``'s engines into ``out``; write it.

    An engine that fails gets ``{"error": ..., "met": False}``, and the others
    still run. Progress goes to stderr, prefixed ``[name]``.
    """
    both = ("sqlite", "postgresql")
    for engine in both if args.engine == "both" else (args.engine,):
        print(f"[{name}] {engine} ...", file=sys.stderr, flush=True)
        try:
            out[engine] = run_engine(engine, args)
        except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
            out[engine] = {"error": f"{type(exc).__name__}: {exc}", "met": False}
        print(json.dumps(out[engine], indent=1), file=sys.stderr, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
