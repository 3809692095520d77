r"""Make stored text safe where it is shown: terminals and spreadsheets.

Annotation names, labels, notebook paths and device names come from users and are
stored as written. Two places would act on them instead of showing them:

- a terminal runs escape sequences (``ESC[31m``, C1 ``CSI``, OSC hyperlinks) and bidi
  overrides reorder what is shown: :func:`for_terminal` escapes them visibly;
- a spreadsheet opening a CSV runs a cell that starts with ``=``, ``+``, ``-``, ``@``,
  a tab or a carriage return as a formula: :func:`csv_cell` prefixes such a text cell
  with ``'`` as OWASP advises ("CSV injection"). Numbers, negative ones included,
  stay numbers. A cell starts not only where a value starts: an importer that splits
  at a bare ``\r`` (pandas, Excel), at another line break (``\v``, ``\f``, ``\x1c``-
  ``\x1e``, ``\x85``, U+2028/9: ``str.splitlines``) or at a field separator other
  than ours (``;`` in many locales, a tab) starts one after it, so every piece of a
  value after such a break is neutralised the same way (:data:`CSV_BREAKS`).

Every CSV nsight-lab writes goes through :func:`frame_to_csv`, which also ends rows
with ``\r\n`` (RFC 4180): the csv writer then quotes every value holding a ``\r`` or
``\n``, so no row break inside a value survives a reader that follows the format.
"""

from __future__ import annotations

import numbers
import re
import unicodedata
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import TextIO

    import pandas as pd

__all__ = [
    "BIDI_CONTROLS",
    "CSV_BREAKS",
    "CSV_LINE_END",
    "FORMULA_PREFIXES",
    "csv_cell",
    "csv_text",
    "for_terminal",
    "frame_for_csv",
    "frame_for_terminal",
    "frame_to_csv",
    "unsafe_character",
]

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
"""Characters that make a spreadsheet read a cell as a formula (OWASP)."""
CSV_BREAKS = "\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029,;\t"
"""Where an importer may start a new cell inside a value: the line breaks of
``str.splitlines`` and the field separators spreadsheets use (``,``, ``;``, tab)."""
CSV_LINE_END = "\r\n"
"""The row terminator of every CSV written (RFC 4180)."""
_BREAK = re.compile(f"([{re.escape(CSV_BREAKS)}])")

BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
"""Bidi marks, embeddings, overrides and isolates: they reorder the text around them."""
_SEPARATORS = frozenset("\u2028\u2029")
_LEADING = (
    "".join(chr(c) for c in range(0x3001) if chr(c).isspace() and chr(c) not in "\t\r")
    + '"\u200b\ufeff'
)
"""What a cell may start with before a formula: spaces (every Unicode one), quotes,
zero-width spaces. Tabs and carriage returns are formula prefixes themselves."""
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def _is_control(char: str) -> bool:
    """A C0/C1 control, DEL, a lone surrogate or a bidi control."""
    return char in BIDI_CONTROLS or unicodedata.category(char) in {"Cc", "Cs"}


def unsafe_character(text: str) -> str | None:
    """Return the first control character, lone surrogate or bidi control in ``text``.

    ``None`` when there is none. Tabs and newlines count (they are controls).
    """
    return next((char for char in text if _is_control(char)), None)


def _unsafe_for_terminal(char: str) -> bool:
    return char in _SEPARATORS or _is_control(char)


def for_terminal(text: str) -> str:
    r"""Return ``text`` with control characters shown as escapes (``\x1b``, ``\n``).

    C0 and C1 controls (ESC, CSI, BEL, newlines...), DEL, lone surrogates, bidi
    overrides and line/paragraph separators are replaced by their Python escape;
    everything else, accented letters and CJK included, is kept.
    """
    if text.isprintable() and not any(c in BIDI_CONTROLS for c in text):
        return text
    return "".join(repr(c)[1:-1] if _unsafe_for_terminal(c) else c for c in text)


def _formula_start(piece: str) -> bool:
    """Whether a cell starting with ``piece`` would be read as a formula.

    Leading spaces and quotes are skipped (``"=1"`` split out of a value is a quoted
    formula to an importer), Unicode ones too (a no-break or ideographic space, a
    zero-width space or BOM: spreadsheets trim them as well); a plain number
    (``-1.5``) is not a formula.
    """
    body = piece.lstrip(_LEADING)
    return body.startswith(FORMULA_PREFIXES) and not _NUMBER.fullmatch(
        body.rstrip(' "')
    )


def csv_text(text: str) -> str:
    r"""``text`` with a ``'`` before every piece a spreadsheet would run as a formula.

    The pieces are the value's start and what follows each :data:`CSV_BREAKS`
    character; a value starting with a tab or a carriage return gets a ``'`` too.
    Nothing else changes (``a=1``, ``-1.5``, ``x\ny`` stay as they are).
    """
    parts = _BREAK.split(text)
    if len(parts) == 1:  # the common case: no break inside
        return "'" + text if _formula_start(text) else text
    out: list[str] = []
    for i, part in enumerate(parts):
        if i % 2 == 0 and (
            _formula_start(part) or (i == 0 and text.startswith(FORMULA_PREFIXES))
        ):
            out.append("'")
        out.append(part)
    return "".join(out)


def csv_cell(value: object) -> object:
    """Return a text cell neutralised for spreadsheets; numbers and None unchanged.

    Text gets :func:`csv_text`. Any other object (a config's list, a dict) is written
    as its ``str``, so that text is neutralised the same way.
    """
    if isinstance(value, str):
        return csv_text(value)
    if value is None or isinstance(value, numbers.Number):
        return value
    import pandas as pd  # noqa: PLC0415  (pandas: only for a frame)

    if value is pd.NA or value is pd.NaT or isinstance(value, pd.Timestamp):
        return value
    return csv_text(str(value))


def _map_text(frame: pd.DataFrame, convert: Callable[[object], object]) -> pd.DataFrame:
    """Apply ``convert`` to every text column's cells and to the column names."""
    import pandas as pd  # noqa: PLC0415  (pandas: only for a frame)

    out: pd.DataFrame = frame.copy()
    for column in out.columns:
        series = out[column]
        if pd.api.types.is_object_dtype(series) or pd.api.types.is_string_dtype(series):
            out[column] = series.map(convert)
    out.columns = [convert(c) if isinstance(c, str) else c for c in out.columns]
    return out


def frame_for_terminal(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text (cells and column names) is terminal-safe."""

    def convert(value: object) -> object:
        return for_terminal(value) if isinstance(value, str) else value

    return _map_text(frame, convert)


def frame_for_csv(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells and column names cannot run as formulas.

    Every column that can hold text is mapped (object, string and categorical ones:
    a category's text is written as it is); numeric, boolean and datetime columns
    cannot, and stay as they are.
    """
    import pandas as pd  # noqa: PLC0415  (pandas: only for a frame)

    types = pd.api.types
    out: pd.DataFrame = frame.copy()
    for i in range(out.shape[1]):
        series = out.iloc[:, i]
        dtype = series.dtype
        if (
            types.is_numeric_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype)
        ) or types.is_datetime64_any_dtype(dtype):
            continue  # bool is numeric here; timedelta too
        out.isetitem(i, series.astype(object).map(csv_cell).to_numpy())
    out.columns = [csv_cell(c) for c in out.columns]
    return out


@overload
def frame_to_csv(frame: pd.DataFrame, target: None = None) -> str: ...
@overload
def frame_to_csv(frame: pd.DataFrame, target: str | Path | TextIO) -> None: ...
def frame_to_csv(
    frame: pd.DataFrame, target: str | Path | TextIO | None = None
) -> str | None:
    r"""Write ``frame`` as CSV (no index), formulas neutralised: the one CSV writer.

    Rows end with :data:`CSV_LINE_END`, so the csv writer quotes every value that
    holds a ``\r`` or ``\n`` (with ``\n`` alone it leaves a bare ``\r`` unquoted,
    and a reader starts a new row there). A text ``target`` should be opened with
    ``newline=""``, as the csv module asks.

    Returns:
        The CSV text when ``target`` is ``None``, else ``None``.
    """
    safe = frame_for_csv(frame)
    if target is None:
        text: str = safe.to_csv(index=False, lineterminator=CSV_LINE_END)
        return text
    safe.to_csv(target, index=False, lineterminator=CSV_LINE_END)
    return None
