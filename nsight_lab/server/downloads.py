r"""Download handlers: a session exported as CSV/Parquet, and its kept ``.ncu-rep``.

Paths are never taken from the request: only the integer session id (route ``\d+``)
and the integer ``config`` index choose a file, and the file found must lie inside
the configured reports directory once symlinks are resolved.

Kept reports are expected as ``<reports_dir>/session_<id>/config_<N>.ncu-rep``, one per
config index ``N`` (other ``*.ncu-rep`` names there are offered after those, by name).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import tornado.web

from nsight_lab.errors import NotFoundError, RequestError
from nsight_lab.server.base import NsightLabHandler, parse_count
from nsight_lab.store.run_store import RunStore
from nsight_lab.text.safe import frame_to_csv

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EXPORT_FORMATS", "EXPORT_WHAT", "ExportHandler", "ReportHandler"]

EXPORT_FORMATS = ("csv", "parquet")
EXPORT_WHAT = ("runs", "results")
_MEDIA_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "parquet": "application/vnd.apache.parquet",
}
_REPORT_SUFFIX = ".ncu-rep"
_REPORT_NAME = re.compile(r"config_([0-9]+)\.ncu-rep")
_CHUNK_BYTES = 1 << 20


class ExportHandler(NsightLabHandler):
    """``GET sessions/<id>/export?format=csv|parquet&what=runs|results``."""

    @tornado.web.authenticated
    async def get(self, session_id: str) -> None:
        """Send the session as a file (``Content-Disposition: attachment``).

        ``what=runs`` (default) is one flat row per stored run
        (:func:`nsight_lab.results.stored.runs_frame`); ``what=results`` the results
        table (:func:`nsight_lab.results.stored.session_results`). ``format`` is
        ``csv`` (default) or ``parquet``.

        Raises:
            RequestError: ``format`` or ``what`` is unknown, or Parquet is asked for
                without pyarrow installed (400).
            NotFoundError: No such session (404).
            StoreError: The store cannot be read (500).
        """
        sid = parse_count(session_id, "session id")
        fmt = self.choice_argument("format", EXPORT_FORMATS)
        what = self.choice_argument("what", EXPORT_WHAT)
        if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
            msg = (
                "export format 'parquet' needs pyarrow on the Jupyter server; "
                "install it with: pip install pyarrow, or use format=csv"
            )
            raise RequestError(msg)
        store = await self.blocking(self.session_store, sid)
        # Built in a child process (a large session's frame is millions of objects,
        # whose garbage collection in a thread would hold every request up: 1.1 s
        # for a 21 MB CSV, issue 22) into a temporary file, then streamed from it a
        # chunk at a time, each read in a thread.
        path = await self.workers.run(
            export_file, store.location, store.read_only, sid, what, fmt
        )
        file, size = await self.blocking(_open_export, path)
        try:
            filename = f"nsight-lab_session_{sid}_{what}.{fmt}"
            self.set_header("Content-Disposition", f'attachment; filename="{filename}"')
            self.set_header("Content-Type", _MEDIA_TYPES[fmt])
            self.set_header("Content-Length", str(size))
            while chunk := await self.blocking(file.read, _CHUNK_BYTES):
                self.write(chunk)
                await self.flush()
            self.finish()
        finally:
            await self.blocking(_discard_export, file, path)


class ReportHandler(NsightLabHandler):
    """``GET sessions/<id>/report[?config=N]``: a kept Nsight Compute report."""

    @tornado.web.authenticated
    async def get(self, session_id: str) -> None:
        """Send the session's ``.ncu-rep`` for config ``N`` (default: the first kept).

        Raises:
            RequestError: ``config`` is not a whole number (400).
            NotFoundError: No such session, or no report kept for it or that
                config (404).
            StoreError: The store cannot be read (500).
        """
        sid = parse_count(session_id, "session id")
        raw_config = self.get_query_argument("config", None)
        config = None if raw_config is None else parse_count(raw_config, "config")
        self.session_store(sid)
        path = _report_path(Path(self.nsight_config.reports_dir), sid, config)
        name = f"nsight-lab_session_{sid}_{path.name}"
        self.set_header("Content-Type", "application/octet-stream")
        self.set_header("Content-Disposition", f'attachment; filename="{name}"')
        self.set_header("Content-Length", str(path.stat().st_size))
        with path.open("rb") as file:
            while chunk := file.read(_CHUNK_BYTES):
                self.write(chunk)
                await self.flush()
        self.finish(set_content_type="application/octet-stream")


def write_export(
    store: RunStore, session_id: int, what: str, fmt: str, target: Path
) -> None:
    """Write the session's table to ``target`` as CSV or Parquet.

    Runs in the server's worker process (:func:`export_file`).

    Raises:
        NotFoundError: No such session.
        StoreError: The store cannot be read.
    """
    from nsight_lab.results import stored  # noqa: PLC0415  (pandas: in a child, on the first export only)

    frame: pd.DataFrame = (
        stored.runs_frame(store, [session_id])
        if what == "runs"
        else stored.session_results(store, session_id)
    )
    if fmt == "csv":
        # Text cells a spreadsheet would run as formulas (=, +, -, @...) get a "'".
        with target.open(
            "w", encoding="utf-8", errors="backslashreplace", newline=""
        ) as file:
            frame_to_csv(frame, file)
        return
    frame.to_parquet(target, index=False)


def export_file(
    path: str,
    read_only: bool,  # noqa: FBT001
    session_id: int,
    what: str,
    fmt: str,
) -> str:
    """Write a session's export to a new temporary file; return its path.

    Runs in a child process (:class:`nsight_lab.server.workers.Workers`). The
    caller streams the file and removes it. A failure leaves no file behind.

    Raises:
        NotFoundError: No such session.
        StoreError: The store cannot be read.
    """
    handle, name = tempfile.mkstemp(prefix="nsight-lab-export-", suffix=f".{fmt}")
    os.close(handle)
    try:
        with RunStore(path, read_only=read_only) as store:
            write_export(store, session_id, what, fmt, Path(name))
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return name


def _open_export(path: str) -> tuple[BinaryIO, int]:
    """Open the export file made by the worker; return it and its size.

    The file is removed at once (what is open stays readable on POSIX): nothing is
    left behind whatever happens next, and none is there once the client has its
    last byte (where removing an open file fails, :func:`_discard_export` does).
    """
    try:
        file = Path(path).open("rb")  # noqa: SIM115  (closed by _discard_export)
    finally:
        with contextlib.suppress(OSError):
            Path(path).unlink()
    return file, os.fstat(file.fileno()).st_size


def _discard_export(file: BinaryIO, path: str) -> None:
    """Close and remove the export file once sent (or the client went away)."""
    file.close()
    with contextlib.suppress(OSError):
        Path(path).unlink()


def _report_path(root: Path, session_id: int, config: int | None) -> Path:
    """Return the kept report of a session (and config) inside ``root``.

    Raises:
        NotFoundError: None is kept, or it would lie outside ``root``.
    """
    directory = root / f"session_{session_id}"
    reports = _kept_reports(root, directory)
    if config is None:
        if reports:
            return reports[0][1]
        msg = (
            f"session {session_id} has no kept Nsight Compute report; reports are kept "
            "for sessions profiled with --backend ncu"
        )
        raise NotFoundError(msg)
    for index, path in reports:
        if index == config:
            return path
    kept = ", ".join(str(i) for i, _ in reports if i is not None) or "none"
    msg = (
        f"session {session_id} has no kept Nsight Compute report for config {config}; "
        f"configs with a report: {kept}"
    )
    raise NotFoundError(msg)


def _kept_reports(root: Path, directory: Path) -> list[tuple[int | None, Path]]:
    """Return ``(config index or None, path)`` of the reports, by index then name."""
    try:
        resolved_root = root.resolve()
        candidates = list(directory.iterdir()) if directory.is_dir() else []
    except OSError:
        return []
    found: list[tuple[int | None, Path]] = []
    for path in candidates:
        if not path.name.endswith(_REPORT_SUFFIX) or not path.is_file():
            continue
        if not path.resolve().is_relative_to(resolved_root):
            continue  # a symlink out of the reports directory is never served
        match = _REPORT_NAME.fullmatch(path.name)
        found.append((int(match.group(1)) if match else None, path))
    return sorted(found, key=lambda item: (item[0] is None, item[0] or 0, item[1].name))
