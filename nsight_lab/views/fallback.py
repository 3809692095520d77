"""The static view of a session: self-contained HTML for hosts without nsight-lab.

A cell's final output (:mod:`nsight_lab.views.bundle`) carries this HTML as
``text/html`` beside nsight-lab's own MIME type: hosts without the lab extension
(GitHub, nbconvert, Colab, VS Code) show it. It holds the session's progress line,
the counter table (counters and ``--derive`` metrics, those that read zero in every
run left out with a count), a bar per region and config of the median duration (the
view model's
:class:`~nsight_lab.viewmodel.summary.MedianBar`: over every run, from its running
statistics), the summary table, the checks under it (each number that cannot be
true in red with its cause and what to do, launch-bound notes:
:mod:`nsight_lab.analysis.validity`), and a note saying where the interactive charts
are. The order is :mod:`nsight_lab.views.answer`'s: the answer first (the quality
headline, the flags, the table), then the charts.

Nothing here runs a browser or exports an image: the page is plain text, built in a
few milliseconds (``benchmarks/final_bundle.py`` measures it), so a cell whose
output nobody sees that way does not pay for it. Bars are ``<div>`` elements with
inline ``style`` widths and colours: JupyterLab's sanitizer (for untrusted
notebooks) keeps those but drops ``<style>`` and ``<svg>``, so the numbers beside
them stay readable wherever styles are stripped.

Every text from the profile is HTML-escaped, with control characters made visible
(:func:`nsight_lab.figures.printable`). No exception escapes the bundle builder:
:func:`failure_bundle` is the page when anything fails.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any, TypeGuard

from nsight_lab.analysis.validity import checks_lines
from nsight_lab.figures.theme import PALETTE
from nsight_lab.text.units import format_duration
from nsight_lab.text.visible import printable
from nsight_lab.views.answer import (
    FLAG_COLOUR,
    charts_line,
    checks_html,
    findings_html,
    findings_lines,
    headline,
    split_checks,
)
from nsight_lab.views.verdicts import verdict_html, verdict_text

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nsight_lab.contract.records import JsonScalar
    from nsight_lab.viewmodel.summary import MedianBar

__all__ = [
    "failure_bundle",
    "format_duration",
    "static_bundle",
    "static_text",
    "summary_text",
]

_CSS = (
    "<style>"
    ".jp-nsightLab-Static table{border-collapse:collapse;margin:6px 0}"
    ".jp-nsightLab-Static th,.jp-nsightLab-Static td"
    "{padding:2px 8px;border-bottom:1px solid rgba(128,128,128,.4);text-align:left}"
    ".jp-nsightLab-Static td.num{text-align:right;white-space:nowrap}"
    "</style>"
)
"""Table rules; a sanitizer that drops ``<style>`` leaves plain, readable tables."""

UNDEFINED = "\u2013"
"""An en dash: what a duration that is not a number reads (as in the front end)."""
BAR_WIDTH_PX = 240
"""Width of the longest median bar."""


def _escape(value: object) -> str:
    """``value`` as HTML text: markup escaped, control characters made visible."""
    return html.escape(printable(value))


def _plain(value: object) -> str:
    """``value`` as plain text, control characters made visible (newlines kept)."""
    return printable(value)


def _first_line(exc: BaseException, limit: int = 200) -> str:
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 1] + "…"


def failure_bundle(session_id: int, status: str, exc: BaseException) -> dict[str, str]:
    """The static view when building it failed: one line saying so.

    Raises:
        Nothing.
    """
    title = f"nsight-lab session {session_id}: {status}"
    note = f"no static view of this session here: {type(exc).__name__}: " + (
        _first_line(exc)
    )
    return {
        "text/plain": _plain(f"{title}\n{note}"),
        "text/html": (
            f'<div class="jp-nsightLab-Static"><p><b>{_escape(title)}</b><br>'
            f"<i>{_escape(note)}</i></p></div>"
        ),
    }


UNIT_COLUMNS = ("AvgValue", "StdDev", "MinValue", "MaxValue")
"""Summary columns whose values are in the row's ``Unit``: shown with it, as the
front end's ``formatSummaryCell`` does, so the tables have no ``Unit`` column."""
_UNIT = "Unit"


def _number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _cell(value: Any) -> str:  # noqa: ANN401  (a JSON value)
    if value is None:
        return ""
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:.4g}"
    return str(value)


def _summary_cell(row: Mapping[str, Any], column: str) -> str:
    """One summary value as text: durations in their unit (``21.56 ms``)."""
    value, unit = row.get(column), row.get(_UNIT)
    if column in UNIT_COLUMNS and _number(value) and isinstance(unit, str) and unit:
        if unit == "ns":
            return format_duration(value)
        return f"{_cell(value)} {unit}"
    return _cell(value)


def _columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every key in first-seen order, but ``Unit`` (the value cells carry it)."""
    return [
        key for key in dict.fromkeys(key for row in rows for key in row) if key != _UNIT
    ]


def summary_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """Return the summary table as aligned plain text ("" for no rows)."""
    if not rows:
        return ""
    columns = _columns(rows)
    cells = [columns, *([_summary_cell(row, c) for c in columns] for row in rows)]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join(
        "  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True))
        for line in cells
    )


def _summary_html(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return ""
    columns = _columns(rows)
    head = "".join(f"<th>{_escape(c)}</th>" for c in columns)
    body = []
    for row in rows:
        tds = []
        for column in columns:
            attr = ' class="num"' if _number(row.get(column)) else ""
            tds.append(f"<td{attr}>{_escape(_summary_cell(row, column))}</td>")
        body.append(f"<tr>{''.join(tds)}</tr>")
    return (
        '<table class="jp-nsightLab-Static-summary">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def _config_text(config: Mapping[str, JsonScalar]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())


def _median_bars(bars: Sequence[MedianBar]) -> str:
    """A table of the median duration per region and config, each with a bar.

    ``bars`` in their order (the view model's: regions as they first ran, configs
    in order); one colour per region (:data:`nsight_lab.figures.PALETTE`, as the
    duration chart's first traces). The longest bar is :data:`BAR_WIDTH_PX` wide;
    the others are to scale.
    """
    if not bars:
        return ""
    regions = list(dict.fromkeys(bar.region for bar in bars))
    top = max((b.median_ns for b in bars if math.isfinite(b.median_ns)), default=0.0)
    with_config = len({bar.config_index for bar in bars}) > 1
    rows = []
    for bar in bars:
        median = bar.median_ns
        share = median / top if top > 0 and math.isfinite(median) else 0.0
        colour = PALETTE[regions.index(bar.region) % len(PALETTE)]
        config = _escape(_config_text(bar.config)) if with_config else ""
        rows.append(
            f"<tr><td>{_escape(bar.region)}</td>"
            + (f"<td>{config}</td>" if with_config else "")
            + f'<td class="num">{_escape(format_duration(median))}</td>'
            f'<td class="num">{bar.runs}</td>'
            f'<td style="width:{BAR_WIDTH_PX}px"><div style="width:'
            f"{max(share * BAR_WIDTH_PX, 1):.0f}px;height:0.8em;"
            f'background-color:{colour}"></div></td></tr>'
        )
    head = "<th>region</th>" + ("<th>config</th>" if with_config else "")
    return (
        '<table class="jp-nsightLab-Static-medians">'
        '<caption style="text-align:left"><b>Median duration per region'
        + (" and config" if with_config else "")
        + f"</b></caption><thead><tr>{head}<th>median</th><th>runs</th><th></th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def static_text(  # noqa: PLR0913  (the session's state, keyword-only)
    *,
    session_id: int,
    status: str,
    progress: Mapping[str, Any],
    message: str,
    summary: Sequence[Mapping[str, Any]],
    verdicts: Mapping[str, Any] | None = None,
    checks: Sequence[Mapping[str, str]] = (),
    findings: Sequence[Mapping[str, Any]] = (),
) -> str:
    """Return the ``text/plain`` view of a session (as :func:`static_bundle`).

    Raises:
        Nothing.
    """
    title = f"nsight-lab session {session_id}: {status}"
    line = str(progress.get("text", ""))
    judged = verdict_text(verdicts) if verdicts else ""
    flags, notes = split_checks(checks)
    parts = (
        headline(checks),
        title,
        line,
        message,
        "\n".join(findings_lines(findings, session_id)),
        "\n".join(checks_lines(flags)),
        summary_text(summary),
        "\n".join(checks_lines(notes)),
        judged,
    )
    return _plain("\n".join(part for part in parts if part))


def _counters_html(counters: Mapping[str, Any] | None) -> str:
    """The counter table (the view model's), less the rows that read zero throughout."""
    rows = list((counters or {}).get("rows") or [])
    shown = [row for row in rows if not row.get("zero")]
    hidden = len(rows) - len(shown)
    if not rows:
        return ""
    columns = list((counters or {}).get("columns") or [])
    head = "".join(f"<th>{_escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_escape(cell)}</td>" for cell in row["cells"]) + "</tr>"
        for row in shown
    )
    note = (
        f"<p><i>{hidden} counter row{'s' if hidden != 1 else ''} that read 0 in every "
        "run not shown</i></p>"
        if hidden
        else ""
    )
    table = (
        '<table class="jp-nsightLab-Static-counters">'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        if shown
        else ""
    )
    return table + note


def static_bundle(  # noqa: PLR0913  (the session's state, keyword-only)
    *,
    session_id: int,
    status: str,
    progress: Mapping[str, Any],
    message: str,
    summary: Sequence[Mapping[str, Any]],
    bars: Sequence[MedianBar] = (),
    verdicts: Mapping[str, Any] | None = None,
    counters: Mapping[str, Any] | None = None,
    checks: Sequence[Mapping[str, str]] = (),
    missing_charts: Sequence[str] = (),
    findings: Sequence[Mapping[str, Any]] = (),
) -> dict[str, str]:
    """Return ``text/plain`` and ``text/html`` views of a session.

    In :mod:`nsight_lab.views.answer`'s order: the answer first, then the charts.

    Args:
        session_id: The store's session id.
        status: running, completed, failed or interrupted.
        progress: :meth:`nsight_lab.contract.progress.Progress.to_json`; its
            ``text`` is the progress line.
        message: Notes and the last progress message.
        summary: Rows of the summary table.
        bars: The median duration per region and config
            (:func:`nsight_lab.viewmodel.summary.median_bars`), drawn as bars with
            one line on the charts (none while running).
        verdicts: The verdict table against a baseline
            (:meth:`nsight_lab.analysis.baselines.VerdictTable.to_json`), shown under
            the summary; ``None`` without ``--baseline``.
        counters: The counter table (``to_json()["counters"]``), in the HTML.
        checks: The view model's checks (``to_json()["checks"]``): the flags
            above the summary, the notes under it.
        missing_charts: The chart kinds with nothing to draw
            (:func:`nsight_lab.views.answer.not_drawn`), named in the charts line.
        findings: The view model's findings (``to_json()["findings"]``): those
            marked ``top`` first, above the flags, the rest folded.

    Returns:
        The MIME bundle entries.

    Raises:
        Exception: Only what building the page itself raises (the caller shows
            :func:`failure_bundle` instead).

    Size: eleven keyword-only inputs, documented one per line; the body is the
    text page and the HTML page.
    """
    plain = static_text(
        session_id=session_id,
        status=status,
        progress=progress,
        message=message,
        summary=summary,
        verdicts=verdicts,
        checks=checks,
        findings=findings,
    )
    tables = (summary, counters, verdicts, checks, findings)
    body = _html_body(session_id, status, progress, message, bars, tables)
    if bars:
        body += f"<p><i>{_escape(charts_line(session_id, missing_charts))}</i></p>"
    return {
        "text/plain": plain,
        "text/html": f'<div class="jp-nsightLab-Static">{body}</div>',
    }


def _html_body(  # noqa: PLR0913, PLR0917  (static_bundle's inputs)
    session_id: int,
    status: str,
    progress: Mapping[str, Any],
    message: str,
    bars: Sequence[MedianBar],
    tables: tuple[
        Sequence[Mapping[str, Any]],
        Mapping[str, Any] | None,
        Mapping[str, Any] | None,
        Sequence[Mapping[str, str]],
        Sequence[Mapping[str, Any]],
    ],
) -> str:
    """The ``text/html`` view's body: headline, title, findings, flags, table, ...

    ``tables``: the summary rows, the counters, the verdicts, checks and findings.
    """
    summary, counters, verdicts, checks, findings = tables
    title = f"nsight-lab session {session_id}: {status}"
    line = str(progress.get("text", ""))
    flags, notes = split_checks(checks)
    first = headline(checks)
    parts = [
        _CSS,
        f'<p style="color:{FLAG_COLOUR}"><b>{_escape(first)}</b></p>' if first else "",
        f"<p><b>{_escape(title)}</b>"
        + (f"<br><code>{_escape(line)}</code>" if line else "")
        + "</p>",
    ]
    if message:
        parts.append(f"<pre>{_escape(message)}</pre>")
    parts.append(findings_html(findings, session_id))
    parts.append(checks_html(flags))
    parts.append(_summary_html(summary))
    parts.append(checks_html(notes))
    if bars:
        parts.append(_median_bars(bars))
    parts.append(_counters_html(counters))
    if verdicts:
        parts.append(verdict_html(verdicts))
    return "".join(parts)
