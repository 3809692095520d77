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

import argparse
import contextlib
import json
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from nsight_lab.errors import NsightLabError, OptionError
from nsight_lab.options import shown, whole_number
from nsight_lab.store.run_store import SESSION_FILTERS
from nsight_lab.text.safe import for_terminal, frame_for_terminal, frame_to_csv

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import pandas as pd

    from nsight_lab.store.run_store import RunStore

EXIT_USAGE = 2
EXIT_REGRESSION = 1
"""``compare --fail-on-regression``: some timed row is slower (see ``compare.py``)."""
EXIT_BROKEN_PIPE = 128 + 13
"""Status when the reader closed the pipe (as a process killed by ``SIGPIPE``)."""
MAX_ERROR_CHARS = 300
_MAX_ID = 2**63 - 1
"""Largest id or count the store can hold (SQLite's INTEGER)."""
_ECHO_CHARS = 40


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors raised as one-line :class:`OptionError` s."""

    def error(self, message: str) -> NoReturn:
        """Raise ``message`` (argparse would print usage and exit).

        Raises:
            OptionError: Always; :func:`main` prints it as one line.
        """
        command = self.prog.removeprefix("nsight-lab").strip()
        where = f"{command}: " if command else ""
        msg = f"{where}{message} (see {self.prog} --help)"
        raise OptionError(msg)


def _whole(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number in ``[minimum, 2**63 - 1]``."""

    def parse(text: str) -> int:
        value = whole_number(text, minimum, _MAX_ID)
        if value is not None:
            return value
        got = shown(text, _ECHO_CHARS)
        msg = f"expected a whole number from {minimum} to {_MAX_ID}, got {got}"
        raise argparse.ArgumentTypeError(msg)

    return parse


FILTERS = SESSION_FILTERS
"""``history`` filters, passed to ``RunStore.list_sessions`` as they are."""


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="nsight-lab",
        description="GPU profiling in the notebook: check the stack, read the store.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    doctor = sub.add_parser("doctor", help="check the GPU stack and say what to fix")
    doctor.add_argument("--json", action="store_true", help="print JSON")

    history = sub.add_parser("history", help="list profile sessions, newest first")
    history.add_argument("--limit", type=_whole(0), default=20)
    history.add_argument("--offset", type=_whole(0), default=0)
    for name in FILTERS:
        history.add_argument(f"--{name}")
    history.add_argument("--json", action="store_true", help="print JSON")

    show = sub.add_parser("show", help="the results table of one session")
    show.add_argument("session_id", type=_whole(1))
    show.add_argument(
        "--runs", action="store_true", help="every run instead of the summary"
    )
    show.add_argument(
        "--wide",
        action="store_true",
        help="every column and every counter, whatever the terminal's width",
    )
    show.add_argument(
        "--json", action="store_true", help="print the results DataFrame as JSON"
    )

    export = sub.add_parser(
        "export", help="write sessions' runs (or results) to a file"
    )
    export.add_argument("session_ids", type=_whole(1), nargs="+")
    export.add_argument("--format", choices=("csv", "parquet"), default="csv")
    export.add_argument("--what", choices=("runs", "results"), default="runs")
    export.add_argument(
        "-o", "--output", type=Path, help="file to write (default: stdout for csv)"
    )

    baseline = sub.add_parser("baseline", help="name sessions to compare against")
    verbs = baseline.add_subparsers(dest="verb", required=True)
    setter = verbs.add_parser(
        "set", help="name a session (default: the latest completed one)"
    )
    setter.add_argument("name")
    setter.add_argument("session", nargs="?", help="a session id or baseline name")
    lister = verbs.add_parser("list", help="every baseline and its session")
    lister.add_argument("--json", action="store_true", help="print JSON")

    compare = sub.add_parser(
        "compare", help="session B against A: ratios, intervals and verdicts"
    )
    compare.add_argument("a", help="the baseline: a session id or baseline name")
    compare.add_argument("b", help="the candidate: a session id or baseline name")
    compare.add_argument(
        "--threshold",
        type=_percent,
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
    compare.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _file_mode(path: Path) -> int:
    """The mode ``open(path, "w")`` leaves ``path`` with (see _write_atomically)."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        umask = os.umask(0o022)  # read it: the only way; set back at once
        os.umask(umask)
        return 0o666 & ~umask


def _percent(text: str) -> float:
    """An argparse type: a percentage (``--threshold``), returned as given."""
    from nsight_lab.analysis.baselines import MAX_THRESHOLD_PCT

    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 <= value <= MAX_THRESHOLD_PCT):
        got = shown(text, _ECHO_CHARS)
        msg = f"expected a percentage from 0 to {MAX_THRESHOLD_PCT:g}, got {got}"
        raise argparse.ArgumentTypeError(msg)
    return value


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
    from nsight_lab.cli.history import runs_frame, session_results
    from nsight_lab.views.summary import session_text

    session_id = args.session_id
    if args.runs:
        _print_frame(runs_frame(store, [session_id]), as_json=args.json)
        return 0
    if args.json:
        _print_frame(session_results(store, session_id), as_json=True)
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
    args = _parser().parse_args(argv)
    if args.command == "doctor":
        from nsight_lab.cli.doctor import checks_to_json, format_checks, run_checks

        checks = run_checks()
        text = (
            json.dumps(checks_to_json(checks), indent=1)
            if args.json
            else format_checks(checks)
        )
        print(text)  # noqa: T201
        return 0

    from nsight_lab.cli.history import runs_frame, session_results, sessions_frame
    from nsight_lab.store.run_store import RunStore

    with RunStore() as store:
        if args.command in {"baseline", "compare"}:
            return _baselines(store, args)
        if args.command == "history":
            store.mark_interrupted()
            filters = {k: getattr(args, k) for k in FILTERS}
            sessions = store.list_sessions(
                limit=args.limit, offset=args.offset, **filters
            )
            _print_frame(sessions_frame(store, sessions), as_json=args.json)
            return 0
        if args.command == "show":
            return _show(store, args)
        # export
        frames = (
            [session_results(store, sid) for sid in args.session_ids]
            if args.what == "results"
            else [runs_frame(store, args.session_ids)]
        )
    import pandas as pd

    frame = pd.concat(frames, ignore_index=True)
    if args.format == "parquet":
        if args.output is None:
            msg = "export --format parquet needs -o FILE (parquet is binary)"
            raise OptionError(msg)
        _write_atomically(args.output, lambda tmp: frame.to_parquet(tmp, index=False))
    elif args.output is None:
        if sys.stdout.isatty():  # shown, not saved: the terminal must not run it
            frame = frame_for_terminal(frame)
        frame_to_csv(frame, sys.stdout)
    else:
        _write_atomically(args.output, lambda tmp: frame_to_csv(frame, tmp))
    return 0


def _baselines(store: RunStore, args: argparse.Namespace) -> int:
    """``baseline set/list`` and ``compare``; the exit status."""
    from nsight_lab.analysis.baselines import resolve, set_baseline, verdict_table

    if args.command == "baseline":
        if args.verb == "set":
            found = set_baseline(store, args.name, args.session)
            print(for_terminal(f"baseline {found.name} is session {found.session_id}"))  # noqa: T201
            return 0
        from nsight_lab.cli.history import baselines_frame

        _print_frame(baselines_frame(store), as_json=args.json)
        return 0
    a = resolve(store, args.a, "compare A")
    b = resolve(store, args.b, "compare B")
    named = None if args.a.strip().isdigit() else args.a.strip()
    from nsight_lab.analysis.compare import DEFAULT_THRESHOLD

    threshold = DEFAULT_THRESHOLD if args.threshold is None else args.threshold / 100
    table = verdict_table(store, a, b, baseline=named, threshold=threshold)
    if args.json:
        # ensure_ascii: every control, bidi and non-ASCII character is a \u escape.
        print(json.dumps(table.to_json(), indent=1, ensure_ascii=True))  # noqa: T201
    else:
        from nsight_lab.views.verdicts import verdict_text

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
    import shutil

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
