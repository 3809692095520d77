"""Whole numbers read from text: the one parser of count and id arguments.

The ``%%nsight`` options (``--runs``), the ``%nsight`` line magic and the
``nsight-lab`` CLI (session ids, ``--limit``) and the server's query arguments all read
whole numbers with :func:`whole_number`.
"""

from __future__ import annotations

import re

__all__ = ["whole_number"]

_WHOLE = re.compile(r"([+-]?)0*([0-9]+)", re.ASCII)


def whole_number(raw: str, minimum: int, maximum: int) -> int | None:
    """``raw`` (stripped) as an integer in ``[minimum, maximum]``, else ``None``.

    ASCII digits with an optional sign (``'²'`` and other Unicode digits are
    refused). The significant digits are counted before ``int()``: Python refuses
    texts of over 4,300 digits, and converting long ones is quadratic; leading zeros
    are allowed (``007``).
    """
    found = _WHOLE.fullmatch(raw.strip())
    if found is None:
        return None
    sign, digits = found.groups()
    if len(digits) > len(str(max(abs(minimum), abs(maximum)))):
        return None
    value = int(f"{sign}{digits}", 10)
    return value if minimum <= value <= maximum else None
