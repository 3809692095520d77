"""The readers of option values: each raw text to its value, or a one-line error.

Every reader takes ``(option, raw)`` and either returns the value or raises
:class:`~nsight_lab.errors.OptionError` naming the option, quoting the bad value (at
most :data:`ECHO_CHARS` characters, :func:`shown`) and saying what is accepted:
integers (digits counted before ``int()``), numbers, config value lists, Python
names, metric names, kernel names, thermal settings, baseline names. The limits they
enforce are here too.
"""

from __future__ import annotations

import keyword
import math
import re
import unicodedata
from typing import TYPE_CHECKING, get_args

from nsight_lab.contract.records import TIME_METRIC, JsonScalar
from nsight_lab.errors import OptionError
from nsight_lab.options.names import reserved_name
from nsight_lab.options.profile import CombineMode
from nsight_lab.text.numbers import whole_number
from nsight_lab.text.safe import unsafe_character

if TYPE_CHECKING:
    from collections.abc import Callable

BUILTIN_DERIVED = ("tflops", "gbps")
"""Derived metrics nsight-lab computes itself.

Any other ``--derive`` name is a function.
"""


MAX_RUNS = 1_000_000
MAX_RANKS = 1_024
"""Largest ``--ranks``: more processes than this is no notebook's profile."""


MAX_LINE_CHARS = 65_536
"""Longest option line read (longer lines are refused before they are split)."""
MAX_NAME_CHARS = 100
"""Longest parameter, ``--out`` or ``--derive`` name."""
MAX_LABEL_CHARS = 1_000
"""Longest ``--name`` label or ``--normalize-against`` annotation name."""
ECHO_CHARS = 80
"""How much of a bad value an error message quotes."""
_INT_DIGITS = 19
"""More digits than this are beyond a 64-bit integer: refused before ``int()``."""
_INT64 = 2**63


_METRIC_RE = re.compile(
    r"^[A-Za-z_][A-Za-z0-9_]*(?:__[A-Za-z0-9_]+)*(?:\.[A-Za-z0-9_]+)*$"
)


def shown(raw: str, limit: int = ECHO_CHARS) -> str:
    """Quote ``raw`` for an error message: ``repr``, cut to ``limit`` characters.

    ``repr`` escapes control characters and lone surrogates, so the quote is always
    printable; a longer value keeps its start and says how long it was.
    """
    if len(raw) <= limit:
        return repr(raw)
    return f"{raw[:limit]!r}... ({len(raw):,} characters)"


BYTE_ORDER_MARK = "\ufeff"
"""U+FEFF: invisible where a value is shown, it makes ``1`` and ``\ufeff1`` differ."""


def check_text(option: str, raw: str) -> str:
    """``raw`` if it holds no control, lone surrogate, bidi control or BOM.

    A lone surrogate cannot be stored or exported as UTF-8; the others change what
    a value means while it looks the same (a label with a BOM pasted from a file).

    Raises:
        OptionError: It does (names the character).
    """
    if BYTE_ORDER_MARK in raw:
        msg = (
            f"{option}: the value {shown(raw)} contains a byte-order mark (U+FEFF), "
            "invisible where it is shown; remove it"
        )
        raise OptionError(msg)
    char = unsafe_character(raw)
    if char is not None:
        msg = (
            f"{option}: the value {shown(raw)} contains the character "
            f"U+{ord(char):04X} (a control character, lone surrogate or bidi "
            "override); remove it"
        )
        raise OptionError(msg)
    return raw


def choice(option: str, raw: str, allowed: tuple[str, ...]) -> str:
    """``raw`` if it is one of ``allowed``.

    Raises:
        OptionError: It is not (lists them).
    """
    for value in allowed:
        if raw == value:
            return value
    expected = ", ".join(repr(a) for a in allowed)
    msg = f"{option}: unknown value {shown(raw)}; expected one of {expected}"
    raise OptionError(msg)


def int_value(minimum: int, maximum: int = MAX_RUNS) -> Callable[[str, str], int]:
    """Reader of an integer in ``[minimum, maximum]``; digits are counted first."""

    def parse(option: str, raw: str) -> int:
        value = whole_number(raw, minimum, maximum)
        if value is None:
            kind = "a positive integer" if minimum >= 1 else "an integer >= 0"
            msg = f"{option}: expected {kind} (at most {maximum:,}), got {shown(raw)}"
            raise OptionError(msg)
        return value

    return parse


def positive_float(upper: float | None = None) -> Callable[[str, str], float]:
    """Reader of a finite number above 0 (and below ``upper`` when given)."""

    def parse(option: str, raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if (
            not math.isfinite(value)
            or value <= 0
            or (upper is not None and value >= upper)
        ):
            bound = f" below {upper:g}" if upper is not None else ""
            msg = f"{option}: expected a positive number{bound}, got {shown(raw)}"
            raise OptionError(msg)
        return value

    return parse


def parse_value(raw: str) -> JsonScalar:
    """Read one config value: an int, a float, true/false/none, else the text itself."""
    text = raw.strip()
    low = text.lower()
    if low in {"true", "false"}:
        return low == "true"
    if low == "none":
        return None
    if len(text) <= _INT_DIGITS + 2:  # longer: not an int (see _value_list)
        try:
            return int(text, 0) if not re.fullmatch(r"0\d+", text) else int(text, 10)
        except ValueError:
            pass
    try:
        value = float(text)
    except ValueError:
        return text
    return value if math.isfinite(value) else text


def _value_list(option: str, raw: str) -> tuple[JsonScalar, ...]:
    check_text(option, raw)
    items = raw.split(",")
    if any(not item.strip() for item in items):
        msg = (
            f"{option}: empty value in {shown(raw)}; "
            "give comma-separated values like 512,1024"
        )
        raise OptionError(msg)
    for item in items:
        text = item.strip().replace("_", "")
        if len(text) > _INT_DIGITS + 2 and re.fullmatch(r"[+-]?[0-9]+", text, re.ASCII):
            msg = (
                f"{option}: the value {shown(item.strip())} is too large; "
                "integers must fit in 64 bits"
            )
            raise OptionError(msg)
    values = tuple(parse_value(item) for item in items)
    for value in values:
        if isinstance(value, int) and not -_INT64 <= value < _INT64:
            msg = (
                f"{option}: the value {shown(str(value))} is too large; "
                "integers must fit in 64 bits"
            )
            raise OptionError(msg)
    seen: set[tuple[str, JsonScalar]] = set()
    for value in values:
        key = _config_key(value)
        if key in seen:
            msg = (
                f"{option}: repeated value in {shown(raw)} ({value!r} is given "
                "twice, as the cell sees it); each value may appear once"
            )
            raise OptionError(msg)
        seen.add(key)
    return values


def _config_key(value: JsonScalar) -> tuple[str, JsonScalar]:
    """What makes two config values the same config for the cell.

    Numbers compare by value (``1`` and ``1.0``, ``0``, ``-0`` and ``-0.0`` compute
    alike, so profiling both measures one config twice); ``true`` is not ``1``, and
    text is compared as written.
    """
    if isinstance(value, bool) or value is None:
        return (type(value).__name__, value)
    if isinstance(value, int | float):
        return ("number", value)  # 1 == 1.0 and -0.0 == 0, with equal hashes
    return ("text", value)


def python_name(raw: str) -> str:
    """``raw`` as Python's parser reads a name: NFKC-normalised (PEP 3131).

    ``n`` typed fullwidth (U+FF4E) binds ``n``, black-letter ``H`` (U+210C) binds
    ``H``: a parameter must be bound and compared under the name the cell's code
    will read, or the cell reads another variable than the one the frame labels.
    """
    return unicodedata.normalize("NFKC", raw)


def _identifier(option: str, raw: str, what: str) -> str:
    """``raw`` as the Python name the cell reads (NFKC), if it is one.

    Raises:
        OptionError: ``raw`` is no identifier, reads as a keyword
            (fullwidth ``if``) or is too long.
    """
    if not raw.isidentifier() or keyword.iskeyword(raw):
        msg = f"{option}: {shown(raw)} is not a valid Python name; give {what}"
        raise OptionError(msg)
    name = python_name(raw)
    if not name.isidentifier() or keyword.iskeyword(name):
        msg = (
            f"{option}: {shown(raw)} reads as {name!r} in Python (NFKC), which is "
            f"not a valid Python name; give {what} in plain letters"
        )
        raise OptionError(msg)
    if len(name) > MAX_NAME_CHARS:
        msg = (
            f"{option}: the name {shown(raw)} is too long; "
            f"give at most {MAX_NAME_CHARS} characters"
        )
        raise OptionError(msg)
    return name


def _binding(option: str, raw: str, what: str) -> str:
    """A name the magic binds in the notebook: also not a builtin or IPython's."""
    name = _identifier(option, raw, what)
    why = reserved_name(name)
    if why is not None:
        msg = (
            f"{option}: {name!r} is {why}; binding it would break later cells, "
            f"choose another name (e.g. {name.strip('_') or 'x'}_value)"
        )
        raise OptionError(msg)
    return name


def _names(option: str, raw: str, check: Callable[[str], str]) -> tuple[str, ...]:
    items = [item.strip() for item in raw.split(",")]
    if any(not item for item in items):
        msg = f"{option}: empty name in {shown(raw)}; give comma-separated names"
        raise OptionError(msg)
    return tuple(check(item) for item in items)


def _metric(raw: str) -> str:
    if not _METRIC_RE.match(raw):
        msg = (
            f"--metrics: {shown(raw)} is not a Nsight Compute metric name "
            "(like dram__bytes_read.sum); list them with: ncu --query-metrics"
        )
        raise OptionError(msg)
    return raw


def _derived(raw: str) -> str:
    """A ``--derive`` name as Python reads it: a built-in one or a function's."""
    if python_name(raw) in BUILTIN_DERIVED:
        return python_name(raw)
    return _identifier(
        "--derive", raw, "tflops, gbps or the name of a function in the notebook"
    )


def label_value(what: str) -> Callable[[str, str], str]:
    """Reader of free text of at most :data:`MAX_LABEL_CHARS` characters."""

    def parse(option: str, raw: str) -> str:
        if len(raw) > MAX_LABEL_CHARS:
            msg = (
                f"{option}: the value {shown(raw)} is too long; "
                f"give {what} of at most {MAX_LABEL_CHARS:,} characters"
            )
            raise OptionError(msg)
        return raw

    return parse


def read_configs(option: str, raw: str) -> tuple[str, tuple[JsonScalar, ...]]:
    """``--configs V1,V2``: the values bound to ``n``."""
    return ("n", _value_list(option, raw))


def read_param(option: str, raw: str) -> tuple[str, tuple[JsonScalar, ...]]:
    """``--param NAME=V1,V2``: the name and its values.

    Raises:
        OptionError: No ``=``, or a bad name or value.
    """
    pname, eq, vals = raw.partition("=")
    if not eq:
        msg = f"{option}: expected NAME=v1,v2,... got {shown(raw)}"
        raise OptionError(msg)
    pname = _binding(option, pname.strip(), "NAME=v1,v2,...")
    return (pname, _value_list(f"{option} {pname}", vals))


def read_metrics(option: str, raw: str) -> tuple[str, ...]:
    """``--metrics A,B``: the duration first, then the names given (once each)."""
    metrics = _names(option, raw, _metric)
    return (TIME_METRIC, *dict.fromkeys(m for m in metrics if m != TIME_METRIC))


def read_derive(option: str, raw: str) -> tuple[str, ...]:
    """``--derive F,G``: the derived metrics, each named once.

    A name given twice would be one column computed twice (or, for two functions
    whose names read alike, one silently replacing the other): refused.

    Raises:
        OptionError: A name is not a Python name, or is given twice.
    """
    names = _names(option, raw, _derived)
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        msg = f"{option}: {dup!r} is given twice in {shown(raw)}; give each name once"
        raise OptionError(msg)
    return names


def read_out(option: str, raw: str) -> str:
    """``--out NAME``: the variable the DataFrame is bound to."""
    return _binding(option, raw, "a variable name for the DataFrame")


def read_combine(option: str, raw: str) -> str:
    """``--combine F``: a built-in fold, or the name of a notebook function.

    Raises:
        OptionError: Not a Python name.
    """
    if raw in get_args(CombineMode):
        return raw
    what = (
        f"one of {', '.join(repr(m) for m in get_args(CombineMode))} or the name of a "
        "function f(x, y) in the notebook"
    )
    return _identifier(option, raw, what)


def read_configs_from(option: str, raw: str) -> str:
    """``--configs-from [NAMES=]VAR``: checked as text (the variable is read later).

    Returned with its names as Python reads them (NFKC), so the configs bind and the
    variable is looked up under those.

    Raises:
        OptionError: A bad name, or one given twice (as Python reads them).
    """
    names, eq, var = raw.rpartition("=")
    var = _identifier(option, var.strip(), "the notebook variable holding the configs")
    if not eq:
        return var
    given = _names(option, names, lambda n: _binding(option, n, "NAME1,NAME2=VAR"))
    dup = next((n for n in given if given.count(n) > 1), None)
    if dup is not None:  # as --param: the last value would silently win
        msg = f"{option}: the name {dup!r} is given twice; give each name once"
        raise OptionError(msg)
    return f"{','.join(given)}={var}"
