"""The one definition of nsight-lab's commands: ``nsight-lab ...`` and ``%nsight ...``.

:func:`build_parser` builds the argparse parser of every command (doctor,
history, show, explain, export, baseline, compare, peaks); the ``nsight-lab`` CLI
parses its argv with it (``prog="nsight-lab"``) and the ``%nsight`` line magic its line
(``prog="%nsight"``), so both take the same arguments, print the same help and give
the same one-line errors. argparse's exits never reach the caller (a notebook's
kernel): a malformed line raises :class:`~nsight_lab.errors.CommandError`, ``--help``
prints the help and raises :class:`HelpShown`.
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, NoReturn

from nsight_lab.analysis.baselines import MAX_THRESHOLD_PCT
from nsight_lab.errors import CommandError
from nsight_lab.options import shown
from nsight_lab.store.run_store import SESSION_FILTERS
from nsight_lab.text.numbers import whole_number

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = [
    "CLI_PROG",
    "EXIT_REGRESSION",
    "FILTERS",
    "MAGIC_PROG",
    "HelpShown",
    "build_parser",
    "parse_command",
]

CLI_PROG = "nsight-lab"
MAGIC_PROG = "%nsight"
EXIT_REGRESSION = 1
"""``compare --fail-on-regression``: some timed row is slower (its verdicts:
``analysis/compare.py``)."""
FILTERS = SESSION_FILTERS
"""``history`` filters, passed to ``RunStore.list_sessions`` as they are."""
MAX_ID = 2**63 - 1
"""Largest id or count the store can hold (SQLite's INTEGER)."""
_ECHO_CHARS = 40


class HelpShown(Exception):  # noqa: N818  (control flow, not an error)
    """``--help`` was asked for and printed: the command is done."""


class CommandParser(argparse.ArgumentParser):
    """argparse, with its errors raised as one-line :class:`CommandError` s."""

    def error(self, message: str) -> NoReturn:
        """Raise ``message`` (argparse would print usage and exit).

        Raises:
            CommandError: Always: which command, what is wrong, where the help is.
        """
        command = self.prog.partition(" ")[2]
        where = f"{command}: " if command else ""
        msg = f"{where}{message} (see {self.prog} --help)"
        raise CommandError(msg)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        """End the command without ending the process (argparse exits after help).

        Raises:
            CommandError: argparse ends with a message (an error).
            HelpShown: The help was printed.
        """
        if status or message:
            raise CommandError(" ".join((message or "error").split()))
        raise HelpShown


def parse_command(words: Sequence[str], prog: str = CLI_PROG) -> argparse.Namespace:
    """``words`` (a command line after the program's name) as parsed arguments.

    Raises:
        CommandError: A malformed line (one line, naming the command's help).
        HelpShown: ``--help`` was asked for (the help is printed).
    """
    args, extra = build_parser(prog).parse_known_args(list(words))
    if extra:  # named with its command, as the command's own errors are
        command = " ".join(w for w in (args.command, getattr(args, "verb", None)) if w)
        msg = (
            f"{command}: unrecognized arguments: {' '.join(extra)} "
            f"(see {prog} {command} --help)"
        )
        raise CommandError(msg)
    return args


def build_parser(prog: str = CLI_PROG) -> argparse.ArgumentParser:
    """The parser of every command, under the program name ``prog``."""
    parser = CommandParser(
        prog=prog,
        description="GPU profiling in the notebook: check the stack, read the store.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    doctor = sub.add_parser("doctor", help="check the GPU stack and say what to fix")
    _json(doctor)
    _history(sub.add_parser("history", help="list profile sessions, newest first"))
    _show(sub.add_parser("show", help="the results of one session"))
    explain = sub.add_parser(
        "explain", help="why a session's regions are slow, and what would help"
    )
    explain.add_argument("session_id", type=whole(1), help="see history")
    _json(explain, "print the findings as JSON (the sidebar's shape)")
    _export(
        sub.add_parser("export", help="write sessions' runs (or results) to a file")
    )
    _baseline(sub.add_parser("baseline", help="name sessions to compare against"))
    _compare(
        sub.add_parser(
            "compare", help="session B against A: ratios, intervals and verdicts"
        )
    )
    peaks = sub.add_parser(
        "peaks", help="measure (once per device, kept) and show attainable peaks"
    )
    peaks.add_argument("--cpu", action="store_true", help="the CPU's, not the GPU's")
    peaks.add_argument("--refresh", action="store_true", help="measure again")
    return parser


def _json(parser: argparse.ArgumentParser, text: str = "print JSON") -> None:
    parser.add_argument("--json", action="store_true", help=text)


def _history(history: argparse.ArgumentParser) -> None:
    history.add_argument(
        "count", nargs="?", type=whole(1), help="the N newest sessions (as --limit N)"
    )
    history.add_argument("--limit", type=whole(0), default=20)
    history.add_argument("--offset", type=whole(0), default=0)
    for name in FILTERS:
        history.add_argument(f"--{name}")
    _json(history)


def _show(show: argparse.ArgumentParser) -> None:
    show.add_argument("session_id", type=whole(1), help="see history")
    show.add_argument(
        "--runs", action="store_true", help="every run instead of the summary"
    )
    show.add_argument(
        "--wide",
        action="store_true",
        help="every column and every counter, whatever the terminal's width",
    )
    show.add_argument(
        "--frame",
        action="store_true",
        help="the results DataFrame (nsight-python's columns) instead of the summary",
    )
    _json(show, "print the results DataFrame as JSON")


def _export(export: argparse.ArgumentParser) -> None:
    export.add_argument("session_ids", type=whole(1), nargs="+")
    export.add_argument("--format", choices=("csv", "parquet"), default="csv")
    export.add_argument("--what", choices=("runs", "results"), default="runs")
    export.add_argument(
        "-o", "--output", help="file to write (default: stdout for csv)"
    )


def _baseline(baseline: argparse.ArgumentParser) -> None:
    verbs = baseline.add_subparsers(dest="verb", required=True, metavar="VERB")
    setter = verbs.add_parser(
        "set", help="name a session (default: the latest completed one)"
    )
    setter.add_argument("name")
    setter.add_argument("session", nargs="?", help="a session id or baseline name")
    _json(verbs.add_parser("list", help="every baseline and its session"))
    shower = verbs.add_parser("show", help="the results of a baseline's session")
    shower.add_argument("name")


def _compare(compare: argparse.ArgumentParser) -> None:
    compare.add_argument("a", help="the baseline: a session id or baseline name")
    compare.add_argument("b", help="the candidate: a session id or baseline name")
    compare.add_argument(
        "--threshold",
        type=percent,
        default=None,
        metavar="PCT",
        help=(
            "changes within +-PCT %% are no change, whatever their interval "
            "(default 2.2: the largest same-code move measured on an H200; "
            "0: noise alone)"
        ),
    )
    compare.add_argument(
        "--fail-on-regression",
        action="store_true",
        help=(
            f"exit with status {EXIT_REGRESSION} when a timed row of B is slower "
            "beyond noise and the threshold (for CI)"
        ),
    )
    compare.add_argument(
        "--strict",
        action="store_true",
        help=(
            "with --fail-on-regression, fail on rows inconclusive for the clocks "
            "(one session throttled) too"
        ),
    )
    compare.add_argument(
        "--all",
        action="store_true",
        help="show the deterministic rows (work-model counts) too",
    )
    _json(compare)


def whole(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number in ``[minimum, 2**63 - 1]``."""

    def parse(text: str) -> int:
        value = whole_number(text, minimum, MAX_ID)
        if value is not None:
            return value
        got = shown(text, _ECHO_CHARS)
        msg = f"expected a whole number from {minimum} to {MAX_ID}, got {got}"
        raise argparse.ArgumentTypeError(msg)

    return parse


def percent(text: str) -> float:
    """An argparse type: a percentage (``--threshold``), returned as given."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (0 <= value <= MAX_THRESHOLD_PCT):
        got = shown(text, _ECHO_CHARS)
        msg = f"expected a percentage from 0 to {MAX_THRESHOLD_PCT:g}, got {got}"
        raise argparse.ArgumentTypeError(msg)
    return value
