"""What a cell's output says first: the quality headline, the flags, then the table.

Issue 30: the notebook's output put the summary table last, under paragraphs about
charts it could not draw, and said nothing up front when the numbers were not
usable; ``nsight-lab show`` already led with
:func:`~nsight_lab.analysis.validity.checks_headline`. The static page and its text
(:mod:`nsight_lab.views.fallback`) take their order from here, so both read alike:

1. the headline (a red line on the page), only when a region is flagged;
2. the session's title, progress line and backend line;
3. the answer: why it is slow (issue 31: the three findings that matter most of
   :mod:`nsight_lab.analysis.findings`, the rest folded: :func:`findings_html`,
   :func:`findings_lines`), the flags (what cannot be true, its cause, what to do)
   when any, then the summary table, then the notes that explain its cells (a
   TFLOP/s not shown, a launch-bound region);
4. the charts (the median bars), the counters and verdicts;
5. one line for the charts not drawn here: where the interactive ones are and
   what another backend would add (:func:`charts_line`), never a paragraph each.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from nsight_lab.analysis.validity import checks_headline
from nsight_lab.text.visible import printable

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "CHART_ADDED_BY",
    "FLAG_COLOUR",
    "NOTE_KINDS",
    "backend_line",
    "charts_line",
    "checks_html",
    "findings_html",
    "findings_lines",
    "headline",
    "not_drawn",
    "split_checks",
]

NOTE_KINDS = frozenset({"launch_bound", "not_modelled"})
"""Check kinds that explain a table cell (listed under the table); the others are
flags (listed above it)."""

CHART_ADDED_BY: dict[str, str] = {
    "duration": "durations (any backend, once runs are stored)",
    "clocks": "clocks and temperature (--backend events, cupti or pm)",
    "roofline": "roofline (a GPU backend, or %nsight peaks --cpu)",
    "traffic": "DRAM traffic (--backend ncu or pm, or ops with a work model)",
    "counters": "counters over time (--backend pm)",
}
"""What draws each chart kind, in a few words: the words of the lab's folded line
(``src/charts/titles.ts`` ``CHART_ADDED_BY``), so both say the same."""


def headline(checks: Sequence[Mapping[str, str]]) -> str:
    """The quality headline of ``checks`` ("" when none is flagged), as ``show``'s.

    The flags follow it at once here, not under the table.

    Raises:
        Nothing.
    """
    return checks_headline(checks, place="right below")


def split_checks(
    checks: Sequence[Mapping[str, str]],
) -> tuple[list[Mapping[str, str]], list[Mapping[str, str]]]:
    """``(flags, notes)``: the flags go above the table, the notes under it.

    Raises:
        Nothing.
    """
    flags = [e for e in checks if e.get("kind") not in NOTE_KINDS]
    notes = [e for e in checks if e.get("kind") in NOTE_KINDS]
    return flags, notes


def not_drawn(figures: Mapping[str, object]) -> list[str]:
    """The chart kinds with nothing to draw in ``figures`` (missing or no data).

    Kinds only: the per-rank charts are served to multi-rank sessions alone, so
    their absence says nothing.

    Raises:
        Nothing.
    """
    out = []
    for name in CHART_ADDED_BY:
        figure = figures.get(name)
        data = figure.get("data") if isinstance(figure, dict) else None
        if not data:
            out.append(name)
    return out


def charts_line(session_id: int, missing: Sequence[str]) -> str:
    """The one line about charts: where the interactive ones are, what is not drawn.

    Raises:
        Nothing.
    """
    where = (
        "Interactive charts: open the notebook in JupyterLab or Notebook 7 with "
        f"nsight-lab, or run %nsight show {session_id} where its store is"
    )
    added = [CHART_ADDED_BY[m] for m in missing if m in CHART_ADDED_BY]
    if not added:
        return where + "."
    return f"{where}. Not drawn here; another backend would add {'; '.join(added)}."


def backend_line(
    label: str, session_id: int, backend: str, reason: str, device: str | None
) -> str:
    """The output's backend line: ``<label> session N: backend B on D · why``.

    The reason follows a separator, never inside parentheses: a reason holds its
    own (``torch.cuda.is_available() is False``), and at ``0ab1fce`` the cpu
    backend's line nested them three deep.

    Raises:
        Nothing.
    """
    where = f" on {device}" if device else ""
    why = f" \u00b7 {reason}" if reason else ""
    return f"{label} session {session_id}: backend {backend}{where}{why}"


FLAG_COLOUR = "#d62728"
"""The colour of a number that cannot be true (the roofline's flagged outline)."""


def _escape(value: object) -> str:
    return html.escape(printable(value))


def checks_html(checks: Sequence[Mapping[str, str]]) -> str:
    """The checks as a list: a flag in red with its cause and what to do; a note.

    One condition of many regions is one item naming them (more than three: their
    count), as :func:`~nsight_lab.analysis.validity.checks_lines` says it: twelve
    throttled regions are one item above the table, not twelve.

    Raises:
        Nothing.
    """
    grouped: dict[tuple[str, ...], list[str]] = {}
    for e in checks:
        where = e.get("region", "") + (f" ({e['config']})" if e.get("config") else "")
        key = tuple(e.get(k, "") for k in ("kind", "text", "cause", "action"))
        grouped.setdefault(key, []).append(where)
    items = []
    for (kind, text, cause, action), places in grouped.items():
        short = len(places) <= 3  # noqa: PLR2004  (a list still read at a glance)
        where = _escape(", ".join(places) if short else f"{len(places)} regions")
        if kind in NOTE_KINDS:
            items.append(f"<li>{where}: {_escape(text)}</li>")
            continue
        items.append(
            f'<li><b style="color:{FLAG_COLOUR}">\u26a0 {where}: {_escape(text)}</b>'
            f"<br>cause: {_escape(cause)}<br>do: {_escape(action)}</li>"
        )
    if not items:
        return ""
    return f'<ul class="jp-nsightLab-Static-checks">{"".join(items)}</ul>'


_SURE = {"measured": "measured", "work model": "work model", "timing": "timing only"}


def _finding_parts(e: Mapping[str, Any]) -> tuple[str, list[str]]:
    """A finding entry's head line and detail lines (what to try, gain, basis)."""
    where = str(e.get("region") or "session")
    config = str(e.get("config") or "")
    head = f"{where}{f' ({config})' if config else ''}: {e.get('statement', '')}"
    details = [f"try: {e['action']}"] if e.get("action") else []
    if e.get("gain_basis"):
        details.append(f"gain: {e['gain_basis']}")
    sure = f"basis: {_SURE.get(str(e.get('confidence')), e.get('confidence'))}"
    if e.get("answered_by") and e.get("family") != "coverage":
        sure += f"; {e['answered_by']} would settle it"
    return head, [*details, sure]


def _split(
    findings: Sequence[Mapping[str, Any]],
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    top = [e for e in findings if e.get("top")]
    return top, [e for e in findings if not e.get("top")]


def findings_lines(findings: Sequence[Mapping[str, Any]], session_id: int) -> list[str]:
    """The findings that matter most as text, and how many more (``explain``).

    ``findings``: the view model's (``to_json()["findings"]``); those marked
    ``top`` are written out, the rest counted. [] for none.

    Raises:
        Nothing.
    """
    top, rest = _split(findings)
    if not top:
        return []
    more = f"; {len(rest)} more: nsight-lab explain {session_id}" if rest else ""
    lines = [f"Why it is slow{more}:"]
    for i, e in enumerate(top, start=1):
        head, details = _finding_parts(e)
        lines.append(f"{i}. {head}")
        lines += [f"   {d}" for d in details]
    return lines


def _finding_item(e: Mapping[str, Any]) -> str:
    head, details = _finding_parts(e)
    colour = f' style="color:{FLAG_COLOUR}"' if e.get("family") == "quality" else ""
    return (
        f"<li><b{colour}>{_escape(head)}</b><br>"
        + "<br>".join(_escape(d) for d in details)
        + "</li>"
    )


def findings_html(findings: Sequence[Mapping[str, Any]], session_id: int) -> str:
    """The findings that matter most as a list, the rest folded (``<details>``).

    Measurement-quality findings in the flags' red. "" for none.

    Raises:
        Nothing.
    """
    top, rest = _split(findings)
    if not top:
        return ""
    items = "".join(_finding_item(e) for e in top)
    folded = ""
    if rest:
        folded = (
            f"<details><summary>{len(rest)} more finding"
            f"{'s' if len(rest) != 1 else ''} (nsight-lab explain {session_id})"
            f'</summary><ol start="{len(top) + 1}">'
            + "".join(_finding_item(e) for e in rest)
            + "</ol></details>"
        )
    return (
        '<div class="jp-nsightLab-Static-findings"><b>Why it is slow</b>'
        f"<ol>{items}</ol>{folded}</div>"
    )
