"""User text in figures: names a user chose made safe for plotly.js and kaleido.

Annotations and config values are *text*: HTML-escaped wherever plotly.js would read
markup (:func:`_text`), with control, bidi and zero-width characters and lone
surrogates made visible (:func:`printable`), and kept unescaped only as data in each
trace's ``meta`` (:func:`_meta_text`). Also the labels built from them.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from nsight_lab.contract.records import JsonScalar, RunRecord

_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069"
    "\ufeff\ud800-\udfff]"
)
"""Control, bidi and zero-width characters and lone surrogates: never shown raw."""


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


def _text(value: object) -> str:
    """``value`` as plotly text: markup escaped, control characters made visible."""
    return html.escape(printable(value), quote=False)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _meta_text(value: str) -> str:
    """An annotation kept as data: lone surrogates (not UTF-8) made visible."""
    return _SURROGATE.sub(_visible, value)


def _config_label(config: Mapping[str, JsonScalar]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())


def _label(annotation: str, config: Mapping[str, JsonScalar], with_config: bool) -> str:  # noqa: FBT001
    label = _config_label(config) if with_config else ""
    return f"{annotation} [{label}]" if label else annotation


def _throttle_text(record: RunRecord) -> str:
    t = record.telemetry
    if not t.throttled:
        return ""
    reasons = ", ".join(t.clock_event_reasons) or "SM clock below 75% of its maximum"
    return _text(f"throttled: {reasons}")
