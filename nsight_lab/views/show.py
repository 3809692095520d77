"""The results table as terminal text: one row per region that leads with the answer.

The cells are the view model's (:mod:`nsight_lab.viewmodel.summary`: the region
table and the counter table, the strings every view shows, from running statistics
over every run); here they are laid out for a terminal:

- **Text** (:func:`summary_text`): both tables fitted to a terminal's width,
  leaving out the least needed columns first, or every column (``wide``), then the
  view model's checks (:func:`nsight_lab.analysis.validity.checks_lines`): each
  number that cannot be true with its cause and what to do, launch-bound notes.
"""

from __future__ import annotations

import re
import textwrap
from typing import TYPE_CHECKING, Any

from nsight_lab.analysis.validity import checks_headline, checks_lines
from nsight_lab.contract.registry import times_the_host
from nsight_lab.roofline.peaks import known_peaks, measured_peaks
from nsight_lab.text.safe import for_terminal
from nsight_lab.viewmodel.roofs import cache_counterpart
from nsight_lab.viewmodel.stored import stored_model
from nsight_lab.viewmodel.summary_cells import COUNTER_COLUMNS, REGION_COLUMNS
from nsight_lab.views.answer import findings_lines

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nsight_lab.store.run_store import RunStore

__all__ = [
    "COUNTER_COLUMNS",
    "REGION_COLUMNS",
    "abbreviate",
    "session_text",
    "summary_text",
]

_LEFT_OUT_FIRST = ("FLOPs", "Bytes", "Runs", "SM clock", "Throttled", "RSD", "Bound")
"""Region columns left out, in this order, while the table is wider than the room."""


def _width(columns: Sequence[str], lines: Sequence[Sequence[str]]) -> int:
    widths = [
        max(len(c), *(len(line[i]) for line in lines)) for i, c in enumerate(columns)
    ]
    return sum(widths) + 2 * (len(columns) - 1)


def _grid(columns: Sequence[str], lines: Sequence[Sequence[str]]) -> list[str]:
    table = [list(columns), *(list(line) for line in lines)]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in table
    ]


def _wrapped(text: str, width: int | None) -> list[str]:
    return textwrap.wrap(text, width) if width else [text]


def _fit_counters(columns: list[str], cells: list[list[str]], width: int) -> None:
    """Fit the counter table to ``width``.

    Runs, then RSD, are left out; then the metric names are shortened in their
    middle at word boundaries (:func:`abbreviate`: ``smsp__sass_…_fadd_pred_on.sum``),
    never inside a word (issue 30: ``smsp__sass_thread_inst_e…uted_op_...``).
    """
    for name in ("Runs", "RSD"):
        if _width(columns, cells) <= width or name not in columns:
            continue
        i = columns.index(name)
        columns.pop(i)
        for line in cells:
            line.pop(i)
    over = _width(columns, cells) - width
    if over <= 0 or "Metric" not in columns:
        return
    i = columns.index("Metric")
    longest = max(len(line[i]) for line in cells)
    keep = max(12, longest - over)
    for line in cells:
        line[i] = abbreviate(line[i], keep)


_WORD = re.compile(r"[^_.]+|[_.]+")
"""A metric name's words (``smsp``, ``pred``) and separators (``__``, ``.``)."""


def abbreviate(name: str, width: int) -> str:
    """``name`` in at most ``width`` characters, cut at word boundaries only.

    Whole words are kept from both ends, the tail first (``_op_fadd_pred_on.sum``
    tells counters apart, ``smsp__sass`` does not), the middle replaced by ``…``.
    A name with no room for even its first and last word keeps those and runs over:
    a whole word is readable, half of one is not.

    Raises:
        Nothing.
    """
    if len(name) <= width:
        return name
    words = _WORD.findall(name)
    head, tail = [words[0]], [words[-1]]
    room = width - 1 - len(words[0]) - len(words[-1])
    lo, hi = 1, len(words) - 2
    take_tail = True
    while lo <= hi:
        word = words[hi] if take_tail else words[lo]
        if len(word) > room:
            if not take_tail:
                break
            take_tail = False
            continue
        room -= len(word)
        if take_tail:
            tail.insert(0, word)
            hi -= 1
        else:
            head.append(word)
            lo += 1
        take_tail = not take_tail
    return "".join(head) + "\u2026" + "".join(tail)


def summary_text(
    regions: Sequence[Mapping[str, str]],
    counters: Mapping[str, Any] | None = None,
    *,
    width: int | None = None,
    wide: bool = False,
    checks: Sequence[Mapping[str, str]] = (),
) -> str:
    """Both tables as aligned text ("" when there is nothing), fitted to ``width``.

    The region table leaves out :data:`_LEFT_OUT_FIRST` until it fits, saying which;
    zero counters are left out with a count (``wide`` keeps both); then ``checks``.

    Raises:
        Nothing.
    """
    lines: list[str] = []
    if regions:
        columns = list(dict.fromkeys(key for row in regions for key in row))
        cells = [[row.get(c, "") for c in columns] for row in regions]
        dropped: list[str] = []
        for name in _LEFT_OUT_FIRST:
            if wide or width is None or _width(columns, cells) <= width:
                break
            if name in columns:
                i = columns.index(name)
                columns.pop(i)
                for line in cells:
                    line.pop(i)
                dropped.append(name)
        lines.extend(_grid(columns, cells))
        if dropped:
            lines.extend(
                _wrapped(
                    f"(left out to fit {width} columns: {', '.join(dropped)}; "
                    "--wide shows them)",
                    width,
                )
            )
        lines.extend(checks_lines(checks))
    table = counters or {}
    rows = list(table.get("rows") or [])
    shown = [r for r in rows if wide or not r.get("zero")]
    if shown:
        columns = list(table.get("columns") or [])
        cells = [list(r["cells"]) for r in shown]
        if not wide and width is not None:
            _fit_counters(columns, cells, width)
        lines.append("")
        lines.extend(_grid(columns, cells))
    hidden = len(rows) - len(shown)
    if hidden:
        lines.extend(
            _wrapped(
                f"{hidden} counter row{'s' if hidden != 1 else ''} that read 0 in "
                "every run not shown (--wide shows them)",
                width,
            )
        )
    return "\n".join(lines)


def session_text(
    store: RunStore, session_id: int, *, width: int, wide: bool = False
) -> str:
    """What a session is, its status and error, and its tables, as text.

    ``nsight-lab show`` and ``%nsight show`` print it: a line that says the session
    (name, status, backend, device, runs, regions), its error if it failed, the
    findings that matter most (issue 31; ``nsight-lab explain`` gives them all),
    then :func:`summary_text` fitted to ``width`` unless ``wide``; control
    characters of names escaped. The runs are read a page at a time
    (:func:`~nsight_lab.viewmodel.stored.stored_model`): bounded memory at any size.

    Raises:
        StoreError: No session ``session_id`` in the store.
    """
    session = store.get_session(session_id)
    on_host = times_the_host(session.backend)
    peaks = known_peaks(store, session.device, cpu=on_host)
    model = stored_model(store, session, peaks=peaks, figures=False)
    model.attainable = measured_peaks(store, session.device, cpu=on_host)
    model.counterpart = cache_counterpart(store, session)
    tables = model.tables()
    runs = store.runs_done(session_id)[0]
    regions = len({g.annotation for g in model.regions})
    title = f"session {session.id}" + (f" {session.name}" if session.name else "")
    facts = [
        session.status,
        session.backend,
        session.device or "",
        f"{runs} of {session.runs_planned} runs",
        f"{regions} region{'s' if regions != 1 else ''}",
    ]
    headline = checks_headline(tables["checks"])
    lines = [headline] if headline else []  # first: before any number is read
    lines.append(f"{title}: {', '.join(f for f in facts if f)}")
    if session.error:
        lines.append(f"error: {session.error}")
    lines += findings_lines(tables["findings"], session.id)
    text = summary_text(
        tables["summary"],
        tables["counters"],
        width=width,
        wide=wide,
        checks=tables["checks"],
    )
    lines.append(text or "no runs stored")
    out = []
    for line in "\n".join(lines).splitlines():
        wrapped = [line] if wide else textwrap.wrap(line, width) or [""]
        out += [for_terminal(part) for part in wrapped]
    return "\n".join(out)
