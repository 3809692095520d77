"""What the user sees of a failed ``%%nsight`` cell: their frames, one-line errors.

An exception from the user's cell keeps only the user's frames (nsight-lab's and the
libraries' are cut off); an nsight-lab error is one printable line.
"""

from __future__ import annotations

import contextlib
import functools
import os
import site
import sysconfig
from pathlib import Path
from typing import TYPE_CHECKING

from nsight_lab.session import MAX_MESSAGE_CHARS

if TYPE_CHECKING:
    import types

__all__ = ["interrupted", "one_line", "user_frames"]

_PACKAGE_DIR = f"{Path(__file__).parent.parent}{os.sep}"
"""nsight_lab/: frames under it are nsight-lab's, not the user's."""


def user_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` from its first frame of the user's code (the cell) on.

    Frames of nsight-lab, of the standard library and installed packages, and of
    generated code (a dataclass's ``__init__`` is ``<string>``) before it are not
    the user's: a Ctrl-C landing in them while nsight-lab runs (its writer waiting on
    a ``threading.Condition``, a record being built) is no frame of the user's.

    Returns:
        That part of ``tb``, or ``None`` when no frame is the user's.
    """
    while tb is not None:
        if not _not_users(tb.tb_frame.f_code.co_filename):
            return tb
        tb = tb.tb_next
    return None


def _not_users(filename: str) -> bool:
    """Whether code from ``filename`` is nsight-lab's, a library's or generated."""
    if filename.startswith("<"):  # IPython's cells are <ipython-input-N-...>
        return not filename.startswith("<ipython-input-")
    return filename.startswith((_PACKAGE_DIR, *_library_dirs()))


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    """The standard library's and the installed packages' directories."""
    paths = sysconfig.get_paths()
    dirs = {paths[key] for key in ("stdlib", "purelib", "platlib") if key in paths}
    with contextlib.suppress(AttributeError):  # some virtualenvs lack it
        dirs.update(site.getsitepackages())
    return tuple(f"{d.rstrip(os.sep)}{os.sep}" for d in sorted(dirs))


def interrupted(exc: KeyboardInterrupt) -> KeyboardInterrupt:
    """``exc`` shown in two lines: Ctrl-C landed in nsight-lab's code (between runs).

    No frame is the user's, and the ~90 of nsight-lab's (runner, writer, session) say
    nothing worth reading; IPython renders an exception by its
    ``_render_traceback_`` when it has one, and the note says what the store kept.
    """
    notes = [str(note) for note in getattr(exc, "__notes__", ())]
    lines = ["KeyboardInterrupt (in nsight-lab's code; its frames not shown)", *notes]
    exc.__dict__["_render_traceback_"] = lambda: lines
    return exc.with_traceback(None)


def one_line(message: str) -> str:
    """The message as one printable line of at most :data:`MAX_MESSAGE_CHARS`.

    A safety net for messages built from user text: newlines become spaces, control
    characters and lone surrogates are escaped, and an over-long message is cut.
    """
    text = " ".join(message.split())
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 3] + "..."
    return text
