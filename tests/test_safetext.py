"""nsight_lab.text.safe: text made safe for terminals and spreadsheets.

The CLI's escaping end to end and ``csv_cell``'s number cases are in tests/test_cli.py;
here: which characters count as unsafe, what :func:`for_terminal` keeps, the frame
helpers and the one CSV writer.
"""

from __future__ import annotations

import io

import pandas as pd
import pytest

from nsight_lab.text.safe import (
    BIDI_CONTROLS,
    csv_cell,
    for_terminal,
    frame_for_terminal,
    frame_to_csv,
    unsafe_character,
)

READABLE = "matmul é 行列 😀 [c0 r1] a=b"
"""Accents, CJK, emoji and punctuation: nothing a terminal acts on."""


def test_readable_text_has_no_unsafe_character_and_is_kept_as_is():
    assert unsafe_character(READABLE) is None
    assert for_terminal(READABLE) is READABLE  # the fast path: no copy


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("a\tb\x1bc", "\t"),  # tabs and newlines are controls too
        ("ok\x7f", "\x7f"),  # DEL
        ("csi\x9b2J", "\x9b"),  # C1 CSI: a one-byte ESC [
        ("left\u202eright", "\u202e"),  # a bidi override
        ("lone \ud800 surrogate", "\ud800"),
    ],
)
def test_unsafe_character_is_the_first_control(text, first):
    assert unsafe_character(text) == first


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b]8;;http://x\x07link", "\\x1b]8;;http://x\\x07link"),  # OSC hyperlink
        ("a\nb\rc", "a\\nb\\rc"),
        ("c\x9b2Jd", "c\\x9b2Jd"),
        ("x\x7f", "x\\x7f"),
        ("one\u2028two\u2029three", "one\\u2028two\\u2029three"),
        ("é\u202e行", "é\\u202e行"),  # only the control is escaped
    ],
)
def test_for_terminal_shows_controls_as_their_escape(text, shown):
    assert for_terminal(text) == shown
    assert unsafe_character(for_terminal(text)) is None


def test_every_bidi_control_is_escaped():
    for char in BIDI_CONTROLS:
        shown = for_terminal(f"a{char}b")
        assert char not in shown
        assert shown == f"a\\u{ord(char):04x}b"


@pytest.mark.parametrize(
    ("cell", "safe"),
    [
        ("@SUM(A1)", "'@SUM(A1)"),
        ("+A1", "'+A1"),
        (".5", ".5"),  # a number written as text stays a number
        ("1e3", "1e3"),
        ("--1", "'--1"),  # not a number: a formula
        ("", ""),
        (None, None),
        (True, True),
    ],
)
def test_csv_cell_neutralises_formulas_only(cell, safe):
    assert csv_cell(cell) == safe


def test_frame_for_terminal_escapes_cells_and_names_and_leaves_the_input():
    frame = pd.DataFrame({"name\x1b": ["\x1b[31mred", "ok"], "ns": [1.5, 2.5]})
    safe = frame_for_terminal(frame)
    assert list(safe.columns) == ["name\\x1b", "ns"]
    assert safe["name\\x1b"].tolist() == ["\\x1b[31mred", "ok"]
    assert safe["ns"].tolist() == [1.5, 2.5]
    assert frame["name\x1b"].tolist() == ["\x1b[31mred", "ok"]  # a copy was changed


def test_frame_to_csv_returns_text_or_writes_the_same_to_a_target(tmp_path):
    frame = pd.DataFrame({"Annotation": ["=cmd|' /C calc'!A0", "-x"], "v": [-1.5, 2]})
    text = frame_to_csv(frame)
    assert text.splitlines() == [
        "Annotation,v",
        "'=cmd|' /C calc'!A0,-1.5",
        "'-x,2.0",
    ]  # no index column; negative numbers stay numbers
    assert text.count("\r\n") == 3  # RFC 4180 rows: a value's \r is quoted
    path = tmp_path / "out.csv"
    assert frame_to_csv(frame, path) is None
    assert path.read_bytes().decode("utf-8") == text
    handle = io.StringIO(newline="")
    frame_to_csv(frame, handle)
    assert handle.getvalue() == text
