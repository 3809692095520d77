"""The ``%nsight`` line magic's commands: the CLI's, parsed by the same parser.

A line is parsed by :func:`nsight_lab.cli.parser.parse_command` (``prog="%nsight"``),
so the magic and ``nsight-lab`` take the same arguments, print the same help and give
the same one-line errors. In a notebook a table is returned as a DataFrame (the
notebook shows it: ``history``, ``show --frame``, ``peaks``, ``baseline list`` and
``baseline show``); the other commands print what ``nsight-lab`` prints.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

from nsight_lab.cli.main import run_parsed
from nsight_lab.cli.parser import MAGIC_PROG, HelpShown, build_parser, parse_command
from nsight_lab.options import help_text
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    import argparse

    import pandas as pd

__all__ = ["line_command", "usage"]

HELP_WORDS = frozenset({"help", "--help", "-h"})


def usage() -> str:
    """The ``%nsight help`` / ``%%nsight --help`` text.

    The cell magic's option lines (from :data:`nsight_lab.options.OPTIONS`, their one
    declaration), then the line magic's commands (from the commands' one parser).
    """
    return f"{help_text()}\n{build_parser(MAGIC_PROG).format_help()}"


def line_command(line: str) -> pd.DataFrame | None:
    """Run ``%nsight LINE``; the table it shows, or ``None`` where it printed.

    Raises:
        NsightLabError: A malformed line or a user-fixable problem (one line).
    """
    words = line.split()
    if not words or words[0] in HELP_WORDS:
        print(usage())  # noqa: T201  (the magic's own output)
        return None
    try:
        args = parse_command(words, MAGIC_PROG)
    except HelpShown:
        return None
    shown, frame = _table(args)
    if not shown:
        run_parsed(args)  # printed as nsight-lab prints it
    return frame


def _table(args: argparse.Namespace) -> tuple[bool, pd.DataFrame | None]:  # noqa: PLR0911  (per command)
    """Whether ``args`` was shown here, and the DataFrame a notebook shows.

    ``(False, None)``: the CLI prints it. ``(True, None)``: printed here already
    (``show``'s text, fitted to the notebook's width): printing it again through
    the CLI printed the table twice (issue 30).
    """
    from nsight_lab.cli.history import baselines_frame, history_shown  # noqa: PLC0415
    from nsight_lab.cli.reports import (  # noqa: PLC0415  (pandas: on first use)
        baseline_results,
        history_frame,
        peaks_frame,
    )
    from nsight_lab.results.stored import session_results  # noqa: PLC0415  (pandas)
    from nsight_lab.text.frame import shown_frame  # noqa: PLC0415  (pandas)
    from nsight_lab.views.show import session_text  # noqa: PLC0415  (pandas)

    command, as_json = args.command, getattr(args, "json", False)
    if command == "peaks":
        return True, peaks_frame(cpu=args.cpu, refresh=args.refresh)
    if as_json or command not in {"history", "show", "baseline"}:
        return False, None
    with RunStore() as store:
        if command == "history":
            return True, shown_frame(history_shown(history_frame(store, args)))
        if command == "show" and args.frame:
            return True, shown_frame(session_results(store, args.session_id))
        if command == "show" and not args.runs:
            width = shutil.get_terminal_size((120, 24)).columns
            print(  # noqa: T201  (the magic's own output)
                session_text(store, args.session_id, width=width, wide=args.wide)
            )
            return True, None
        if command == "baseline" and args.verb == "list":
            return True, baselines_frame(store)
        if command == "baseline" and args.verb == "show":
            header, frame = baseline_results(
                store, args.name, f"{MAGIC_PROG} baseline show"
            )
            print(header)  # noqa: T201
            return True, frame
    return False, None
