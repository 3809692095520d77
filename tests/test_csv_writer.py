"""The one CSV writer (issue 22): no formula survives anywhere a reader starts a cell.

A region named ``"y\\r=cmd|' /C calc'!A0"`` was written with the guard on the cell's
first character only, and pandas left the bare ``\\r`` unquoted: pandas.read_csv and a
spreadsheet started a new row there, with ``=cmd|' /C calc'!A0`` a cell of its own.
Each test parses what was written, as pandas, Python's csv module and a naive importer
(one that splits lines at every line break and cells at every separator) read it, and
checks every cell.
"""

from __future__ import annotations

import csv
import io
import os
import re
import stat
from typing import TYPE_CHECKING

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nsight_lab.cli import main
from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.store.run_store import RunStore
from nsight_lab.text.safe import csv_cell, frame_to_csv

if TYPE_CHECKING:
    from pathlib import Path

    from IPython.core.interactiveshell import InteractiveShell

ISSUE_NAME = "y\r=cmd|' /C calc'!A0"
"""The name of issue 22's finding."""
BREAKS = "\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029,;\t"
"""Where some reader may start a cell: line breaks (str.splitlines) and separators."""
NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
UNICODE_SPACES = "\u00a0\u1680\u2000\u2003\u200a\u202f\u205f\u3000\u200b\ufeff"
"""Spaces a spreadsheet trims before a formula too (issue 29: a no-break or
ideographic space before ``=`` reached a cell unprefixed)."""
SKIPPED = (
    ' "'
    + "".join(
        chr(c) for c in range(0x3001) if chr(c).isspace() and chr(c) not in BREAKS
    )
    + "\u200b\ufeff"
)
"""What a reader skips before it looks for a formula."""


def formula_at(cell: str) -> str | None:
    """The first place in ``cell`` where a reader could start a formula cell, if any.

    A cell starts at the value's start and after every break; leading spaces and
    quotes are skipped; a plain number is no formula; a value starting with a tab or
    carriage return counts (OWASP).
    """
    if cell[:1] in {"\t", "\r"}:
        return cell
    starts = [0] + [i + 1 for i, char in enumerate(cell) if char in BREAKS]
    for start in starts:
        rest = cell[start:].lstrip(SKIPPED)
        end = next((i for i, c in enumerate(rest) if c in BREAKS), len(rest))
        piece = rest[:end].rstrip(' "')
        if rest[:1] in {"=", "+", "-", "@"} and not NUMBER.fullmatch(piece):
            return rest
    return None


def read_back(path: Path) -> tuple[pd.DataFrame, list[list[str]], list[str]]:
    """The file as pandas, the csv module and a naive importer read it."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    with path.open(newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))
    text = path.read_bytes().decode("utf-8")
    naive = [
        piece
        for line in text.splitlines()
        for piece in re.split(f"[{re.escape(BREAKS)}]", line)
    ]
    return frame, rows, naive


def assert_no_formula(path: Path, expected: pd.DataFrame | None = None) -> None:
    frame, rows, naive = read_back(path)
    for cell in [*frame.columns, *frame.to_numpy().ravel()]:
        assert formula_at(str(cell)) is None, (path.name, cell)
    for row in rows:
        for cell in row:
            assert formula_at(cell) is None, (path.name, cell)
    for piece in naive:
        assert formula_at(piece) is None, (path.name, piece)
    if expected is not None:
        # Nothing split or merged: one row per row, each text cell as neutralised.
        want = [[str(csv_cell(c)) for c in expected.columns]] + [
            [str(csv_cell(v)) for v in row] for row in expected.to_numpy()
        ]
        assert len(rows) == len(want)
        for got, row in zip(rows, want, strict=True):
            assert got[0] == row[0]
            assert len(got) == len(row)


NAMES = st.text(
    alphabet=st.sampled_from(
        list("=+-@ \t\r\n;,\"'a1.e|!\x1e\v\f\u2028\x85" + UNICODE_SPACES)
    ),
    max_size=24,
) | st.text(max_size=24)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(names=st.lists(NAMES, min_size=1, max_size=5), header=NAMES)
def test_no_cell_any_reader_sees_starts_a_formula(
    names: list[str], header: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    frame = pd.DataFrame(
        {
            "Annotation": names,
            "AvgValue": [-1.5 * i for i in range(len(names))],
            f"h{header}": names[::-1],
        }
    )
    path = tmp_path_factory.mktemp("csv") / "out.csv"
    frame_to_csv(frame, path)
    assert_no_formula(path, frame)
    back = pd.read_csv(
        path, keep_default_na=False, dtype={"AvgValue": float, "Annotation": str}
    )
    assert back["AvgValue"].tolist() == frame["AvgValue"].tolist()  # numbers stay
    assert back["Annotation"].tolist() == [csv_cell(n) for n in names]


def test_the_issues_name_is_one_cell_and_no_formula() -> None:
    frame = pd.DataFrame({"Annotation": [ISSUE_NAME, "ok"], "v": [1.0, -2.0]})
    text = frame_to_csv(frame)
    back = pd.read_csv(io.StringIO(text), keep_default_na=False)
    assert back["Annotation"].tolist() == ["y\r'=cmd|' /C calc'!A0", "ok"]
    assert back["v"].tolist() == [1.0, -2.0]
    assert list(csv.reader(io.StringIO(text, newline=""))) == [
        ["Annotation", "v"],
        ["y\r'=cmd|' /C calc'!A0", "1.0"],
        ["ok", "-2.0"],
    ]


class Shape:
    def __str__(self) -> str:
        return "x\n@SUM(A1)"


def test_other_objects_are_written_as_neutralised_text() -> None:
    frame = pd.DataFrame(
        {
            "config": [["=1+1", 2], Shape()],
            "kind": pd.Categorical(["=c", "d"]),
            "ok": [True, False],
        }
    )
    rows = list(csv.reader(io.StringIO(frame_to_csv(frame), newline="")))
    assert rows[1] == ["['=1+1', 2]", "'=c", "True"]
    assert rows[2] == ["x\n'@SUM(A1)", "d", "False"]


def _session(annotations: list[str]) -> int:
    with RunStore() as store:
        session = store.create_session(
            backend="cpu", name=ISSUE_NAME, device="dev",
            options={"params": {"n": [1]}}, configs=[{"n": 1}],
        )  # fmt: skip
        store.add_runs(
            [
                RunRecord(
                    session_id=session.id,
                    config_index=0,
                    config={"n": 1},
                    run_index=r,
                    annotation=a,
                    duration_ns=1000.0 + r,
                    backend="cpu",
                    telemetry=Telemetry(),
                )
                for r in range(2)
                for a in annotations
            ]
        )
        store.finish_session(session.id, "completed")
        return session.id


@pytest.mark.parametrize("what", ["runs", "results"])
def test_cli_export_has_no_formula_through_a_carriage_return(
    tmp_path: Path, what: str
) -> None:
    sid = _session([ISSUE_NAME, "a\n@SUM(A1)", "b;+1+2", "ok"])
    path = tmp_path / f"{what}.csv"
    assert main(["export", str(sid), "--what", what, "-o", str(path)]) == 0
    assert_no_formula(path)
    frame = pd.read_csv(path, keep_default_na=False)
    column = "annotation" if what == "runs" else "Annotation"
    assert {"y\r'=cmd|' /C calc'!A0", "a\n'@SUM(A1)", "b;'+1+2", "ok"} == set(
        frame[column]
    )


def test_output_csv_has_no_formula_through_a_carriage_return(
    ip: InteractiveShell, tmp_path: Path
) -> None:
    prefix = tmp_path / "csv" / "f_"
    cell = f"import nsight\nwith nsight.annotate({ISSUE_NAME!r}):\n    sum(range(9))\n"
    result = ip.run_cell(
        f"%%nsight --backend cpu --warmup 0 --quiet --runs 2 --output-csv {prefix}\n"
        + cell
    )
    assert result.error_in_exec is None, result.error_in_exec
    files = sorted((tmp_path / "csv").iterdir())
    assert len(files) == 2
    for path in files:
        assert_no_formula(path)
        frame = pd.read_csv(path, keep_default_na=False)
        assert set(frame["Annotation"]) == {"y\r'=cmd|' /C calc'!A0"}, path.name


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_files_get_a_plain_files_mode(tmp_path: Path, fmt: str) -> None:
    """0666 less the umask, as open() gives; an old file's mode is kept (not 0600)."""
    sid = _session(["ok"])
    path = tmp_path / f"runs.{fmt}"
    old = os.umask(0o022)
    try:
        assert main(["export", str(sid), "--format", fmt, "-o", str(path)]) == 0
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        os.umask(0o002)
        again = tmp_path / f"again.{fmt}"
        assert main(["export", str(sid), "--format", fmt, "-o", str(again)]) == 0
        assert stat.S_IMODE(again.stat().st_mode) == 0o664
        path.chmod(0o640)  # replacing a file keeps its mode
        assert main(["export", str(sid), "--format", fmt, "-o", str(path)]) == 0
        assert stat.S_IMODE(path.stat().st_mode) == 0o640
    finally:
        os.umask(old)
    assert not list(tmp_path.glob(".*.tmp"))
