"""The API's own lines (nsight-python prints them): the ``nsight_lab.api`` logger.

``analyze.kernel``'s "Refer to" lines and its ``DEBUG`` plan, ``analyze.plot``'s
``print_data`` table and its notes go to this logger at ``INFO``; its handler writes
them to the ``sys.stdout`` of the moment (a notebook cell's, a test's capture), where
nsight-python prints them. A program that wants them elsewhere (or not at all)
configures the logger as any other: ``logging.getLogger("nsight_lab.api")``.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["logger", "say"]


class _CurrentStdout(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler that writes each line to the ``sys.stdout`` of the moment."""

    def emit(self, record: logging.LogRecord) -> None:
        """Write ``record``'s message on the current ``sys.stdout``, then flush."""
        self.stream = sys.stdout
        super().emit(record)


logger = logging.getLogger("nsight_lab.api")
logger.setLevel(logging.INFO)
logger.propagate = False  # shown once, as nsight-python's lines, not twice
logger.addHandler(_CurrentStdout())


def say(line: str) -> None:
    """One of the API's lines (what nsight-python would print)."""
    logger.info("%s", line)
