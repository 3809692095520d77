"""Findings where the user looks (issue 31): the static page, the bundle, ``show``.

The view model sends them (``to_json()["findings"]``, ranked, the first three
marked ``top``); the cell's static page and its text lead with those three and
fold the rest; our MIME type carries every one; ``show`` prints the three.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from nsight_lab.contract.records import RunRecord, SessionInfo, Telemetry
from nsight_lab.roofline.placement import peaks_for
from nsight_lab.store.run_store import RunStore
from nsight_lab.viewmodel.session import build
from nsight_lab.views.bundle import MIME_TYPE, final_bundle
from nsight_lab.views.show import session_text

if TYPE_CHECKING:
    from pathlib import Path

H100 = "NVIDIA H100 80GB HBM3"
MB = 1e6
REGIONS = {  # name: (median ns, op-level bytes, fused bytes)
    "a <b>&</b>": (600e3, 1.6e9, 1.07e9),  # fusion headroom (markup in its name)
    "stream": (180e3, 0.537e9, 0.537e9),
    "tiny": (2.5e3, 2e5, 2e5),
    "reshape": (300e3, 0.4e9, 0.4e9),
    "norm": (90e3, 0.13e9, 0.13e9),
}


def _records(session_id: int = 1) -> list[RunRecord]:
    out = []
    for run in range(8):
        for name, (ns, moved, fused) in REGIONS.items():
            out.append(
                RunRecord(
                    session_id=session_id,
                    config_index=0,
                    config={},
                    run_index=run,
                    annotation=name,
                    duration_ns=ns * (1 + 0.001 * run),
                    backend="events",
                    metrics={
                        "model__flops": 1e6,
                        "model__flops_dtype_fp32": 1e6,
                        "model__bytes_read": moved / 2,
                        "model__bytes_written": moved / 2,
                        "model__bytes_fused": fused,
                    },
                    telemetry=Telemetry(sm_clock_mhz=1980.0),
                )
            )
    return out


def _session(session_id: int = 1) -> SessionInfo:
    return SessionInfo(
        id=session_id,
        status="completed",
        backend="events",
        created_at="2026-01-01T00:00:00+00:00",
        device=H100,
    )


def _view() -> dict:
    return build(_records(), _session(), peaks=peaks_for(H100)).to_json()


def _bundle() -> dict:
    view = _view()
    return final_bundle(
        session_id=1,
        status="completed",
        progress={"text": "done"},
        message="",
        figures=view["figures"],
        summary=view["summary"],
        counters=view["counters"],
        checks=view["checks"],
        findings=view["findings"],
    )


def test_the_view_model_sends_ranked_findings_three_on_top() -> None:
    findings = _view()["findings"]
    assert [f["rank"] for f in findings] == list(range(1, len(findings) + 1))
    assert sum(f["top"] for f in findings) == 3
    first = findings[0]
    assert set(first) >= {
        "region", "regions", "config", "config_index", "family", "kind",
        "statement", "evidence", "action", "gain", "gain_basis", "confidence",
        "basis", "answered_by", "time_ns", "rank", "top",
    }  # fmt: skip
    fusion = next(f for f in findings if f["kind"] == "fusion_headroom")
    assert fusion["regions"] == ["a <b>&</b>"]
    assert fusion["gain_basis"].startswith("at most 1.50")


def test_the_static_page_leads_with_three_findings_and_folds_the_rest() -> None:
    bundle = _bundle()
    page = bundle["text/html"]
    block = page[page.index("jp-nsightLab-Static-findings") :]
    top = block[: block.index("<details>")]
    assert top.count("<li>") == 3
    rest = len(_view()["findings"]) - 3
    assert f"{rest} more findings (nsight-lab explain 1)</summary>" in block
    assert "<b>&</b>" not in page  # region names are text, never markup
    assert "a &lt;b&gt;&amp;&lt;/b&gt;" in page
    # the answer first: findings above the summary table
    assert page.index("Why it is slow") < page.index("jp-nsightLab-Static-summary")


def test_the_text_page_says_the_three_and_how_to_see_the_rest() -> None:
    text = _bundle()["text/plain"]
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Why it is slow"))
    assert re.match(r"Why it is slow; \d+ more: nsight-lab explain 1:", lines[start])
    numbered = [line for line in lines[start:] if re.match(r"\d\. ", line)]
    assert len(numbered) == 3


def test_our_type_carries_every_finding_for_the_lab() -> None:
    bundle = _bundle()
    assert bundle[MIME_TYPE]["findings"] == _view()["findings"]


def test_show_prints_the_findings_that_matter_most(nsight_home: Path) -> None:
    nsight_home.mkdir(parents=True, exist_ok=True)
    with RunStore() as store:
        session = store.create_session(backend="events", device=H100, runs_planned=8)
        store.add_runs(_records(session.id))
        store.finish_session(session.id, "completed")
        text = session_text(store, session.id, width=200)
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Why it is slow"))
    assert lines[at].endswith(f"nsight-lab explain {session.id}:")
    assert lines[at + 1].startswith("1. ")
    table = next(i for i, line in enumerate(lines) if line.startswith("Region"))
    assert at < table  # before the table
