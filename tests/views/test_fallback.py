"""nsight_lab.views.fallback: the static page and text of a session, built directly.

tests/views/test_bundle.py covers it inside a cell's final bundle (median bars to scale,
escaping, size, units, a failing page); here: the failure page's one line, the plain
summary's alignment, what a page leaves out, bars of one config, and durations at the
edges of their units.
"""

from __future__ import annotations

import re

import pytest

from nsight_lab.contract.records import RunRecord
from nsight_lab.viewmodel import build
from nsight_lab.viewmodel.summary import median_bars
from nsight_lab.views.fallback import (
    UNDEFINED,
    failure_bundle,
    format_duration,
    static_bundle,
    static_text,
    summary_text,
)


def _record(annotation: str, run: int, ns: float) -> RunRecord:
    return RunRecord(
        session_id=3,
        config_index=0,
        config={"n": 8},
        run_index=run,
        annotation=annotation,
        duration_ns=ns,
        backend="cpu",
    )


def test_the_failure_page_is_the_first_line_of_the_error_cut_to_200_characters():
    long = ValueError("x" * 500 + "\nsecond line")
    page = failure_bundle(4, "failed", long)
    note = page["text/plain"].splitlines()[1]
    assert note.startswith("no static view of this session here: ValueError: xxx")
    assert note.endswith("x…")
    assert len(note.split(": ", 2)[2]) == 200  # 199 characters and the ellipsis
    assert "second line" not in page["text/plain"]
    assert page["text/plain"].splitlines()[0] == "nsight-lab session 4: failed"


def test_an_error_without_a_message_is_named_by_its_type():
    page = failure_bundle(4, "interrupted", KeyboardInterrupt())
    assert page["text/plain"].endswith(": KeyboardInterrupt: KeyboardInterrupt")
    assert "<b>nsight-lab session 4: interrupted</b>" in page["text/html"]


def test_the_plain_summary_is_aligned_in_columns_in_first_seen_order():
    rows = [
        {"Annotation": "a", "AvgValue": 1200.0, "Unit": "ns", "NumRuns": 3},
        {"Annotation": "longer name", "NumRuns": 30, "Extra": None},
    ]
    lines = summary_text(rows).splitlines()
    assert lines[0].split() == ["Annotation", "AvgValue", "NumRuns", "Extra"]
    # Every column starts where its header does.
    for header in ("AvgValue", "NumRuns"):
        start = lines[0].index(header)
        assert lines[1][start - 1] == " "
        assert lines[1][start] != " "
    assert lines[1].split() == ["a", "1.200", "µs", "3"]
    assert lines[2].split() == ["longer", "name", "30"]  # None is an empty cell
    assert summary_text([]) == ""


def test_a_page_without_records_or_message_has_no_bars_note_or_pre():
    page = static_bundle(
        session_id=2,
        status="running",
        progress={"text": "3 / 9 runs"},
        message="",
        summary=[],
    )["text/html"]
    assert "<code>3 / 9 runs</code>" in page
    assert "<pre>" not in page
    assert "Static-medians" not in page
    assert "Interactive charts" not in page  # no records: the live progress only


def test_bars_of_one_config_have_no_config_column_and_regions_keep_their_order():
    records = [_record("zeta", 0, 300.0), _record("alpha", 0, 100.0)]
    page = static_bundle(
        session_id=3,
        status="completed",
        progress={},
        message="",
        summary=[],
        bars=median_bars(build(records).regions),
    )["text/html"]
    medians = page.split("Static-medians", 1)[1].split("</table>", 1)[0]
    assert "<th>config</th>" not in medians
    assert "n=8" not in medians
    assert medians.index("zeta") < medians.index("alpha")  # first run first
    widths = [int(w) for w in re.findall(r"<div style=\"width:(\d+)px", medians)]
    assert widths == [240, 80]
    assert "%nsight show 3" in page


def test_the_text_view_skips_what_is_empty():
    text = static_text(
        session_id=5, status="completed", progress={}, message="", summary=[]
    )
    assert text == "nsight-lab session 5: completed"
    shown = static_text(
        session_id=5,
        status="failed",
        progress={"text": "1 / 2 runs"},
        message="RuntimeError: boom\x1b[2J",
        summary=[],
    )
    assert shown.splitlines() == [
        "nsight-lab session 5: failed",
        "1 / 2 runs",
        "RuntimeError: boom\\x1b[2J",  # control characters made visible
    ]


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0.0, "0 ns"),
        (999.0, "999 ns"),
        (999.96, "1.000 µs"),  # the unit is picked after rounding
        (9999.6, "10.00 µs"),
        (-2500.0, "-2.500 µs"),
        (3.6e12, "3600 s"),
        (float("inf"), UNDEFINED),
        (float("-inf"), UNDEFINED),
    ],
)
def test_durations_at_the_edges_of_their_units(ns, text):
    assert format_duration(ns) == text


def test_the_counter_table_shows_under_the_summary_less_its_zero_rows():
    counters = {
        "columns": ["Region", "Metric", "Median", "RSD", "Runs"],
        "rows": [
            {"cells": ["a<b>", "gbps", "600.0 GB/s", "1.0 %", "3"], "zero": False},
            {"cells": ["a<b>", "idle.sum", "0", "-", "3"], "zero": True},
        ],
        "zero": 1,
    }
    page = static_bundle(
        session_id=4,
        status="completed",
        progress={},
        message="",
        summary=[{"Region": "a<b>", "Duration": "1.000 µs"}],
        counters=counters,
    )["text/html"]
    table = page.split('class="jp-nsightLab-Static-counters"', 1)[1]
    assert page.index("Static-summary") < page.index("Static-counters")
    assert "<td>gbps</td><td>600.0 GB/s</td>" in table
    assert "a&lt;b&gt;" in table
    assert "<b>" not in table.split("</table>")[0].replace("<b>Median", "")
    assert "idle.sum" not in page
    assert "1 counter row that read 0 in every run not shown" in page
    assert (
        "Static-counters"
        not in static_bundle(
            session_id=4, status="completed", progress={}, message="", summary=[]
        )["text/html"]
    )
