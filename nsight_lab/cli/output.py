"""Where ``nsight-lab export -o PATH`` writes, as a careful tool does (issue 29).

Renaming a temporary file over ``PATH`` (the atomic way to replace a file) is right
only when ``PATH`` is a regular file with one name. Anything else it would destroy:
a device node or FIFO becomes a regular file (as root, ``-o /dev/full`` replaced the
device), a symlink becomes a file (``-o /proc/self/fd/1`` wrote nothing to stdout),
a hard link is broken. So :func:`resolve_target` decides, before anything is
written:

- ``-`` or a path that is this process's stdout (``/dev/stdout``, ``/proc/self/fd/1``,
  whatever stdout is: a pipe, a terminal, a file) is stdout, written in place;
- a symlink is followed to its target, which is then written as below (the link
  stays); a link to nothing is refused (as ``cp`` does), as is a loop;
- an existing target that is not a regular file (a device, FIFO, socket, folder) is
  refused in one line;
- a missing folder is refused in one line naming it (never created silently);
- a regular file with more than one name (hard links) is rewritten in place, after
  the whole table was written to a temporary file beside it and the disk was seen to
  have room, so every name sees the new table; otherwise a temporary file is renamed
  over it. Either way a failure leaves no temporary file behind.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nsight_lab.errors import OutputError

if TYPE_CHECKING:
    from collections.abc import Callable

STDOUT = "-"
"""``-o -``: write to stdout."""
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)
_COPY_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class Target:
    """Where to write: stdout, or a regular file (new, single or hard-linked)."""

    path: Path | None
    """The file to write (a symlink's target); ``None`` for stdout."""
    links: int = 0
    """The file's names now (0: it does not exist yet)."""


def _kind(mode: int) -> str | None:
    for test, name in _KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def _is_stdout(st: os.stat_result) -> bool:
    try:
        return os.path.samestat(st, os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, AttributeError):
        return False  # stdout has no file descriptor (captured)


def resolve_target(given: str) -> Target:
    """Decide where ``-o given`` writes, refusing what must not be replaced.

    Raises:
        OutputError: The target is a device, FIFO, socket or folder, a symlink to
            nothing, or its folder does not exist (one line, what to do).
    """
    if given == STDOUT:
        return Target(None)
    path = Path(given)
    try:
        st = path.stat()  # follows symlinks: what a write would reach
    except FileNotFoundError:
        st = None
    except OSError as exc:  # a loop, a permission, a name too long
        msg = f"export -o {given!r}: {exc.strerror or exc}; give another file"
        raise OutputError(msg) from exc
    if st is not None and _is_stdout(st):
        return Target(None)
    if path.is_symlink():
        if st is None:
            msg = (
                f"export -o {given!r}: a symlink to {str(path.readlink())!r}, which "
                "does not exist; not writing through it: give the target's own path"
            )
            raise OutputError(msg)
        path = path.resolve()
    if st is not None:
        kind = _kind(st.st_mode)
        if kind is not None:
            msg = (
                f"export -o {given!r}: it is {kind}, not a regular file, and is not "
                "replaced; give a file path, or -o - for stdout"
            )
            raise OutputError(msg)
        return Target(path, st.st_nlink)
    folder = path.parent
    if not folder.is_dir():
        msg = (
            f"export -o {given!r}: the folder {str(folder)!r} does not exist; "
            "create it first (mkdir -p), it is not created for you"
        )
        raise OutputError(msg)
    return Target(path, 0)


def file_mode(path: Path) -> int:
    """The mode ``open(path, "w")`` leaves ``path`` with.

    0666 less the umask for a new file, the old file's mode when it replaces one
    (``mkstemp``'s 0600 made an export unreadable to the group it was shared with).
    """
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        umask = os.umask(0o022)  # read it: the only way; set back at once
        os.umask(umask)
        return 0o666 & ~umask


def write_file(target: Target, write: Callable[[str], object]) -> None:
    """Write ``target`` (not stdout) through a temporary file beside it.

    The temporary file gets the whole table first; it then replaces a file with one
    name, or is copied into a file with several (hard links stay linked). Nothing of
    it is left behind, whatever fails (a full disk, Ctrl-C).

    Raises:
        OutputError: The file changed kind meanwhile, or the disk has no room for
            the in-place copy.
        OSError: The folder or file cannot be written.
    """
    path = target.path
    assert path is not None  # noqa: S101  (stdout is written by the caller)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        tmp.chmod(file_mode(path))
        write(name)
        _recheck(path)
        if target.links > 1:
            _copy_into(tmp, path)
        else:
            tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def _recheck(path: Path) -> None:
    """Refuse when ``path`` became something else while the table was written."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    kind = _kind(st.st_mode)
    if kind is not None:
        msg = f"export -o {str(path)!r}: it became {kind} while writing; not replaced"
        raise OutputError(msg)


def _copy_into(tmp: Path, path: Path) -> None:
    """Rewrite the hard-linked ``path`` in place with ``tmp``'s bytes.

    Only once the disk has room for all of them beyond what truncating ``path``
    frees: a copy that stopped half-way would leave every name half-written.
    """
    size = tmp.stat().st_size
    free = shutil.disk_usage(path.parent).free
    if size > free + path.stat().st_size:
        msg = (
            f"export -o {str(path)!r}: no space left on its disk to rewrite it in "
            f"place ({size:,} bytes needed, {free:,} free); it was not changed"
        )
        raise OutputError(msg)
    with tmp.open("rb") as src, path.open("r+b") as dst:
        dst.truncate(0)
        shutil.copyfileobj(src, dst, _COPY_CHUNK)
        dst.flush()
        os.fsync(dst.fileno())
