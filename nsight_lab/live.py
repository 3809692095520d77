"""Drive the inline widget from a running profile.

:class:`WidgetView` has the interface of :class:`nsight_lab.progress.ProgressDisplay`
(``update(progress, *, force=False)``), so the magic hands its ``update`` to the
runner as ``on_progress``. It accumulates the runner's records, recomputes the duration
and clock figures (at most every 0.1 s) and, in :meth:`WidgetView.finish`, adds the
summary table, the roofline and the byte-traffic chart. The figures come from
:mod:`nsight_lab.figures`, the one chart implementation.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any, cast

from nsight_lab.figures import (
    clocks_figure,
    duration_figure,
    figure_json,
    roofline_figure,
    traffic_figure,
)
from nsight_lab.records import record_to_json
from nsight_lab.widget import NsightWidget

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd
    from IPython.display import DisplayHandle

    from nsight_lab.records import RunRecord, SessionStatus
    from nsight_lab.roofline import Peaks, Placement
    from nsight_lab.runner import Progress

__all__ = ["MAX_POINTS", "MIN_UPDATE_INTERVAL_S", "SUMMARY_COLUMNS", "WidgetView"]

MIN_UPDATE_INTERVAL_S = 0.1
"""At most ten trait updates a second while runs arrive."""
MAX_POINTS = 2000
"""Records kept in the ``records`` trait, and points per duration trace."""
SUMMARY_COLUMNS = (
    "Annotation",
    "Metric",
    "AvgValue",
    "StdDev",
    "MinValue",
    "MaxValue",
    "NumRuns",
    "Unit",
    "RelativeStdDevPct",
    "StableMeasurement",
    "ComputeClock",
    "TemperatureC",
    "ThrottledRuns",
)
"""Columns of the results DataFrame shown in the summary table (with the params)."""


def _json_value(value: Any) -> str | int | float | bool | None:  # noqa: ANN401
    """A DataFrame cell as a JSON scalar (NaN and infinities as None)."""
    if value is None:
        return None
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return str(value)


def summary_rows(frame: pd.DataFrame | None) -> list[dict[str, Any]]:
    """Rows of the summary table from the results DataFrame.

    The columns are those of :data:`SUMMARY_COLUMNS` the frame has, with the config
    parameters (the columns between ``Metric`` and ``AvgValue``) after ``Metric``.

    Raises:
        Nothing.
    """
    if frame is None or frame.empty:
        return []
    names = [str(c) for c in frame.columns]
    params: list[str] = []
    if "Metric" in names and "AvgValue" in names:
        params = names[names.index("Metric") + 1 : names.index("AvgValue")]
    head = [c for c in SUMMARY_COLUMNS[:2] if c in names]
    tail = [c for c in SUMMARY_COLUMNS[2:] if c in names]
    columns = head + params + tail
    return [
        {column: _json_value(row[column]) for column in columns}
        for row in frame.to_dict("records")
    ]


class WidgetView:
    """Shows one profile session in an :class:`NsightWidget` in the cell output."""

    def __init__(
        self,
        *,
        session_id: int = 0,
        header: str = "",
        sidebar_link: str = "",
        max_points: int = MAX_POINTS,
        show: bool = True,
    ) -> None:
        """Create the widget (displayed on the first update when ``show``).

        Args:
            session_id: The store's session id.
            header: Text shown above the progress (backend, device, notes).
            sidebar_link: The session's link in the lab extension's sidebar, if any.
            max_points: Records kept in the widget, and points per duration trace.
            show: Display the widget in the cell output (False in tests).
        """
        self.widget = NsightWidget(session_id=session_id, sidebar_link=sidebar_link)
        self.header = header
        self.max_points = max_points
        self.records: list[RunRecord] = []
        self._keys: set[tuple[int, int, str]] = set()
        self._show = show
        self._handle: DisplayHandle | None = None
        self._last = -math.inf
        self.widget.message = header

    # -- progress ---------------------------------------------------------------------
    def update(self, progress: Progress, *, force: bool = False) -> None:
        """Take ``progress``; redraw at most every 0.1 s unless ``force`` or done.

        Records arrive in ``progress.last_records``; each is kept once, even when
        an update is not drawn.
        """
        self._add(progress.last_records)
        now = time.monotonic()
        done = progress.status != "running"
        if not (force or done) and now - self._last < MIN_UPDATE_INTERVAL_S:
            return
        self._last = now
        figures = dict(self.widget.figures)
        if self.records:
            figures.update(self._live_figures())
        message = "\n".join(m for m in (self.header, progress.message) if m)
        with self.widget.hold_sync():
            self.widget.configs_total = progress.configs_total
            self.widget.config_index = progress.config_index
            self.widget.runs_done = progress.runs_done
            self.widget.runs_target = progress.runs_target
            self.widget.elapsed_s = progress.elapsed_s
            self.widget.eta_s = None if done else _eta_s(progress)
            self.widget.message = message
            self.widget.records = [record_to_json(r) for r in self._kept()]
            self.widget.figures = figures
            if done:
                self.widget.status = cast("SessionStatus", progress.status)
        self._display()

    def finish(  # noqa: PLR0913  (the session's results, keyword-only after records)
        self,
        frame: pd.DataFrame | None,
        records: Sequence[RunRecord],
        placements: Sequence[Placement] = (),
        peaks: Peaks | None = None,
        *,
        status: SessionStatus = "completed",
        message: str = "",
    ) -> None:
        """Show the final state: every figure and the summary table.

        Args:
            frame: The results DataFrame (None when the session failed before one).
            records: Every record of the session.
            placements: Regions placed under the roofline (``place_records``).
            peaks: The device's peaks; no roofline without them.
            status: How the session ended.
            message: Why it ended so, for a failed or interrupted session.
        """
        self.records = []
        self._keys = set()
        self._add(records)
        figures: dict[str, dict[str, Any]] = {}
        if self.records:
            figures.update(self._live_figures())
        if placements and peaks is not None:
            figures["roofline"] = figure_json(roofline_figure(placements, peaks))
        if placements:
            figures["traffic"] = figure_json(traffic_figure(placements))
        with self.widget.hold_sync():
            self.widget.eta_s = None
            if self.widget.runs_target == 0 and self.records:
                self.widget.runs_done = len(
                    {(r.config_index, r.run_index) for r in self.records}
                )
            self.widget.message = "\n".join(m for m in (self.header, message) if m)
            self.widget.records = [record_to_json(r) for r in self._kept()]
            self.widget.figures = figures
            self.widget.summary = summary_rows(frame)
            self.widget.status = status
        self._display(refresh=True)

    # -- internals --------------------------------------------------------------------
    def _add(self, batch: Sequence[RunRecord]) -> None:
        for record in batch:
            key = (record.config_index, record.run_index, record.annotation)
            if key not in self._keys:
                self._keys.add(key)
                self.records.append(record)

    def _kept(self) -> list[RunRecord]:
        return self.records[-self.max_points :] if self.max_points else []

    def _live_figures(self) -> dict[str, dict[str, Any]]:
        return {
            "duration": figure_json(duration_figure(self.records, self.max_points)),
            "clocks": figure_json(clocks_figure(self.records)),
        }

    def _display(self, *, refresh: bool = False) -> None:
        """Show the widget once; ``refresh`` re-sends its bundle (static fallback)."""
        if not self._show:
            return
        from IPython.display import display

        if self._handle is None:
            self._handle = display(self.widget, display_id=True)
        elif refresh:
            self._handle.update(self.widget)


def _eta_s(progress: Progress) -> float | None:
    per_config = max(progress.runs_target, 1)
    total = max(progress.configs_total, 1) * per_config
    done = progress.config_index * per_config + min(progress.runs_done, per_config)
    if done <= 0:
        return None
    return max(progress.elapsed_s * (total - done) / done, 0.0)
