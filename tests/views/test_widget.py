"""NsightWidget: its traits, its MIME bundle, and a real kernel driven by nbclient."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from nsight_lab.contract.progress import make_progress
from nsight_lab.figures import CHART_ORDER
from nsight_lab.views.bundle import MIME_TYPE
from nsight_lab.views.live import CLOSED_ESM
from nsight_lab.views.widget import STATIC_DIR, NsightWidget

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
ALL_VIEWS = [WIDGET_VIEW, "text/plain", "text/html"]
"""What a notebook front end shows (the test session's shell is a terminal one)."""
TRAITS = {
    "session_id",
    "status",
    "progress",
    "message",
    "figures",
    "chart_order",
    "figures_seq",
    "append",
    "summary",
    "sidebar_link",
}


def _progress(*, runs_done_total, status="running"):
    return make_progress(
        status=status,
        configs_total=1,
        runs_per_config=3,
        config_index=0,
        runs_done_in_config=runs_done_total,
        runs_done_total=runs_done_total,
    ).to_json()


def _figure():
    return {"data": [{"type": "scatter", "x": [0, 1], "y": [1, 2]}], "layout": {}}


def test_synced_traits_are_exactly_the_widget_interface():
    synced = set(NsightWidget.class_traits(sync=True))
    own = synced - {
        t for t in synced if t.startswith("_") or t in {"layout", "tabbable", "tooltip"}
    }
    assert own == TRAITS
    widget = NsightWidget()
    assert widget.status == "running"
    assert widget.progress == {}
    assert widget.chart_order == list(CHART_ORDER)
    with pytest.raises(Exception, match="status"):
        widget.status = "exploded"


def test_esm_and_css_are_the_built_bundle():
    # Built by `jlpm build:widget` (also by `jlpm build` and the hatch build hook).
    assert (STATIC_DIR / "widget.js").is_file()
    assert (STATIC_DIR / "widget.css").is_file()
    state = NsightWidget().get_state()  # what the front end receives
    assert state["_esm"] == (STATIC_DIR / "widget.js").read_text(encoding="utf-8")
    assert "export" in state["_esm"]
    assert "jp-nsightLab-Widget" in state["_css"]


def test_mimebundle_has_the_widget_view_and_the_static_fallback():
    widget = NsightWidget(
        session_id=4,
        status="completed",
        progress=_progress(runs_done_total=3, status="completed"),
        summary=[{"Annotation": "<script>alert(1)</script>", "AvgValue": 1.5}],
    )
    data, _ = widget._repr_mimebundle_(include=ALL_VIEWS)
    assert data[WIDGET_VIEW]["model_id"] == widget.model_id
    page = data["text/html"]
    assert "nsight-lab session 4: completed" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert" not in page
    assert "<script>alert" in data["text/plain"]  # plain text is not markup


def test_static_fallback_is_cached_until_a_trait_changes():
    widget = NsightWidget(session_id=1)
    first = widget.static_fallback()
    assert widget.static_fallback() is first
    widget.progress = _progress(runs_done_total=2)
    assert widget.static_fallback() is not first
    assert (
        "2 / 3 runs · config 1 / 1 · run 2 / 3"
        in (widget.static_fallback()["text/plain"])
    )


def test_the_widgets_fallback_is_the_progress_and_summary_without_kaleido(
    monkeypatch,
):
    # The widget is the in-flight view: its text/html (hosts without widgets) is
    # the progress line and the summary; the final bundle has the charts.
    monkeypatch.setitem(sys.modules, "kaleido", None)  # importing it fails
    figures = {name: _figure() for name in ("traffic", "duration", "clocks")}
    widget = NsightWidget(
        figures=figures,
        status="completed",
        progress=_progress(runs_done_total=3, status="completed"),
        summary=[{"Annotation": "sum", "AvgValue": 1.5}],
    )
    page = widget.static_fallback()["text/html"]
    assert "3 / 3 runs" in page
    assert "jp-nsightLab-Static-summary" in page
    assert "<img" not in page
    assert "<script" not in page


def test_any_failure_of_the_static_view_is_a_note_not_an_exception(monkeypatch):
    from nsight_lab.views import widget as widget_module

    def broken(**_kwargs):
        msg = "a\x00b <script>"
        raise ValueError(msg)

    monkeypatch.setattr(widget_module, "static_bundle", broken)
    widget = NsightWidget(session_id=9, status="completed")
    data, _ = widget._repr_mimebundle_(include=ALL_VIEWS)
    assert WIDGET_VIEW in data
    assert "no static view of this session here: ValueError" in data["text/plain"]
    assert "\x00" not in data["text/html"]
    assert "<script>" not in data["text/html"]
    assert "&lt;script&gt;" in data["text/html"]


def test_text_only_when_the_shell_shows_text_only():
    widget = NsightWidget(session_id=3, status="completed", figures={"d": _figure()})
    data, _ = widget._repr_mimebundle_(include=["text/plain"])
    assert data["text/plain"].startswith("nsight-lab session 3: completed")
    assert widget._fallback is None  # noqa: SLF001  (no charts exported for a terminal)


# -- a real kernel ---------------------------------------------------------------------
NOTEBOOK_CELLS = [
    """
    import torch
    from nsight_lab.backends.cpu import CpuTimerBackend
    from nsight_lab.views.live import WidgetView
    from nsight_lab.options import parse_options
    from nsight_lab.plan import make_plan
    from nsight_lab.contract.records import SessionInfo
    from nsight_lab.regions import annotate
    from nsight_lab.roofline.placement import Peaks
    from nsight_lab.runner import Runner
    from nsight_lab.roofline.workmodel import count_work
    """,
    """
    options = parse_options("--backend cpu --configs 128,512 --runs 4 --warmup 1")
    plan = make_plan(options, {"cpu": CpuTimerBackend().probe()})
    session = SessionInfo(id=42, status="completed", backend="cpu", created_at="x",
                          options=options.to_json(), configs=plan.configs)
    view = WidgetView(session_id=42, header="nsight-lab session 42: backend cpu",
                      session=session)

    def body(config):
        x = torch.ones(int(config["n"]))
        with annotate("scale <x2>"):
            x * 2
        with annotate("sum"):
            x.sum()

    measurement = CpuTimerBackend().open(options)
    runner = Runner(plan, measurement, 42, lambda batch: None,
                    on_progress=view.update, model_work=count_work)
    records = runner.run(body)
    measurement.close()
    peaks = Peaks(device="cpu", flops_per_s={"fp32": 1e11},
                  dram_bytes_per_s=2e10, source="test")
    view.finish(records, peaks)
    """,
]


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    pytest.importorskip("torch")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(textwrap.dedent(c)) for c in NOTEBOOK_CELLS]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    home = tmp_path_factory.mktemp("home")
    client = nbclient.NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(home)}},
        store_widget_state=True,
    )
    client.execute()
    path = home / "executed.ipynb"
    nbformat.write(nb, path)
    return path


def test_the_saved_output_is_the_final_bundle_without_the_widget(executed: Path):
    nb = nbformat.read(executed, as_version=4)
    outputs = [o for c in nb.cells for o in c.get("outputs", [])]
    # The live widget's output was replaced by the final bundle: no widget view,
    # so nothing to say "model not found" after reopening.
    assert not [o for o in outputs if WIDGET_VIEW in o.get("data", {})]
    # nbclient saves the last state of closed widgets too: ours was emptied before
    # closing, so the notebook carries neither its 1 MB ESM nor its live figures.
    states = nb.metadata["widgets"][WIDGET_STATE]["state"].values()
    ours = [
        s["state"]
        for s in states
        if s["state"].get("_anywidget_id") == "nsight_lab.views.widget.NsightWidget"
    ]
    assert len(ours) == 1
    assert ours[0]["_esm"] == CLOSED_ESM
    assert ours[0]["figures"] == {}
    assert executed.stat().st_size < 150_000
    finals = [o for o in outputs if MIME_TYPE in o.get("data", {})]
    assert len(finals) == 1
    data = finals[0]["data"]
    assert set(data) == {MIME_TYPE, "text/html", "text/plain"}
    state = data[MIME_TYPE]
    assert state["session_id"] == 42
    assert state["status"] == "completed"
    progress = state["progress"]
    assert progress["configs_total"] == 2
    assert progress["config_index"] == 1
    assert progress["runs_per_config"] == 4
    assert progress["runs_done_in_config"] == 4
    assert progress["runs_done_total"] == 8
    assert progress["runs_planned_total"] == 8
    assert progress["eta_s"] is None
    assert progress["text"].startswith("8 / 8 runs · config 2 / 2 · run 4 / 4")
    assert state["chart_order"] == list(CHART_ORDER)
    assert set(state["figures"]) == {"duration", "clocks", "roofline", "traffic"}
    duration = [
        t for t in state["figures"]["duration"]["data"] if t["mode"] == "lines+markers"
    ]
    assert sorted(len(t["x"]) for t in duration) == [4, 4, 4, 4]
    assert {r["Region"] for r in state["summary"]} == {"scale <x2>", "sum"}
    assert {r["n"] for r in state["summary"]} == {"128", "512"}
    assert "nsight-lab session 42: completed" in data["text/html"]
    # The quality headline ("! 1 region flagged: runs too spread ...") comes first
    # where a busy host spread the cpu runs; the session's line is next, or first.
    lines = data["text/plain"].splitlines()
    title = lines[1] if lines[0].startswith("! ") else lines[0]
    assert title.startswith("nsight-lab session 42: completed")


def _html(nb, config=None):
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    body, _ = HTMLExporter(config=Config(config or {})).from_notebook_node(nb)
    return body


def _has_fallback(body):
    medians = body.split('class="jp-nsightLab-Static-medians"')[1].split("</table>")[0]
    return (
        "nsight-lab session 42: completed" in body
        and "jp-nsightLab-Static-summary" in body
        and "scale &lt;x2&gt;" in body
        and medians.count("<div style=") == 4  # two regions x two configs
        and "%nsight show 42" in body
    )


def test_nbconvert_html_shows_the_static_fallback(executed):
    # nbconvert (and GitHub) render no nsight-lab type: the bundle's text/html.
    nb = nbformat.read(executed, as_version=4)
    body = _html(nb)
    assert _has_fallback(body)
    assert MIME_TYPE not in body


EXAMPLE = Path(__file__).parents[2] / "examples" / "quickstart.ipynb"


def test_the_example_notebook_runs_and_converts_with_its_fallback(tmp_path: Path):
    """examples/quickstart.ipynb in a real kernel on the CPU, then nbconvert to HTML."""
    pytest.importorskip("torch")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(EXAMPLE, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    outputs = [o for c in nb.cells for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert not [o for o in outputs if WIDGET_VIEW in o.get("data", {})]
    finals = [o for o in outputs if MIME_TYPE in o.get("data", {})]
    assert len(finals) == 2  # the sweep and the fusion profile
    assert all(": completed" in v["data"]["text/html"] for v in finals)
    body = _html(nb)
    assert body.count("jp-nsightLab-Static") >= 2
    assert "quickstart-sweep" in body or "matmul" in body
