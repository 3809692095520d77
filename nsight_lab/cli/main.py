"""The ``nsight-lab`` command: doctor, history, show, export, baseline and compare.

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
import stat
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from nsight_lab.analysis.baselines import resolve, set_baseline, verdict_table
from nsight_lab.analysis.compare import DEFAULT_THRESHOLD
from nsight_lab.cli.doctor import checks_to_json, format_checks, run_checks
from nsight_lab.cli.parser import EXIT_REGRESSION, HelpShown, parse_command
from nsight_lab.errors import CommandError, NsightLabError
from nsight_lab.store.run_store import RunStore
from nsight_lab.text.safe import for_terminal, frame_for_terminal, frame_to_csv
from nsight_lab.views.verdicts import verdict_text

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence

    import pandas as pd


EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 128 + 13
"""Status when the reader closed the pipe (as a process killed by ``SIGPIPE``)."""
MAX_ERROR_CHARS = 300


def _file_mode(path: Path) -> int:
    """The mode ``open(path, "w")`` leaves ``path`` with (see _write_atomically)."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        umask = os.umask(0o022)  # read it: the only way; set back at once
        os.umask(umask)
        return 0o666 & ~umask


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

    The tables are the summary every view shows (:mod:`nsight_lab.views.summary`),
    fitted to the terminal's width unless ``--wide``; ``--runs`` prints every run,
    ``--json`` the results DataFrame.
    """
    from nsight_lab.results.stored import runs_frame, session_results  # noqa: PLC0415  (pandas)
    from nsight_lab.views.summary import session_text  # noqa: PLC0415  (pandas)

    session_id = args.session_id
    if args.runs:
        _print_frame(runs_frame(store, [session_id]), as_json=args.json)
        return 0
    if args.json or args.frame:
        _print_frame(session_results(store, session_id), as_json=args.json)
        return 0
    print(session_text(store, session_id, width=_width(), wide=args.wide))  # noqa: T201
    return 0


def _write_atomically(path: Path, write: Callable[[str], object]) -> None:
    """Write via a temporary file in the same directory, then rename it into place.

    The file gets the mode a plain ``open(path, "w")`` gives: 0666 less the umask for
    a new file, the old file's mode when it replaces one (``mkstemp``'s 0600 made an
    export unreadable to the group it was shared with).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        Path(tmp).chmod(_file_mode(path))
        write(tmp)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
        checks = run_checks()
        text = (
            json.dumps(checks_to_json(checks), indent=1)
            if args.json
            else format_checks(checks)
        )
        print(text)  # noqa: T201
        return 0
    from nsight_lab.cli import reports  # noqa: PLC0415  (pandas: the store's commands)

    if args.command == "peaks":
        _print_frame(
            reports.peaks_frame(cpu=args.cpu, refresh=args.refresh), as_json=False
        )
        return 0
    with RunStore() as store:
        if args.command in {"baseline", "compare"}:
            return _baselines(store, args)
        if args.command == "history":
            frame = reports.history_frame(store, args)
            if args.json or frame.empty:
                _print_frame(frame, as_json=args.json)
            else:
                from nsight_lab.cli.history import history_text  # noqa: PLC0415  (pandas)

                print(history_text(frame, _width()))  # noqa: T201
            return 0
        if args.command == "show":
            return _show(store, args)
        frames = _export_frames(store, args)
    _export(frames, args)
    return 0


def _export_frames(store: RunStore, args: argparse.Namespace) -> list[pd.DataFrame]:
    """``export``: the frames to write (each session's results, or all runs)."""
    from nsight_lab.results.stored import runs_frame, session_results  # noqa: PLC0415  (pandas)

    if args.what == "results":
        return [session_results(store, sid) for sid in args.session_ids]
    return [runs_frame(store, args.session_ids)]


def _export(frames: list[pd.DataFrame], args: argparse.Namespace) -> None:
    """``export``: write ``frames`` as one table where ``-o`` says (CSV: stdout).

    Raises:
        CommandError: Parquet without ``-o``.
    """
    import pandas as pd  # noqa: PLC0415  (pandas: only the store's commands)

    frame = pd.concat(frames, ignore_index=True)
    output = None if args.output is None else Path(args.output)
    if args.format == "parquet":
        if output is None:
            msg = "export --format parquet needs -o FILE (parquet is binary)"
            raise CommandError(msg)
        _write_atomically(output, lambda tmp: frame.to_parquet(tmp, index=False))
    elif output is None:
        if sys.stdout.isatty():  # shown, not saved: the terminal must not run it
            frame = frame_for_terminal(frame)
        frame_to_csv(frame, sys.stdout)
    else:
        _write_atomically(output, lambda tmp: frame_to_csv(frame, tmp))


def _baselines(store: RunStore, args: argparse.Namespace) -> int:
    """``baseline set/list`` and ``compare``; the exit status."""
    if args.command == "baseline":
        if args.verb == "set":
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
