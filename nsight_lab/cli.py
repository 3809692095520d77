"""The ``nsight-lab`` command: doctor, history, show and export, over the same store.

Errors the user can fix print one line on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from nsight_lab.errors import NsightLabError, OptionError
from nsight_lab.store import SESSION_FILTERS

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import pandas as pd

EXIT_USAGE = 2
FILTERS = SESSION_FILTERS
"""``history`` filters, passed to ``RunStore.list_sessions`` as they are."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nsight-lab",
        description="GPU profiling in the notebook: check the stack, read the store.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    doctor = sub.add_parser("doctor", help="check the GPU stack and say what to fix")
    doctor.add_argument("--json", action="store_true", help="print JSON")

    history = sub.add_parser("history", help="list profile sessions, newest first")
    history.add_argument("--limit", type=int, default=20)
    history.add_argument("--offset", type=int, default=0)
    for name in FILTERS:
        history.add_argument(f"--{name}")
    history.add_argument("--json", action="store_true", help="print JSON")

    show = sub.add_parser("show", help="the results table of one session")
    show.add_argument("session_id", type=int)
    show.add_argument(
        "--runs", action="store_true", help="every run instead of the summary"
    )
    show.add_argument("--json", action="store_true", help="print JSON")

    export = sub.add_parser(
        "export", help="write sessions' runs (or results) to a file"
    )
    export.add_argument("session_ids", type=int, nargs="+")
    export.add_argument("--format", choices=("csv", "parquet"), default="csv")
    export.add_argument("--what", choices=("runs", "results"), default="runs")
    export.add_argument(
        "-o", "--output", type=Path, help="file to write (default: stdout for csv)"
    )
    return parser


def _print_frame(frame: pd.DataFrame, *, as_json: bool) -> None:
    if as_json:
        print(frame.to_json(orient="records", indent=1))  # noqa: T201
    elif frame.empty:
        print("(nothing)")  # noqa: T201
    else:
        print(frame.to_string(index=False))  # noqa: T201


def _write_atomically(path: Path, write: Callable[[str], object]) -> None:
    """Write via a temporary file in the same directory, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
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
        from nsight_lab.doctor import checks_to_json, format_checks, run_checks

        checks = run_checks()
        text = (
            json.dumps(checks_to_json(checks), indent=1)
            if args.json
            else format_checks(checks)
        )
        print(text)  # noqa: T201
        return 0

    from nsight_lab.history import runs_frame, session_results, sessions_frame
    from nsight_lab.store import RunStore

    with RunStore() as store:
        if args.command == "history":
            store.mark_interrupted()
            filters = {k: getattr(args, k) for k in FILTERS}
            sessions = store.list_sessions(
                limit=args.limit, offset=args.offset, **filters
            )
            _print_frame(sessions_frame(store, sessions), as_json=args.json)
            return 0
        if args.command == "show":
            frame = (
                runs_frame(store, [args.session_id])
                if args.runs
                else session_results(store, args.session_id)
            )
            _print_frame(frame, as_json=args.json)
            return 0
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
        frame.to_csv(sys.stdout, index=False)
    else:
        _write_atomically(args.output, lambda tmp: frame.to_csv(tmp, index=False))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nsight-lab`` command."""
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except NsightLabError as exc:
        print(f"nsight-lab: {exc}", file=sys.stderr)  # noqa: T201
        return EXIT_USAGE
    except ImportError as exc:
        hint = "install it with: pip install pyarrow"
        print(f"nsight-lab: {exc}; {hint}", file=sys.stderr)  # noqa: T201
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
