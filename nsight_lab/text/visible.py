"""Characters that must never be shown raw, made visible as backslash escapes.

Control, bidi and zero-width characters and lone surrogates break browsers' and
kaleido's renderers, cannot be encoded as UTF-8 (lone surrogates), or reorder the
text around them (bidi controls): :func:`printable` writes them as ``repr`` would.
No dependency beyond the standard library, so every layer can use it.
"""

from __future__ import annotations

import re

__all__ = ["printable", "surrogates_visible"]

_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069"
    "\ufeff\ud800-\udfff]"
)
"""Control, bidi and zero-width characters and lone surrogates: never shown raw."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"  # noqa: PLR2004


def printable(value: object) -> str:
    r"""``str(value)`` with control characters and lone surrogates made visible.

    ``"a\x00b"`` becomes ``"a\\x00b"`` (a backslash escape, as ``repr`` writes it):
    such characters break browsers' and kaleido's renderers, cannot be encoded as
    UTF-8 (lone surrogates), or reorder the text around them (bidi controls). Tabs
    and newlines are kept.

    Raises:
        Nothing.
    """
    return _INVISIBLE.sub(_visible, str(value))


def surrogates_visible(value: str) -> str:
    """``value`` with only its lone surrogates (not UTF-8) made visible.

    Raises:
        Nothing.
    """
    return _SURROGATE.sub(_visible, value)
