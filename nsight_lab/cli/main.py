"""``nsight-lab``: doctor, history, show, explain, export, baseline and compare.

Errors the user can fix (a bad argument, an unreadable store, an unknown session)
print one line on stderr and exit with status 2. ``compare A B --fail-on-regression``
exits with status 1 when B is slower than A beyond noise and the threshold (for CI).
Text from the store is printed with its control characters escaped
(:func:`nsight_lab.text.safe.for_terminal`); CSV cells that a spreadsheet would run as
formulas are neutralised. A reader that stops early (``nsight-lab show 3 | head -1``)
ends the command quietly with status 141, as
standard tools killed by ``SIGPIPE`` do.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from typing import TYPE_CHECKING

from nsight_lab.analysis.baselines import resolve, set_baseline, verdict_table
from nsight_lab.analysis.compare import DEFAULT_THRESHOLD
from nsight_lab.cli.doctor import all_checks
from nsight_lab.cli.doctor_text import checks_to_json, format_checks
from nsight_lab.cli.output import STDOUT, resolve_target, write_file
from nsight_lab.cli.parser import EXIT_REGRESSION, HelpShown, parse_command
from nsight_lab.errors import CommandError, NsightLabError
from nsight_lab.store.run_store import RunStore
from nsight_lab.text.safe import for_terminal, frame_for_terminal, frame_to_csv
from nsight_lab.text.units import format_quantity
from nsight_lab.views.verdicts import verdict_text

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from pathlib import Path
    from typing import BinaryIO, TextIO, TypeAlias

    import pandas as pd

    from nsight_lab.results.export import RunsTable

    _Table: TypeAlias = pd.DataFrame | RunsTable
    """What ``export`` writes: a results frame, or the runs streamed."""


EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 128 + 13
"""Status when the reader closed the pipe (as a process killed by ``SIGPIPE``)."""
MAX_ERROR_CHARS = 400
"""An error line is cut here: long enough for a damaged store's recovery command
with two long paths, short enough to read."""


def _print_frame(frame: pd.DataFrame, *, as_json: bool) -> None:
    """Print a table of stored data; its text cannot drive the terminal."""
    if as_json:
        # force_ascii: every control, bidi and non-ASCII character is a \u escape.
        print(frame.to_json(orient="records", indent=1, force_ascii=True))  # noqa: T201
    elif frame.empty:
        print("(nothing)")  # noqa: T201
    else:
        print(frame_for_terminal(frame).to_string(index=False))  # noqa: T201


def _show(store: RunStore, args: argparse.Namespace) -> int:
    """``show ID``: what the session is, its status and error, and its tables.

    The tables are the summary every view shows (:mod:`nsight_lab.views.show`),
    fitted to the terminal's width unless ``--wide``; ``--runs`` prints every run,
    ``--json`` the results DataFrame.
    """
    from nsight_lab.results.stored import runs_frame, session_results  # noqa: PLC0415  (pandas)
    from nsight_lab.views.show import session_text  # noqa: PLC0415  (pandas)

    session_id = args.session_id
    if args.runs:
        _print_frame(runs_frame(store, [session_id]), as_json=args.json)
        return 0
    if args.json or args.frame:
        _print_frame(session_results(store, session_id), as_json=args.json)
        return 0
    print(session_text(store, session_id, width=_width(), wide=args.wide))  # noqa: T201
    return 0


def _explain(store: RunStore, args: argparse.Namespace) -> int:
    """``explain ID``: every finding of the session, or ``--json`` its entries."""
    from nsight_lab.views.explain import explain_json, explain_text  # noqa: PLC0415  (plotly)

    if args.json:
        # ensure_ascii: every control, bidi and non-ASCII character is a \u escape.
        found = explain_json(store, args.session_id)
        print(json.dumps(found, indent=1, ensure_ascii=True))  # noqa: T201
        return 0
    for line in explain_text(store, args.session_id).splitlines():
        print(for_terminal(line))  # noqa: T201
    return 0


def run(argv: Sequence[str]) -> int:
    """Run the command line ``argv``; return the exit status.

    Raises:
        NsightLabError: A user-fixable problem (caught by :func:`main`).
    """
    try:
        args = parse_command(argv)
    except HelpShown:
        return 0
    return run_parsed(args)


def run_parsed(args: argparse.Namespace) -> int:
    """Run a parsed command (:func:`~nsight_lab.cli.parser.parse_command`), printing.

    Raises:
        NsightLabError: A user-fixable problem.
    """
    if args.command == "doctor":
        checks = all_checks()
        text = (
            json.dumps(checks_to_json(checks), indent=1)
            if args.json
            else format_checks(checks, width=shutil.get_terminal_size().columns)
        )
        print(text)  # noqa: T201
        return 0
    from nsight_lab.cli.reports import history_frame, peaks_frame  # noqa: PLC0415  (pandas: the store's commands)

    if args.command == "peaks":
        _print_frame(peaks_frame(cpu=args.cpu, refresh=args.refresh), as_json=False)
        return 0
    with RunStore() as store:
        if args.command in {"baseline", "compare"}:
            return _baselines(store, args)
        if args.command == "history":
            frame = history_frame(store, args)
            if args.json or frame.empty:
                _print_frame(frame, as_json=args.json)
            else:
                from nsight_lab.cli.history import history_text  # noqa: PLC0415  (pandas)

                print(history_text(frame, _width()))  # noqa: T201
            return 0
        if args.command in {"show", "explain"}:
            return (_show if args.command == "show" else _explain)(store, args)
        _export(_export_table(store, args), args)  # the runs are read as written
    return 0


def _export_table(store: RunStore, args: argparse.Namespace) -> _Table:
    """``export``: what to write: each session's results, or every run streamed.

    The runs (the default) are read a page at a time while they are written
    (:class:`~nsight_lab.results.export.RunsTable`: bounded memory at any size).
    """
    import pandas as pd  # noqa: PLC0415  (pandas: only the store's commands)

    from nsight_lab.results.export import RunsTable  # noqa: PLC0415  (pandas)
    from nsight_lab.results.stored import session_results  # noqa: PLC0415  (pandas)

    if args.what == "results":
        frames = [session_results(store, sid) for sid in args.session_ids]
        return pd.concat(frames, ignore_index=True)
    return RunsTable(store, args.session_ids)


def _to_csv(table: _Table, target: str | TextIO, *, terminal: bool = False) -> None:
    """Write ``table`` as CSV: a frame at once, a :class:`RunsTable` chunk by chunk."""
    import pandas as pd  # noqa: PLC0415  (pandas: only the store's commands)

    if isinstance(table, pd.DataFrame):
        frame_to_csv(frame_for_terminal(table) if terminal else table, target)
    else:
        table.to_csv(target, terminal=terminal)


def _to_parquet(table: _Table, target: str | BinaryIO) -> None:
    """Write ``table`` as Parquet: a frame at once, a :class:`RunsTable` by chunks."""
    import pandas as pd  # noqa: PLC0415  (pandas: only the store's commands)

    if isinstance(table, pd.DataFrame):
        table.to_parquet(target, index=False)
    else:
        table.to_parquet(target)


def _export(table: _Table, args: argparse.Namespace) -> None:
    """``export``: write ``table`` where ``-o`` says (default stdout).

    Only regular files are written, stdout in place (``-o -``, ``/dev/stdout``):
    :mod:`nsight_lab.cli.output` says why and refuses the rest before any work.

    Raises:
        CommandError: Parquet without ``-o``, or to a terminal.
        OutputError: ``-o`` names what must not be replaced, or a missing folder.
    """
    if args.format == "parquet" and args.output is None:
        msg = "export --format parquet needs -o FILE (binary; -o - for a pipe)"
        raise CommandError(msg)
    target = resolve_target(STDOUT if args.output is None else args.output)
    if target.path is not None:
        if args.format == "parquet":
            write_file(target, lambda tmp: _to_parquet(table, tmp))
        else:
            write_file(target, lambda tmp: _to_csv(table, tmp))
        _say_written(target.path, args)
        return
    if args.format == "parquet":
        if sys.stdout.isatty():
            msg = "export --format parquet is binary: give -o FILE, not a terminal"
            raise CommandError(msg)
        sys.stdout.flush()
        _to_parquet(table, sys.stdout.buffer)
        return
    # shown, not saved: the terminal must not run it
    _to_csv(table, sys.stdout, terminal=sys.stdout.isatty())


def _say_written(path: Path, args: argparse.Namespace) -> None:
    """Success says what was written, on stderr (stdout stays the data's)."""
    sessions = ", ".join(str(s) for s in args.session_ids)
    size = format_quantity(path.stat().st_size, "bytes")
    what = "results" if args.what == "results" else "runs"
    plural = "s" if len(args.session_ids) > 1 else ""
    line = f"wrote the {what} of session{plural} {sessions} to {path} ({size})"
    print(for_terminal(line), file=sys.stderr)  # noqa: T201


def _baselines(store: RunStore, args: argparse.Namespace) -> int:
    """``baseline set/list`` and ``compare``; the exit status."""
    if args.command == "baseline":
        if args.verb == "set":
            store.check_integrity()  # never write into a damaged file (issue 29)
            found = set_baseline(store, args.name, args.session)
            print(for_terminal(f"baseline {found.name} is session {found.session_id}"))  # noqa: T201
            return 0
        from nsight_lab.cli.history import baselines_frame  # noqa: PLC0415  (pandas)

        if args.verb == "show":
            from nsight_lab.cli.reports import baseline_results  # noqa: PLC0415  (pandas)

            header, frame = baseline_results(store, args.name, "baseline show")
            print(for_terminal(header))  # noqa: T201
            _print_frame(frame, as_json=False)
            return 0
        _print_frame(baselines_frame(store), as_json=args.json)
        return 0
    a = resolve(store, args.a, "compare A")
    b = resolve(store, args.b, "compare B")
    named = None if args.a.strip().isdigit() else args.a.strip()
    threshold = DEFAULT_THRESHOLD if args.threshold is None else args.threshold / 100
    table = verdict_table(store, a, b, baseline=named, threshold=threshold)
    if args.json:
        # ensure_ascii: every control, bidi and non-ASCII character is a \u escape.
        print(json.dumps(table.to_json(), indent=1, ensure_ascii=True))  # noqa: T201
    else:
        text = verdict_text(table.to_json(), width=_width(), show_all=args.all)
        for line in text.splitlines():
            print(for_terminal(line))  # noqa: T201
    if args.fail_on_regression and (
        table.regression or (args.strict and table.inconclusive)
    ):
        return EXIT_REGRESSION
    return 0


def _width() -> int:
    """The terminal's width in columns (``COLUMNS``, else 80 when not a terminal)."""
    return shutil.get_terminal_size().columns


def _error(message: str) -> int:
    """Print ``message`` as one terminal-safe line on stderr; return status 2."""
    line = for_terminal(" ".join(message.split()))
    if len(line) > MAX_ERROR_CHARS:
        line = line[: MAX_ERROR_CHARS - 3] + "..."
    with contextlib.suppress(OSError):  # stderr gone too: the status still says it
        print(f"nsight-lab: {line}", file=sys.stderr)  # noqa: T201
    return EXIT_USAGE


def _stdout_gone() -> int:
    """The reader closed stdout: send what is left to /dev/null and exit quietly.

    Without this, Python's final flush of ``sys.stdout`` would print a second
    ``BrokenPipeError`` at exit.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass  # stdout has no file descriptor (captured): nothing will flush there
    finally:
        os.close(devnull)
    return EXIT_BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nsight-lab`` command."""
    try:
        status = run(sys.argv[1:] if argv is None else argv)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
    except BrokenPipeError:
        return _stdout_gone()
    except ImportError as exc:
        return _error(f"{exc}; install it with: pip install pyarrow")
    except (NsightLabError, ValueError, OverflowError, OSError) as exc:
        # NsightLabError: ours, already one line. ValueError/OverflowError: a value
        # the store rejected; OSError: a file that could not be written or read.
        text = (
            str(exc)
            if isinstance(exc, NsightLabError)
            else f"{type(exc).__name__}: {exc}"
        )
        return _error(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
