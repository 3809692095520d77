"""The ``%%nsight`` option line to :class:`~nsight_lab.options.profile.ProfileOptions`.

The line is split as a shell would, into (option, value) pairs (unknown options get
the closest known one; a switch given a value, a missing value and unsafe characters
are refused before any value is read), each value read by its option's reader, then
the checks across options. Every error is one line.
"""

from __future__ import annotations

import difflib
import shlex
from typing import TYPE_CHECKING

from nsight_lab.errors import OptionError
from nsight_lab.options.profile import DEFAULT_MAX_TIME_S, ProfileOptions
from nsight_lab.options.table import BY_FLAG, KNOWN_OPTIONS
from nsight_lab.options.values import MAX_LINE_CHARS, check_text, shown

if TYPE_CHECKING:
    from nsight_lab.contract.records import JsonScalar


def _words(line: str) -> list[str]:
    """Split the line as a shell would (quotes group words)."""
    if len(line) > MAX_LINE_CHARS:
        msg = (
            f"%%nsight: the option line is {len(line):,} characters long; "
            f"give at most {MAX_LINE_CHARS:,}"
        )
        raise OptionError(msg)
    try:
        return shlex.split(line, posix=True)
    except ValueError as exc:
        quoted = shown(line.strip())
        msg = f"options could not be read ({exc}); check the quotes in {quoted}"
        raise OptionError(msg) from exc


def _tokens(line: str) -> list[tuple[str, str | None]]:
    """Split the line into (option, value) pairs; values may follow ``=`` or a space.

    A switch's value is ``None``. Unknown options, a switch given a value, a missing
    value and unsafe characters in a value are refused here, before any value is read.
    """
    words = _words(line)
    pairs: list[tuple[str, str | None]] = []
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("--") or word == "--":
            msg = (
                f"unexpected argument {shown(word)}; options start with '--' "
                "(see %nsight --help)"
            )
            raise OptionError(msg)
        name, eq, inline = word.partition("=")
        option = BY_FLAG.get(name)
        if option is None:
            close = difflib.get_close_matches(name[:40], KNOWN_OPTIONS, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            msg = f"unknown option {shown(name)}; {hint}see %nsight --help for options"
            raise OptionError(msg)
        if not option.takes_value:
            if eq:
                msg = f"{name} takes no value, got {shown(inline)}"
                raise OptionError(msg)
            pairs.append((name, None))
            i += 1
            continue
        if eq:
            value: str | None = inline
            i += 1
        elif i + 1 < len(words) and not words[i + 1].startswith("--"):
            value = words[i + 1]
            i += 2
        else:
            value = None
            i += 1
        if value is None or value == "":
            msg = f"{name} needs a value (see %nsight --help)"
            raise OptionError(msg)
        pairs.append((name, check_text(name, value)))
    return pairs


def parse_options(line: str) -> ProfileOptions:
    """Parse a ``%%nsight`` option line, as :data:`OPTIONS` declares the options.

    Args:
        line: The text after ``%%nsight`` on the cell's first line.

    Returns:
        The validated options; ``--configs`` binds ``n`` as the first parameter.

    Raises:
        OptionError: An option is unknown, repeated, missing its value or malformed,
            or the grid is too large; the message is one line naming it.
    """
    seen: set[str] = set()
    params: list[tuple[str, tuple[JsonScalar, ...]]] = []
    kw: dict[str, object] = {}
    for name, raw in _tokens(line):
        option = BY_FLAG[name]
        if name in seen and not option.repeatable:
            msg = f"{name} was given twice; give it once"
            raise OptionError(msg)
        seen.add(name)
        value = True if raw is None else option.parse(raw)
        if option.field != "params":
            kw[option.field] = value
        elif name == "--configs":
            params.insert(0, value)  # type: ignore[arg-type]
        else:
            params.append(value)  # type: ignore[arg-type]
    names = [p for p, _ in params]
    dup = next((p for p in names if names.count(p) > 1), None)
    if dup is not None:
        how = "--configs binds 'n'; " if dup == "n" and "--configs" in seen else ""
        if not line.isascii():  # fullwidth and plain letters: one name to Python
            how += "names are compared as Python reads them (NFKC: '\uff21' is 'A'); "
        msg = f"--param: parameter {dup!r} is given twice; {how}give each name once"
        raise OptionError(msg)
    if "--configs-from" in seen and params:
        other = "--configs" if "--configs" in seen else "--param"
        msg = (
            f"--configs-from gives the configs itself; drop {other} (or list every "
            "config in the variable)"
        )
        raise OptionError(msg)
    if "--thermal-settings" in seen and kw.get("thermal") == "off":
        msg = "--thermal-settings has no effect with --thermal off; drop one of the two"
        raise OptionError(msg)
    if kw.get("target_rsd_pct") is not None and kw.get("max_time_s") is None:
        kw["max_time_s"] = DEFAULT_MAX_TIME_S
    options = ProfileOptions(
        params=tuple(params),
        given=tuple(sorted(seen)),
        **kw,  # type: ignore[arg-type]
    )
    options.check_grid()
    return options
