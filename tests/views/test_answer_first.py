"""Issue 30: the cell's final output says the answer first, then the charts.

The notebook's output for fixture session 2 (tests/fixtures/h200_block.sqlite: 12
regions, every run throttled by a power cap), built as ``WidgetView.finish`` builds
it: the quality headline as its first line (as ``show``'s), the flags right under
the title, then the summary table and its notes, then the bars, and the charts not
drawn folded into one line; the backend line without nested parentheses. At
``0ab1fce`` the page began with the title, listed the flags under the table and
the bars above it, and the cpu backend's line nested parentheses three deep.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from nsight_lab.roofline.peaks import known_peaks
from nsight_lab.store.run_store import RunStore
from nsight_lab.viewmodel.session import build
from nsight_lab.viewmodel.summary import median_bars
from nsight_lab.views.bundle import final_bundle
from nsight_lab.views.fallback import static_bundle

FIXTURE = Path(__file__).parents[1] / "fixtures" / "h200_block.sqlite"
HEADLINE = "! 12 regions flagged: GPU throttled"


def _depth(text: str) -> int:
    """The deepest nesting of parentheses in ``text`` (a call's ``()`` is none)."""
    depth = deepest = 0
    for char in text.replace("()", ""):
        depth += {"(": 1, ")": -1}.get(char, 0)
        deepest = max(deepest, depth)
    return deepest


@pytest.fixture(scope="module")
def session_2(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The final bundle of fixture session 2 (a copy of the store: never written)."""
    path = tmp_path_factory.mktemp("store") / "store.sqlite"
    shutil.copyfile(FIXTURE, path)
    with RunStore(path) as store:
        session = store.get_session(2)
        records = list(store.runs(2))
        peaks = known_peaks(store, session.device, cpu=False)
    model = build(records, session, peaks=peaks)
    view = model.to_json()
    return final_bundle(
        session_id=2,
        status="completed",
        progress={"text": "30 of 30 runs \u00b7 1 config \u00b7 done"},
        message="%%nsight session 2: backend events on NVIDIA H200",
        figures=view["figures"],
        summary=view["summary"],
        bars=median_bars(model.regions),
        counters=view["counters"],
        checks=view["checks"],
        verdicts=view["verdicts"],
    )


def test_the_text_leads_with_the_headline_then_flags_then_the_table(
    session_2: dict[str, Any],
) -> None:
    lines = session_2["text/plain"].splitlines()
    assert lines[0].startswith(HEADLINE), lines[0]
    assert lines[1] == "nsight-lab session 2: completed"
    flag = lines.index("! 12 regions: throttled (30 of 30 runs)")
    table = next(i for i, line in enumerate(lines) if line.startswith("Region "))
    note = next(i for i, line in enumerate(lines) if line.startswith("note "))
    assert flag < table < note
    assert "TFLOP/s not shown" in lines[note]


def test_the_page_leads_with_the_answer_and_folds_the_charts_into_one_line(
    session_2: dict[str, Any],
) -> None:
    page = session_2["text/html"]
    headline = page.index(HEADLINE)
    assert headline < page.index("nsight-lab session 2: completed")
    # the flags, once for the twelve regions, then the table, then the bars
    flag = page.index("12 regions: throttled (30 of 30 runs)")
    assert page.count("throttled (30 of 30 runs)</b>") == 1
    summary = page.index("Static-summary")
    assert headline < flag < summary < page.index("Static-medians")
    # one line for the charts, naming what another backend would add
    assert page.count("another backend would add") == 1
    assert "another backend would add counters over time (--backend pm)" in page
    for words in ("Nothing to draw", "nothing to draw", "needs DRAM byte counts"):
        assert words not in page
    assert page.index("Static-medians") < page.index("another backend would add")


def test_without_flags_the_table_comes_first() -> None:
    rows = [{"Region": "matmul", "Duration": "1.000 ms"}]
    page = static_bundle(
        session_id=3,
        status="completed",
        progress={"text": "done"},
        message="",
        summary=rows,
        checks=[
            {
                "region": "matmul",
                "config": "",
                "kind": "not_modelled",
                "text": "TFLOP/s not shown",
                "cause": "",
                "action": "",
            }
        ],
    )
    text = page["text/plain"].splitlines()
    assert text[0] == "nsight-lab session 3: completed"
    assert text.index("note matmul: TFLOP/s not shown") > 2  # under the table
    html = page["text/html"]
    assert html.index("Static-summary") < html.index("TFLOP/s not shown")


def test_the_backend_line_nests_no_parentheses() -> None:
    from nsight_lab.contract.registry import BUILTIN_BACKENDS
    from nsight_lab.views.answer import backend_line

    cpu = next(e for e in BUILTIN_BACKENDS if e.id == "cpu")
    why = "no CUDA GPU visible (torch.cuda.is_available() is False)"
    reason = cpu.auto_reason.format(metrics="", why=why)
    line = backend_line("%%nsight", 1, "cpu", reason, "AMD EPYC 7B13")
    assert line.startswith("%%nsight session 1: backend cpu on AMD EPYC 7B13 \u00b7 ")
    assert why in line
    assert _depth(line) == 1, line
