"""Live progress of a profile in the cell output (text and HTML, updated in place).

The inline widget replaces this where widgets render; this display works in every
front end, including a terminal IPython and saved notebooks.
"""

from __future__ import annotations

import html
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nsight_lab.runner import Progress

MIN_UPDATE_INTERVAL_S = 0.1


def format_duration_ns(ns: float) -> str:
    """Return ``ns`` with a readable unit (ns, us, ms, s)."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3f} {unit}"
    return f"{ns:.0f} ns"


def describe(progress: Progress) -> str:
    """Return the one-line plain-text description of ``progress``."""
    parts = [
        f"config {progress.config_index + 1}/{progress.configs_total}",
        f"run {progress.runs_done}/{progress.runs_target}",
        f"elapsed {progress.elapsed_s:.1f} s",
    ]
    if progress.last_records:
        last = progress.last_records[-1]
        regions = ", ".join(
            f"{r.annotation} {format_duration_ns(r.duration_ns)}"
            for r in progress.last_records
            if r.run_index == last.run_index and r.config_index == last.config_index
        )
        parts.append(f"last: {regions}")
        tel = last.telemetry
        if tel.sm_clock_mhz is not None:
            parts.append(f"SM {tel.sm_clock_mhz:.0f} MHz")
        if tel.temperature_c is not None:
            parts.append(f"{tel.temperature_c:.0f} C")
        if tel.throttled:
            parts.append("THROTTLED (" + ", ".join(tel.clock_event_reasons) + ")")
    if progress.message:
        parts.append(progress.message)
    if progress.status != "running":
        parts.append(progress.status)
    return " | ".join(parts)


class ProgressDisplay:
    """An output area updated in place with the profile's progress."""

    def __init__(self, header: str) -> None:
        """Create the display (shown on the first update)."""
        self.header = header
        self._handle: Any = None
        self._last = 0.0

    def _bundle(self, text: str) -> dict[str, str]:
        line = html.escape(text)
        head = html.escape(self.header)
        return {
            "text/plain": f"{self.header}\n{text}",
            "text/html": (
                f'<div class="jp-nsightLab-Progress"><b>{head}</b><br>'
                f"<code>{line}</code></div>"
            ),
        }

    def update(self, progress: Progress, *, force: bool = False) -> None:
        """Show ``progress`` (at most every 0.1 s unless ``force``)."""
        now = time.monotonic()
        done = progress.status != "running"
        if not (force or done) and now - self._last < MIN_UPDATE_INTERVAL_S:
            return
        self._last = now
        from IPython.display import display

        bundle = self._bundle(describe(progress))
        if self._handle is None:
            self._handle = display(bundle, raw=True, display_id=True)
        else:
            self._handle.update(bundle, raw=True)
