"""The results table as people read it: one row per region that leads with the answer.

Input is the results DataFrame (:mod:`nsight_lab.results`); output is text cells, so
the sidebar, the inline widget, a cell's static page and ``nsight-lab show`` print
the same strings (formatted once, by :mod:`nsight_lab.text.units`; the front end only
shows them).

- **Regions** (:func:`region_rows`): per region and config, the median duration,
  its RSD, the achieved GB/s and TFLOP/s, % of roof and the bound first; then the
  runs, the SM clock, throttled runs and where the bytes and FLOPs come from
  (measured or modelled).
- **Counters** (:func:`counter_table`): every other metric per region (Nsight
  Compute or PM counters, derived values), its median and RSD. Rows whose counter
  read zero in every run (an ncu roofline set has ~9 such counters per region)
  are flagged ``zero``: the sidebar folds them behind a toggle, the text leaves
  them out with a count.
- **Text** (:func:`summary_text`): both tables fitted to a terminal's width,
  leaving out the least needed columns first, or every column (``wide``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from nsight_lab.analysis.compare import metric_label, metric_unit
from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.text.units import (
    UNDEFINED,
    format_count,
    format_duration,
    format_number,
    format_percent,
    format_quantity,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pandas as pd

    from nsight_lab.store.run_store import RunStore

__all__ = [
    "COUNTER_COLUMNS",
    "REGION_COLUMNS",
    "counter_table",
    "region_rows",
    "session_text",
    "summary_text",
]

REGION_COLUMNS = (
    "Region", "Duration", "RSD", "GB/s", "TFLOP/s", "% of roof", "Bound", "Runs",
    "SM clock", "Throttled", "Bytes", "FLOPs",
)  # fmt: skip
"""The region table's columns (the config's parameters follow ``Region``):
``Duration`` is the median, ``Bytes``/``FLOPs`` say measured or modelled."""
COUNTER_COLUMNS = ("Region", "Metric", "Median", "RSD", "Runs")
"""The counter table's columns (the config's parameters follow ``Region``)."""
_LEFT_OUT_FIRST = ("FLOPs", "Bytes", "Runs", "SM clock", "Throttled", "RSD", "Bound")
"""Region columns left out, in this order, while the table is wider than the room."""


def _cell(row: Mapping[str, Any], column: str) -> Any:  # noqa: ANN401  (a cell)
    """The row's value, ``None`` for a missing one (NaN, ``pd.NA``)."""
    import pandas as pd

    value = row.get(column)
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _params(frame: pd.DataFrame) -> list[str]:
    names = [str(c) for c in frame.columns]
    if "Metric" in names and "AvgValue" in names:
        return names[names.index("Metric") + 1 : names.index("AvgValue")]
    return []


def _throttled(row: Mapping[str, Any]) -> str:
    n = _cell(row, "ThrottledRuns")
    runs = _cell(row, "NumRuns")
    if n is None:
        return UNDEFINED
    if not n:
        return "none"
    return f"{int(n)} of {int(runs)}" if runs else str(int(n))


def _clock(row: Mapping[str, Any]) -> str:
    mhz = _cell(row, "SMClockMHz")
    return UNDEFINED if mhz is None else f"{mhz:.0f} MHz"


def _source(row: Mapping[str, Any], column: str) -> str:
    text = _cell(row, column)
    return str(text) if text else UNDEFINED


def _duration_column(row: Mapping[str, Any]) -> str:
    """``Duration``; on the cpu backend ``Duration (host timer)``: it is no GPU's."""
    label = metric_label(TIME_METRIC, str(_cell(row, "Backend") or ""))
    return "Duration (host timer)" if "host" in label else "Duration"


def region_rows(frame: pd.DataFrame | None) -> list[dict[str, str]]:
    """The region table: one row of text cells per region and config.

    Keys: ``Region``, the config's parameters, then :data:`REGION_COLUMNS` but
    ``Region``, less those with nothing in any row (a cpu session's roofline, an
    ncu session's NVML clock). Values are display strings (an en dash where nothing
    was measured).

    Raises:
        Nothing.
    """
    if frame is None or frame.empty or "Metric" not in frame:
        return []
    params = _params(frame)
    timed = frame[frame["Metric"] == TIME_METRIC]
    rows: list[dict[str, str]] = []
    for record in timed.to_dict("records"):
        row = {str(k): v for k, v in record.items()}
        out = {"Region": _text(row.get("Annotation", ""))}
        out.update({p: _text(_cell(row, p)) for p in params})
        if "Rank" in row:  # a multi-rank session: the span row, then each rank's
            rank = _cell(row, "Rank")
            out["Rank"] = "span" if rank is None or rank < 0 else str(int(rank))
            out["Device"] = _text(_cell(row, "Device"))
        normalized = row.get("Normalized")
        duration = (
            f"{format_number(_cell(row, 'MedianValue'))}x {normalized}"
            if isinstance(normalized, str) and normalized
            else format_duration(_cell(row, "MedianValue"))
        )
        out.update(
            {
                _duration_column(row): duration,
                "RSD": format_percent(_cell(row, "RelativeStdDevPct")),
                "GB/s": format_number(_cell(row, "AchievedGBps")),
                "TFLOP/s": format_number(_cell(row, "AchievedTFLOPs")),
                "% of roof": format_percent(_cell(row, "PctOfRoof")),
                "Bound": _source(row, "Bound"),
                "Runs": format_count(_cell(row, "NumRuns")),
                "SM clock": _clock(row),
                "Throttled": _throttled(row),
                "Bytes": _source(row, "BytesSource"),
                "FLOPs": _source(row, "FLOPsSource"),
            }
        )
        rows.append(out)
    return _without_empty_columns(rows, keep={"Region", *params})


def _without_empty_columns(
    rows: list[dict[str, str]], keep: set[str]
) -> list[dict[str, str]]:
    """``rows`` less the columns that read :data:`UNDEFINED` in every row.

    A cpu session without the host's roofs has no GB/s, TFLOP/s, roof or clock: its
    table is the region, the duration, the RSD and the runs, not a row of dashes.
    """
    if not rows:
        return rows
    empty = {
        column
        for column in rows[0]
        if column not in keep
        and not column.startswith("Duration")
        and all(row.get(column) == UNDEFINED for row in rows)
    }
    return [{k: v for k, v in row.items() if k not in empty} for row in rows]


def _text(value: object) -> str:
    if value is None:
        return UNDEFINED
    from nsight_lab.figures import printable  # plotly: loaded when needed only

    return printable(value)


def counter_table(frame: pd.DataFrame | None) -> dict[str, Any]:
    """The counter table: every metric but the duration, per region and config.

    ``{"columns": [...], "rows": [{"cells": [...], "zero": bool}], "zero": n}``:
    cells are display strings in the columns' order; ``zero`` marks a counter that
    read zero in every run (folded away by the views), and the table's ``zero``
    counts them.

    Raises:
        Nothing.
    """
    params = _params(frame) if frame is not None else []
    columns = ["Region", *params, *COUNTER_COLUMNS[1:]]
    if frame is None or frame.empty or "Metric" not in frame:
        return {"columns": columns, "rows": [], "zero": 0}
    rows = []
    for record in frame[frame["Metric"] != TIME_METRIC].to_dict("records"):
        row = {str(k): v for k, v in record.items()}
        metric = metric_label(str(row.get("Metric", "")), "")
        unit = _cell(row, "Unit")
        unit = str(unit) if isinstance(unit, str) else metric_unit(metric)
        median = _cell(row, "MedianValue")
        zero = median == 0 and not _cell(row, "MaxValue")
        cells = [
            _text(row.get("Annotation", "")),
            *(_text(_cell(row, p)) for p in params),
            _text(metric),
            format_quantity(median, unit),
            format_percent(_cell(row, "RelativeStdDevPct")),
            format_count(_cell(row, "NumRuns")),
        ]
        rows.append({"cells": cells, "zero": bool(zero)})
    return {"columns": columns, "rows": rows, "zero": sum(r["zero"] for r in rows)}


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
    import textwrap

    return textwrap.wrap(text, width) if width else [text]


def _fit_counters(columns: list[str], cells: list[list[str]], width: int) -> None:
    """Fit the counter table to ``width``.

    Runs, then RSD, are left out; then the metric names are shortened in their
    middle (``smsp__sass_…_pred_on.sum``).
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
        name = line[i]
        if len(name) > keep:
            head = (keep - 1) // 2
            line[i] = name[:head] + "\u2026" + name[len(name) - (keep - 1 - head) :]


def summary_text(
    regions: Sequence[Mapping[str, str]],
    counters: Mapping[str, Any] | None = None,
    *,
    width: int | None = None,
    wide: bool = False,
) -> str:
    """Both tables as aligned text ("" when there is nothing).

    Fitted to ``width`` columns: the region table leaves out :data:`_LEFT_OUT_FIRST`
    in order until it fits, and says which; all-zero counters are left out with a
    count. ``wide`` keeps every column and every counter.

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
    (name, status, backend, device, runs, regions), its error if it failed, then
    :func:`summary_text` fitted to ``width`` unless ``wide``; control characters of
    names escaped.

    Raises:
        StoreError: No session ``session_id`` in the store.
    """
    import textwrap

    from nsight_lab.cli.history import session_results
    from nsight_lab.results import summary_counters, summary_rows
    from nsight_lab.text.safe import for_terminal

    frame = session_results(store, session_id)
    session = store.get_session(session_id)
    runs = store.runs_done(session_id)[0]
    regions = len(set(frame["Annotation"])) if not frame.empty else 0
    title = f"session {session.id}" + (f" {session.name}" if session.name else "")
    facts = [
        session.status,
        session.backend,
        session.device or "",
        f"{runs} of {session.runs_planned} runs",
        f"{regions} region{'s' if regions != 1 else ''}",
    ]
    lines = [f"{title}: {', '.join(f for f in facts if f)}"]
    if session.error:
        lines.append(f"error: {session.error}")
    text = summary_text(
        summary_rows(frame), summary_counters(frame), width=width, wide=wide
    )
    lines.append(text or "no runs stored")
    out = []
    for line in "\n".join(lines).splitlines():
        wrapped = [line] if wide else textwrap.wrap(line, width) or [""]
        out += [for_terminal(part) for part in wrapped]
    return "\n".join(out)
