"""The REST export goes through the one CSV writer (issue 22).

A region named ``"y\\r=cmd|' /C calc'!A0"``: pandas left the bare ``\\r`` unquoted, so
pandas.read_csv (and a spreadsheet) started a new row there and ``=cmd|' /C calc'!A0``
was a cell of its own. The body is parsed as pandas and the csv module read it, and a
naive importer's view (lines split at every line break, cells at every separator);
every cell is checked (``formula_at`` of tests/test_csv_writer.py).
"""

from __future__ import annotations

import csv
import io
import re

import pandas as pd
import pytest

from tests.test_csv_writer import BREAKS, ISSUE_NAME, formula_at

ONE = {"n": 1}
TIMES = [1.5, 2.0]
NAMES = (ISSUE_NAME, "a\n@SUM(A1)", "b;+1+2", "c\u2028=1", "ok")


@pytest.fixture
def breaking(db_path):
    from nsight_lab.store.run_store import RunStore

    from .conftest import series

    with RunStore(db_path) as store:
        session = store.create_session(
            backend="cpu", name=ISSUE_NAME, configs=[{"n": 1}],
            options={"params": {"n": [1]}},
        )  # fmt: skip
        for annotation in NAMES:
            runs = series(session.id, annotation, TIMES, config_index=0, config=ONE)
            store.add_runs(runs)
        store.finish_session(session.id, "completed")
        return session.id


@pytest.mark.parametrize("what", ["runs", "results"])
async def test_rest_csv_export_has_no_formula_through_a_row_break(
    jp_fetch, breaking, what
):
    response = await jp_fetch(
        "nsight-lab", "api", "sessions", str(breaking), "export",
        params={"format": "csv", "what": what},
    )  # fmt: skip
    assert response.code == 200
    text = response.body.decode("utf-8")
    frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    split = re.compile(f"[{re.escape(BREAKS)}]").split
    naive = [p for line in text.splitlines() for p in split(line)]
    read = [cell for row in rows for cell in row]
    cells = [*frame.columns, *frame.to_numpy().ravel(), *read, *naive]
    assert [c for c in cells if formula_at(c) is not None] == []
    column = "annotation" if what == "runs" else "Annotation"
    assert set(frame[column]) == {
        "y\r'=cmd|' /C calc'!A0", "a\n'@SUM(A1)", "b;'+1+2", "c\u2028'=1", "ok",
    }  # fmt: skip
    assert len(rows) == len(frame) + 1  # no value split into two rows
