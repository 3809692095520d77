"""Make stored text safe where it is shown: terminals and spreadsheets.

Annotation names, labels, notebook paths and device names come from users and are
stored as written. Two places would act on them instead of showing them:

- a terminal runs escape sequences (``ESC[31m``, C1 ``CSI``, OSC hyperlinks) and bidi
  overrides reorder what is shown: :func:`for_terminal` escapes them visibly;
- a spreadsheet opening a CSV runs a cell that starts with ``=``, ``+``, ``-``, ``@``,
  a tab or a carriage return as a formula: :func:`csv_cell` prefixes such a text cell
  with ``'`` as OWASP advises ("CSV injection"). Numbers, negative ones included,
  stay numbers.

Every CSV nsight-lab writes goes through :func:`frame_to_csv`.
"""

from __future__ import annotations

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
    "FORMULA_PREFIXES",
    "csv_cell",
    "for_terminal",
    "frame_for_csv",
    "frame_for_terminal",
    "frame_to_csv",
    "unsafe_character",
]

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
"""Characters that make a spreadsheet read a cell as a formula (OWASP)."""

BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
"""Bidi marks, embeddings, overrides and isolates: they reorder the text around them."""
_SEPARATORS = frozenset("\u2028\u2029")
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


def csv_cell(value: object) -> object:
    """Return a text cell neutralised for spreadsheets; anything else unchanged.

    Text starting with one of :data:`FORMULA_PREFIXES` gets a leading ``'`` unless it
    is a plain number written as text (``-1.5`` cannot be a formula).
    """
    if (
        isinstance(value, str)
        and value.startswith(FORMULA_PREFIXES)
        and not _NUMBER.fullmatch(value)
    ):
        return "'" + value
    return value


def _map_text(frame: pd.DataFrame, convert: Callable[[object], object]) -> pd.DataFrame:
    """Apply ``convert`` to every text column's cells and to the column names."""
    import pandas as pd

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
    """A copy of ``frame`` whose text cells and column names cannot run as formulas."""
    return _map_text(frame, csv_cell)


@overload
def frame_to_csv(frame: pd.DataFrame, target: None = None) -> str: ...
@overload
def frame_to_csv(frame: pd.DataFrame, target: str | Path | TextIO) -> None: ...
def frame_to_csv(
    frame: pd.DataFrame, target: str | Path | TextIO | None = None
) -> str | None:
    """Write ``frame`` as CSV (no index), formulas neutralised: the one CSV writer.

    Returns:
        The CSV text when ``target`` is ``None``, else ``None``.
    """
    safe = frame_for_csv(frame)
    if target is None:
        text: str = safe.to_csv(index=False)
        return text
    safe.to_csv(target, index=False)
    return None
