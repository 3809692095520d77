"""A profile's own lines outside a notebook: the ``nsight_lab.session`` logger.

Progress lines, a derive function's failures, a verdict table, a final display that
failed: :func:`say` logs them at ``INFO``; the handler writes each to the
``sys.stderr`` of the moment (a terminal, a test's capture), where they always went.
A program that wants them elsewhere (or not at all) configures the logger as any
other: ``logging.getLogger("nsight_lab.session")``.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["logger", "say"]


class _CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler that writes each line to the ``sys.stderr`` of the moment."""

    def emit(self, record: logging.LogRecord) -> None:
        """Write ``record``'s message on the current ``sys.stderr``, then flush."""
        self.stream = sys.stderr
        super().emit(record)


logger = logging.getLogger("nsight_lab.session")
logger.setLevel(logging.INFO)
logger.propagate = False  # shown once
logger.addHandler(_CurrentStderr())


def say(line: str) -> None:
    """One of the profile's own lines (shown on stderr)."""
    logger.info("%s", line)
