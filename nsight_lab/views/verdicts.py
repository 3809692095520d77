"""The verdict table as text and HTML (the CLI, the static page).

Input is :meth:`nsight_lab.analysis.baselines.VerdictTable.to_json` (the same JSON the
widget and the sidebar render), so every view shows the same cells: region, metric,
config, both medians in their unit, the change, the ratio with its interval, the
verdict and its note, formatted once by
:func:`nsight_lab.analysis.verdict_cells.verdict_cells` (re-exported here with
:func:`tolerances` and :func:`legend_text`); the served rows carry those cells
(``cells``) so that the front end only shows them.
Deterministic rows (the work model's counts, the same value in every run) have
nothing to judge: the text and HTML leave them out with a count, the sidebar folds
them behind a toggle. Text is returned raw (callers escape it for their medium:
:func:`nsight_lab.text.safe.for_terminal`, HTML escaping).
"""

from __future__ import annotations

import html
import textwrap
from typing import TYPE_CHECKING, Any

from nsight_lab.analysis.rules import CLOCK_TOLERANCE, config_text
from nsight_lab.analysis.verdict_cells import (
    CELL_KEYS,
    legend_text,
    pct_text,
    tolerances,
    verdict_cells,
)
from nsight_lab.host_speed import HOST_TOLERANCE
from nsight_lab.text.visible import printable

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "CELL_KEYS",
    "COLUMNS",
    "legend_text",
    "tolerances",
    "verdict_cells",
    "verdict_heading",
    "verdict_html",
    "verdict_text",
]

COLUMNS = ("region", "metric", "config", "verdict", "change", "b/a [95% CI]",
           "median a", "median b", "note")  # fmt: skip
"""The columns every view shows, in order: the answer first, the note last (it is
long)."""
DEFAULT_WIDTH = 100
"""Text width when none is given."""


def _cells(row: Mapping[str, Any]) -> dict[str, str]:
    cells = row.get("cells")
    if isinstance(cells, dict) and all(key in cells for key in CELL_KEYS):
        return {key: str(cells[key]) for key in CELL_KEYS}
    return verdict_cells(row)


def verdict_heading(table: Mapping[str, Any]) -> str:
    """One line: what was compared with what, and the overall verdict.

    Raises:
        Nothing.
    """
    overall = table.get("verdict") or {}
    named = f"baseline {table['baseline']} " if table.get("baseline") else ""
    threshold = float(table.get("threshold") or 0.0) * 100
    limit = f", threshold \u00b1{threshold:g} %" if threshold else ""
    word = overall.get("verdict") or "nothing judged"
    return (
        f"verdict: {word} (session {table.get('b')} against {named}session "
        f"{table.get('a')}{limit}): {overall.get('note', '')}"
    )


def _shown(table: Mapping[str, Any], *, show_all: bool) -> tuple[list[Any], int]:
    rows = list(table.get("rows") or [])
    if show_all:
        return rows, 0
    kept = [row for row in rows if not row.get("folded")]
    return kept, len(rows) - len(kept)


def _folded_line(folded: int) -> str:
    return (
        f"{folded} deterministic row{'s' if folded != 1 else ''} not shown "
        "(work-model counts or the same value in every run: nothing to judge)"
    )


def verdict_text(
    table: Mapping[str, Any], *, width: int | None = None, show_all: bool = False
) -> str:
    """The table as aligned plain text under its heading (raw: escape to print).

    The columns but the note fit in ``width`` (the config, the metric, the ratio's
    interval, the change and last the medians are left out, in that order, until they
    do, and a line says which); the notes follow the table, wrapped to ``width``, each
    once with the rows it is about. Deterministic rows are left out with a count unless
    ``show_all``.

    Raises:
        Nothing.
    """
    width = max(40, width or DEFAULT_WIDTH)
    wrap = textwrap.TextWrapper(width=width, subsequent_indent="    ")
    lines = wrap.wrap(verdict_heading(table))
    scope = table.get("scope") or {}
    if scope.get("reason"):
        lines.append(f"nothing to compare: {scope['reason']}")
        return "\n".join(lines)
    if scope.get("note"):
        lines.extend(wrap.wrap(str(scope["note"])))
    rows, folded = _shown(table, show_all=show_all)
    cells = [_cells(row) for row in rows]
    keys = list(CELL_KEYS[:-1])
    if all(c["config"] == config_text({}) for c in cells):
        keys.remove("config")
    left_out = _fit(keys, cells, width)
    headers = [COLUMNS[CELL_KEYS.index(k)] for k in keys]
    grid = [headers, *([c[k] for k in keys] for c in cells)]
    widths = [max(len(line[i]) for line in grid) for i in range(len(keys))]
    for line in grid:
        text = "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True))
        lines.append(text.rstrip())
    if left_out:
        names = ", ".join(COLUMNS[CELL_KEYS.index(k)] for k in left_out)
        lines.extend(wrap.wrap(f"(left out to fit {width} columns: {names})"))
    if folded:
        lines.extend(wrap.wrap(_folded_line(folded)))
    lines.extend(_notes(cells, wrap))
    if any(row.get("flagged") for row in rows):
        lines.extend(
            wrap.wrap(
                f"\u26a0 flagged: SM clocks apart by more than "
                f"{pct_text(CLOCK_TOLERANCE)}, host speeds apart by more than "
                f"{pct_text(HOST_TOLERANCE)} (cpu backend) or runs throttled; the "
                "row's note says which"
            )
        )
    return "\n".join(lines)


def _notes(cells: list[dict[str, str]], wrap: textwrap.TextWrapper) -> list[str]:
    """Each note once, after the rows it is about (``every row`` when all)."""
    notes: dict[str, list[str]] = {}
    for c in cells:
        if c["note"]:
            notes.setdefault(c["note"], []).append(f"{c['region']} {c['metric']}")
    lines = ["notes:"] if notes else []
    for note, where in notes.items():
        rows = "every row" if len(where) == len(cells) > 1 else ", ".join(where)
        lines.extend(wrap.wrap(f"  {rows}: {note}"))
    return lines


_DROPPED_FIRST = ("config", "metric", "ratio", "change", "median_b", "median_a")
"""Columns left out, in this order, while the table is wider than the terminal.

The medians go last: they are what was measured, and an 80-column terminal lost
both (issue 30); the ratio's interval goes before the change, which says the same
ratio in fewer columns, and the verdict already holds the interval's judgement."""


def _fit(keys: list[str], cells: list[dict[str, str]], width: int) -> list[str]:
    """Remove columns from ``keys`` until the table fits ``width``; those removed."""

    def table_width() -> int:
        widths = [
            max(len(COLUMNS[CELL_KEYS.index(k)]), *(len(c[k]) for c in cells))
            for k in keys
        ]
        return sum(widths) + 2 * (len(keys) - 1)

    removed = []
    for key in _DROPPED_FIRST:
        if table_width() <= width:
            break
        if key in keys:
            keys.remove(key)
            removed.append(key)
    return removed


def verdict_html(table: Mapping[str, Any]) -> str:
    """The table as an HTML ``<table>`` under its heading, every text escaped.

    Deterministic rows are left out with a count.

    Raises:
        Nothing.
    """

    def esc(value: object) -> str:
        return html.escape(printable(value))

    parts = [f"<p><b>{esc(verdict_heading(table))}</b></p>"]
    scope = table.get("scope") or {}
    if scope.get("reason"):
        parts.append(f"<p><i>nothing to compare: {esc(scope['reason'])}</i></p>")
        return '<div class="jp-nsightLab-Static-verdicts">' + "".join(parts) + "</div>"
    if scope.get("note"):
        parts.append(f"<p><i>{esc(scope['note'])}</i></p>")
    rows, folded = _shown(table, show_all=False)
    head = "".join(f"<th>{esc(c)}</th>" for c in COLUMNS)
    body = []
    for row in rows:
        verdict = html.escape(str(row.get("verdict") or ""), quote=True)
        cells = _cells(row)
        tds = "".join(f"<td>{esc(cells[key])}</td>" for key in CELL_KEYS)
        body.append(f'<tr data-verdict="{verdict}">{tds}</tr>')
    parts.append(
        '<table class="jp-nsightLab-Static-verdicts-table">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )
    if folded:
        parts.append(f"<p><i>{esc(_folded_line(folded))}</i></p>")
    return '<div class="jp-nsightLab-Static-verdicts">' + "".join(parts) + "</div>"
