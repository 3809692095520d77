"""nsight-lab's own lines outside a notebook's views, as logging: the one :func:`say`.

Two loggers, each writing to the stream of the moment (a terminal, a notebook cell's
output, a test's capture), where those lines always went:

- ``nsight_lab.session`` (:data:`say`, on ``sys.stderr``): progress lines, a derive
  function's failures, a verdict table, a final display that failed;
- ``nsight_lab.api`` (:data:`api_say`, on ``sys.stdout``): nsight-python's printed
  lines -- ``analyze.kernel``'s "Refer to" lines and its ``DEBUG`` plan,
  ``analyze.plot``'s ``print_data`` table and its notes -- where nsight-python prints
  them.

A program that wants them elsewhere (or not at all) configures the logger as any
other: ``logging.getLogger("nsight_lab.session")`` or ``"nsight_lab.api"``.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["api_say", "say"]


class _CurrentStream(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler that writes each line to ``sys.stdout`` or ``sys.stderr`` as it is."""

    def __init__(self, stream: Literal["stdout", "stderr"]) -> None:
        super().__init__()
        self._stream_name = stream

    def emit(self, record: logging.LogRecord) -> None:
        """Write ``record``'s message on the current stream, then flush."""
        self.stream = getattr(sys, self._stream_name)
        super().emit(record)


def _line_logger(
    name: str, stream: Literal["stdout", "stderr"]
) -> Callable[[str], None]:
    """``say(line)`` for logger ``name``: ``INFO``, shown once, on ``stream``."""
    logger = logging.getLogger(name)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # shown once, not again by the root logger
    logger.addHandler(_CurrentStream(stream))

    def say(line: str) -> None:
        logger.info("%s", line)

    return say


say = _line_logger("nsight_lab.session", "stderr")
"""One of a profile's own lines (shown on stderr)."""

api_say = _line_logger("nsight_lab.api", "stdout")
"""One of the nsight-python API's lines (what nsight-python would print)."""
