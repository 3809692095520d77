"""``python -m nsight_lab.options [--markdown]``: print the help or the README table."""

import sys

from nsight_lab.options.help import help_text, options_markdown


def main(argv: list[str] | None = None) -> int:
    """Print the help (or with ``--markdown`` the README table); the exit status."""
    args = sys.argv[1:] if argv is None else argv
    print(options_markdown() if args == ["--markdown"] else help_text())  # noqa: T201
    return 0 if args in ([], ["--markdown"], ["--help"]) else 2


if __name__ == "__main__":
    sys.exit(main())
