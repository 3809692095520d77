"""The inline widget's static fallback: self-contained HTML for hosts without widgets.

nbconvert, GitHub and other viewers that render no widgets show the ``text/html`` of
the widget's MIME bundle instead. It holds the session's progress line, the summary
table and the same figures the widget draws, as inline PNG images (through
:func:`nsight_lab.figures.write_png`); where PNG export is unavailable, a note says
what is missing. Every text from the profile is HTML-escaped, with control
characters made visible (:func:`nsight_lab.figures.printable`). No exception escapes:
a chart that cannot be drawn becomes a note, and :func:`failure_bundle` is the page
when anything else fails.
"""

from __future__ import annotations

import base64
import contextlib
import html
import logging
import math
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

__all__ = [
    "failure_bundle",
    "static_bundle",
    "static_text",
    "summary_text",
]

logger = logging.getLogger(__name__)

_CSS = (
    "<style>"
    ".jp-nsightLab-Static table{border-collapse:collapse;margin:6px 0}"
    ".jp-nsightLab-Static th,.jp-nsightLab-Static td"
    "{padding:2px 8px;border-bottom:1px solid #ccc;text-align:left}"
    ".jp-nsightLab-Static td.num{text-align:right}"
    ".jp-nsightLab-Static img{max-width:100%;height:auto}"
    "</style>"
)


def _escape(value: object) -> str:
    """``value`` as HTML text: markup escaped, control characters made visible."""
    from nsight_lab.figures import printable

    return html.escape(printable(value))


def _plain(value: object) -> str:
    """``value`` as plain text, control characters made visible (newlines kept)."""
    from nsight_lab.figures import printable

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


def _cell(value: Any) -> str:  # noqa: ANN401  (a JSON value)
    if value is None:
        return ""
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:.4g}"
    return str(value)


def _columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return list(dict.fromkeys(key for row in rows for key in row))


def summary_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """Return the summary table as aligned plain text ("" for no rows)."""
    if not rows:
        return ""
    columns = _columns(rows)
    cells = [columns, *([_cell(row.get(c)) for c in columns] for row in rows)]
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
            value = row.get(column)
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
            attr = ' class="num"' if numeric else ""
            tds.append(f"<td{attr}>{_escape(_cell(value))}</td>")
        body.append(f"<tr>{''.join(tds)}</tr>")
    return (
        '<table class="jp-nsightLab-Static-summary">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


@contextlib.contextmanager
def _one_browser() -> Iterator[None]:
    """Export every chart through one headless browser (kaleido's sync server).

    Without it each PNG starts a browser of its own (seconds each). Nothing happens
    when kaleido is missing or its server already runs (someone else's, left alone).
    """
    try:
        # kaleido ships no py.typed.
        import kaleido  # type: ignore[import-untyped]
    except ImportError:
        yield
        return
    server = getattr(kaleido, "_global_server", None)
    if server is None or server.is_running():
        yield
        return
    with warnings.catch_warnings():
        # plotly passes per-call options the shared server ignores; they are defaults.
        warnings.filterwarnings("ignore", message="The kopts argument is ignored")
        try:
            kaleido.start_sync_server(silence_warnings=True)
        except Exception as exc:  # noqa: BLE001  (no browser: write_png says why)
            logger.info("[nsight-lab] kaleido server did not start: %s", exc)
            yield
            return
        try:
            yield
        finally:
            kaleido.stop_sync_server(silence_warnings=True)


def _charts_png(figures: Mapping[str, Any], names: Sequence[str]) -> list[str] | None:
    """Each figure as an ``<img>`` with an inline PNG; None when export is unavailable.

    A chart that fails on its own (a figure plotly.js or kaleido rejects) is a note
    in its place; the other charts are still drawn.
    """
    import plotly.graph_objects as go

    from nsight_lab.figures import StaticExportError, write_png

    out = []
    drawn = 0
    with tempfile.TemporaryDirectory(prefix="nsight-lab-") as tmp, _one_browser():
        for name in names:
            path = Path(tmp) / f"{name}.png"
            try:
                write_png(go.Figure(figures[name]), path)
                data = base64.b64encode(path.read_bytes()).decode("ascii")
            except StaticExportError as exc:
                if exc.unavailable and drawn == 0:
                    logger.info("[nsight-lab] no static charts: %s", exc)
                    return None
                out.append(_chart_note(name, exc))
                continue
            except Exception as exc:  # noqa: BLE001  (any failure: a note instead)
                out.append(_chart_note(name, exc))
                continue
            drawn += 1
            out.append(
                f'<img alt="{_escape(name)} chart" '
                f'data-chart="{_escape(name)}" '
                f'src="data:image/png;base64,{data}">'
            )
    return out


def _chart_note(name: str, exc: BaseException) -> str:
    logger.info("[nsight-lab] chart %r not saved as an image: %r", name, exc)
    return (
        f'<p data-chart-note="{_escape(name)}"><i>{_escape(name)} chart not saved as '
        f"an image: {_escape(_first_line(exc))}</i></p>"
    )


def static_text(
    *,
    session_id: int,
    status: str,
    progress: Mapping[str, Any],
    message: str,
    summary: Sequence[Mapping[str, Any]],
) -> str:
    """Return the ``text/plain`` view of a widget's state (as :func:`static_bundle`).

    Raises:
        Nothing.
    """
    title = f"nsight-lab session {session_id}: {status}"
    line = str(progress.get("text", ""))
    parts = (title, line, message, summary_text(summary))
    return _plain("\n".join(part for part in parts if part))


def static_bundle(  # noqa: PLR0913  (the widget's traits, keyword-only)
    *,
    session_id: int,
    status: str,
    progress: Mapping[str, Any],
    message: str,
    figures: Mapping[str, Any],
    summary: Sequence[Mapping[str, Any]],
) -> dict[str, str]:
    """Return ``text/plain`` and ``text/html`` views of a widget's state.

    Charts are drawn only once the session ended (a running session's fallback is the
    progress line; its output is replaced when the session ends).

    Args:
        session_id: The store's session id.
        status: running, completed, failed or interrupted.
        progress: The widget's ``progress`` trait
            (:meth:`nsight_lab.views.progress.ProgressInfo.to_json`); its ``text``
            is the progress line.
        message: Notes and the last progress message.
        figures: Chart name -> plotly figure JSON.
        summary: Rows of the summary table.

    Returns:
        The MIME bundle entries.

    Raises:
        Exception: Only what building the page itself raises (the widget catches
            it and shows :func:`failure_bundle`); a chart that cannot be exported as
            PNG, for whatever reason, is replaced by a note.
    """
    title = f"nsight-lab session {session_id}: {status}"
    line = str(progress.get("text", ""))
    plain = static_text(
        session_id=session_id,
        status=status,
        progress=progress,
        message=message,
        summary=summary,
    )
    parts = [
        _CSS,
        f"<p><b>{_escape(title)}</b>"
        + (f"<br><code>{_escape(line)}</code>" if line else "")
        + "</p>",
    ]
    if message:
        parts.append(f"<pre>{_escape(message)}</pre>")
    parts.append(_summary_html(summary))
    if status != "running" and figures:
        from nsight_lab.figures import ordered_charts

        names = ordered_charts(figures)
        charts = _charts_png(figures, names)
        if charts is None:
            # Inline plotly.js would add megabytes per cell and still draw nothing on
            # GitHub (no scripts run there); say what is missing instead.
            charts = [
                (
                    "<p><i>charts not saved as images here: static export needs "
                    "kaleido and a Chrome/Chromium browser: pip install kaleido</i></p>"
                )
            ]
        parts.extend(f"<div>{chart}</div>" for chart in charts)
    body = "".join(parts)
    return {
        "text/plain": plain,
        "text/html": f'<div class="jp-nsightLab-Static">{body}</div>',
    }
