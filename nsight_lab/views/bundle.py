"""The final output of a ``%%nsight`` cell: a plain MIME bundle, drawn with no kernel.

While a profile runs, the cell shows the live widget (:mod:`nsight_lab.views.live`).
When it ends, :meth:`~nsight_lab.views.live.WidgetView.finish` replaces that output
with :func:`final_bundle`'s data and closes the widget:

- :data:`MIME_TYPE` (``application/vnd.nsight-lab.session+json``): the session as
  JSON (:func:`session_json`): its final figures, the chart order, the progress
  line, the message, the quality headline and the checks, the summary rows and
  the verdicts, the session id: the
  widget's view model's (:meth:`nsight_lab.viewmodel.SessionViewModel.to_json`,
  what the sidebar shows of the same session). The lab extension's mime renderer
  (``src/mime/``) draws it with the widget's own code, in JupyterLab 4 and
  Notebook 7, with or without a kernel: a saved notebook shows every chart when
  reopened.
- ``text/html``: the static page of :mod:`nsight_lab.views.fallback` (the quality
  headline and the flags first, the summary table, then median bars per region and
  config, and one line on the charts not drawn: :mod:`nsight_lab.views.answer`)
  for hosts without the lab extension: GitHub, nbconvert, Colab, VS Code.
- ``text/plain``: the summary as text (terminals, ``print`` of the output).

**The widget view is not kept in the final bundle.** A saved notebook holds no
widget state unless the user turns it on, so a kept
``application/vnd.jupyter.widget-view+json`` would read "Error displaying widget:
model not found" after reopening in every host that ranks it first (JupyterLab
without this extension, VS Code); without it those hosts show the static page, and
Colab and VS Code show the same page in the live kernel, where they cannot render
our type (their charts are then the median bars, not plotly; the interactive charts
are in JupyterLab and Notebook 7). Closing the widget also keeps its state (the
figures again) out of a notebook saved with widget state, and frees the kernel's
copy. The renderer is registered ahead of the widget renderer anyway (rank -20 vs.
-10), so a bundle that carried both would still draw ours in JupyterLab.

Size: floats of the figures are rounded to :data:`FIGURE_DIGITS` significant digits
(what a hover or an axis shows: durations in µs to 1 ns below 1 s) and nothing is
held twice; a 3-config x 30-run session of four regions is well under 150 KB
(``tests/views/test_bundle.py``).
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

from nsight_lab.figures import CHART_ORDER
from nsight_lab.views.answer import headline, not_drawn
from nsight_lab.views.fallback import failure_bundle, static_bundle

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nsight_lab.viewmodel.summary import MedianBar

__all__ = [
    "BUNDLE_VERSION",
    "FIGURE_DIGITS",
    "MIME_TYPE",
    "final_bundle",
    "session_json",
    "session_link",
]

logger = logging.getLogger(__name__)

MIME_TYPE = "application/vnd.nsight-lab.session+json"
"""nsight-lab's session JSON; ``src/mime/types.ts`` names the same type."""
BUNDLE_VERSION = 1
"""Version of :func:`session_json`'s shape; the renderer refuses newer ones."""
FIGURE_DIGITS = 6
"""Significant digits kept of every float of the figures."""


def _rounded(value: Any, digits: int) -> Any:  # noqa: ANN401  (a JSON value)
    """``value`` with every float rounded to ``digits`` significant digits.

    Integers, booleans, strings and ``None`` are kept as they are; a float that
    rounds to a whole number stays a float (plotly reads both alike).
    """
    if isinstance(value, float):
        if not math.isfinite(value) or value == 0:
            return value
        return float(f"{value:.{digits}g}")
    if isinstance(value, dict):
        return {key: _rounded(item, digits) for key, item in value.items()}
    if isinstance(value, list):
        return [_rounded(item, digits) for item in value]
    return value


def session_link(session_id: int, session_uuid: str) -> str:
    """The "Open in nsight-lab" link of a session: its id, and its UUID to check.

    ``#nsight-lab/sessions/<id>?uuid=<uuid>``. Ids are numbers of one store, so the
    lab opens the session only when its store holds that UUID under that id, and
    says which it is otherwise (``src/widget/link.ts`` ``checkSessionLink``).
    """
    link = f"#nsight-lab/sessions/{session_id}"
    return f"{link}?uuid={session_uuid}" if session_uuid else link


def session_json(  # noqa: PLR0913  (the session's final state, keyword-only)
    *,
    session_id: int,
    status: str,
    progress: Mapping[str, Any],
    message: str,
    figures: Mapping[str, Any],
    summary: Sequence[Mapping[str, Any]],
    sidebar_link: str = "",
    verdicts: Mapping[str, Any] | None = None,
    findings: Sequence[Mapping[str, Any]] = (),
    checks: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """Return the :data:`MIME_TYPE` data of a session (the lab renderer's input).

    Keys are the widget's traits of the same names (``src/mime/types.ts``
    ``ISessionBundle``), plus ``version`` (:data:`BUNDLE_VERSION`),
    ``summary_columns`` (the summary's columns in order), ``headline`` and
    ``checks`` (said first, above the summary).

    Args:
        session_id: The store's session id.
        status: completed, failed or interrupted.
        progress: :meth:`nsight_lab.contract.progress.Progress.to_json`.
        message: The header and why the session ended so (control characters
            already made visible).
        figures: Chart name -> plotly figure JSON (the view model's).
        summary: Rows of the summary table (the view model's).
        sidebar_link: The session's link in the lab extension's sidebar.
        verdicts: The verdict table against ``--baseline``
            (:meth:`nsight_lab.analysis.baselines.VerdictTable.to_json`), drawn under
            the summary; ``None`` (sent as null) without one.
        findings: Why it is slow (the view model's ``findings``, ranked; ``top``
            marks the ones shown first).
        checks: The view model's checks (flags and notes, with their configs):
            the renderer says them first, under ``headline``
            (:func:`~nsight_lab.views.answer.headline`, "" when none is flagged).

    Raises:
        Nothing.
    """
    return {
        "version": BUNDLE_VERSION,
        "session_id": session_id,
        "status": status,
        "progress": dict(progress),
        "message": message,
        "chart_order": list(CHART_ORDER),
        "figures": _rounded(dict(figures), FIGURE_DIGITS),
        "summary": [dict(row) for row in summary],
        # A saved notebook's JSON has its keys sorted (nbformat writes it so): the
        # columns' order cannot ride on the rows' key order.
        "summary_columns": list(dict.fromkeys(key for row in summary for key in row)),
        "sidebar_link": sidebar_link,
        "verdicts": None if verdicts is None else dict(verdicts),
        "findings": [dict(f) for f in findings],
        "headline": headline(checks),
        "checks": [dict(c) for c in checks],
    }


def final_bundle(  # noqa: PLR0913  (the session's final state, keyword-only)
    *,
    session_id: int,
    status: str,
    progress: Mapping[str, Any],
    message: str,
    figures: Mapping[str, Any],
    summary: Sequence[Mapping[str, Any]],
    bars: Sequence[MedianBar] = (),
    sidebar_link: str = "",
    verdicts: Mapping[str, Any] | None = None,
    counters: Mapping[str, Any] | None = None,
    checks: Sequence[Mapping[str, str]] = (),
    findings: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """Return the cell's final MIME bundle: our type, ``text/html``, ``text/plain``.

    Args:
        session_id: The store's session id.
        status: completed, failed or interrupted.
        progress: :meth:`nsight_lab.contract.progress.Progress.to_json`.
        message: The header and why the session ended so.
        figures: Chart name -> plotly figure JSON (the view model's).
        summary: Rows of the summary table (the view model's).
        bars: The median duration per region and config (the static page's bars:
            :func:`nsight_lab.viewmodel.summary.median_bars`).
        sidebar_link: The session's link in the lab extension's sidebar.
        verdicts: The verdict table against ``--baseline``, under the summary.
        counters: The counter table, on the static page only (the sidebar has it).
        checks: The view model's checks: the headline and the flags first, on the
            static page and in our type.
        findings: The view model's findings: the top ones on the static page (the
            rest folded), every one in our type (the lab draws them).

    Raises:
        Nothing: a static page that cannot be built is one line saying why.

    Size: eleven keyword-only inputs, documented one per line; the body is the
    static page and our type.
    """
    try:
        static = static_bundle(
            session_id=session_id,
            status=status,
            progress=progress,
            message=message,
            summary=summary,
            bars=bars,
            verdicts=verdicts,
            counters=counters,
            checks=checks,
            missing_charts=not_drawn(figures),
            findings=findings,
        )
    except Exception as exc:  # noqa: BLE001  (a display must never raise)
        logger.warning("[nsight-lab] static fallback failed: %r", exc)
        static = failure_bundle(session_id, status, exc)
    data = session_json(
        session_id=session_id,
        status=status,
        progress=progress,
        message=message,
        figures=figures,
        summary=summary,
        sidebar_link=sidebar_link,
        verdicts=verdicts,
        findings=findings,
        checks=checks,
    )
    return {MIME_TYPE: data, **static}
