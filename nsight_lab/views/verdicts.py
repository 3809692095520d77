"""The verdict table as text and as HTML (the CLI, ``text/plain`` and the static page).

Input is :meth:`nsight_lab.baselines.VerdictTable.to_json` (the same JSON the widget
and the sidebar render), so every view shows the same cells: region, metric, config,
both medians in their unit, the ratio with its interval, the verdict and its note.
Nothing is computed here but the formatting; text is returned raw (callers escape
it for their medium: :func:`nsight_lab.safetext.for_terminal`, HTML escaping).
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any

from nsight_lab.compare import CLOCK_TOLERANCE, config_text
from nsight_lab.host_speed import HOST_TOLERANCE

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "COLUMNS",
    "verdict_cells",
    "verdict_heading",
    "verdict_html",
    "verdict_text",
]

COLUMNS = ("region", "metric", "config", "median a", "median b", "b/a [95% CI]",
           "verdict", "note")  # fmt: skip
_DASH = "\u2013"


def _quantity(value: object, unit: str) -> str:
    from nsight_lab.views.fallback import format_duration

    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return _DASH
    if unit == "ns":
        return format_duration(float(value))
    return f"{value:.4g} {unit}".rstrip()


def _ratio(row: Mapping[str, Any]) -> str:
    ratio, low, high = row.get("ratio"), row.get("ci_low"), row.get("ci_high")
    if not isinstance(ratio, (int, float)) or not math.isfinite(ratio):
        return _DASH
    ci = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
    return f"{ratio:.3f}x{ci}"


def verdict_cells(row: Mapping[str, Any]) -> list[str]:
    """One row of the table as the cells of :data:`COLUMNS`."""
    unit = str(row.get("unit") or "")
    return [
        str(row.get("annotation", "")),
        str(row.get("metric", "")),
        config_text(dict(row.get("config") or {})),
        _quantity(row.get("median_a"), unit),
        _quantity(row.get("median_b"), unit),
        _ratio(row),
        str(row.get("verdict") or _DASH) + (" !" if row.get("flagged") else ""),
        str(row.get("note") or ""),
    ]


def verdict_heading(table: Mapping[str, Any]) -> str:
    """One line: what was compared with what, and the overall verdict."""
    overall = table.get("verdict") or {}
    named = f"baseline {table['baseline']} " if table.get("baseline") else ""
    threshold = float(table.get("threshold") or 0.0) * 100
    limit = f", threshold \u00b1{threshold:g} %" if threshold else ""
    word = overall.get("verdict") or "nothing judged"
    return (
        f"verdict: {word} (session {table.get('b')} against {named}session "
        f"{table.get('a')}{limit}): {overall.get('note', '')}"
    )


def verdict_text(table: Mapping[str, Any]) -> str:
    """The table as aligned plain text under its heading (raw: escape to print)."""
    lines = [verdict_heading(table)]
    scope = table.get("scope") or {}
    if scope.get("reason"):
        lines.append(f"nothing to compare: {scope['reason']}")
        return "\n".join(lines)
    if scope.get("note"):
        lines.append(str(scope["note"]))
    rows = [list(COLUMNS), *(verdict_cells(row) for row in table.get("rows") or [])]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS) - 1)]
    for cells in rows:
        text = "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=False))
        lines.append(f"{text}  {cells[-1]}".rstrip())
    if any(row.get("flagged") for row in table.get("rows") or []):
        lines.append(
            f"! flagged: SM clocks apart by more than {CLOCK_TOLERANCE * 100:g} %, "
            f"host speeds apart by more than {HOST_TOLERANCE * 100:g} % (cpu backend)"
            " or runs throttled; the row's note says which"
        )
    return "\n".join(lines)


def verdict_html(table: Mapping[str, Any]) -> str:
    """The table as an HTML ``<table>`` under its heading, every text escaped."""
    from nsight_lab.figures import printable

    def esc(value: object) -> str:
        return html.escape(printable(value))

    parts = [f"<p><b>{esc(verdict_heading(table))}</b></p>"]
    scope = table.get("scope") or {}
    if scope.get("reason"):
        parts.append(f"<p><i>nothing to compare: {esc(scope['reason'])}</i></p>")
        return '<div class="jp-nsightLab-Static-verdicts">' + "".join(parts) + "</div>"
    if scope.get("note"):
        parts.append(f"<p><i>{esc(scope['note'])}</i></p>")
    head = "".join(f"<th>{esc(c)}</th>" for c in COLUMNS)
    body = []
    for row in table.get("rows") or []:
        verdict = html.escape(str(row.get("verdict") or ""), quote=True)
        tds = "".join(f"<td>{esc(c)}</td>" for c in verdict_cells(row))
        body.append(f'<tr data-verdict="{verdict}">{tds}</tr>')
    parts.append(
        '<table class="jp-nsightLab-Static-verdicts-table">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )
    return '<div class="jp-nsightLab-Static-verdicts">' + "".join(parts) + "</div>"
