"""The one parser of whole numbers (options, line magic, CLI and server)."""

from __future__ import annotations

import pytest

from nsight_lab.text.numbers import whole_number

BIG = 2**63 - 1


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("5", 5),
        (" 7 ", 7),
        ("+3", 3),
        ("007", 7),
        ("0" * 5_000 + "1", 1),  # leading zeros are not digits to convert
        (str(BIG), BIG),
        (str(BIG + 1), None),
        ("9" * 5_000, None),  # refused before int(): no 4,300-digit error
        ("-1", None),
        ("1.5", None),
        ("1e3", None),
        ("0x10", None),
        ("\u0661", None),  # ARABIC-INDIC DIGIT ONE: int() takes it, we do not
        ("²", None),
        ("", None),
    ],
)
def test_whole_number(raw: str, expected: int | None) -> None:
    assert whole_number(raw, 0, BIG) == expected


def test_bounds_and_signs() -> None:
    assert whole_number("-5", -10, 10) == -5
    assert whole_number("0", 1, 10) is None
    assert whole_number("11", 1, 10) is None


def test_every_reader_calls_it() -> None:
    """The options, the commands (CLI and line magic) and the server share it."""
    from nsight_lab import options
    from nsight_lab.cli import parser
    from nsight_lab.options import values
    from nsight_lab.server import base

    assert options.whole_number is whole_number
    assert values.whole_number is whole_number
    assert base.whole_number is whole_number
    assert parser.whole_number is whole_number
