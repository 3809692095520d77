"""Drive the inline widget from a running profile, on a fixed budget.

:class:`WidgetView`'s ``update(progress, records, *, force=False)`` is the runner's
``on_progress`` hook (:data:`~nsight_lab.contract.progress.ProgressHook`). While runs
arrive it appends them to the duration and clock figures
(:class:`nsight_lab.figures.LiveFigures`: the new points only, sent as the widget's
``append`` trait, never a rebuild from every record), at most :data:`MAX_UPDATES_PER_S`
times a second and only while the time spent in updates stays within
:data:`UPDATE_BUDGET` of the wall time since the view was created (measured:
:attr:`WidgetView.update_s`). The runs go into the widget's
:class:`~nsight_lab.viewmodel.SessionViewModel` (:attr:`WidgetView.model`) as they
arrive, and :meth:`WidgetView.finish` reads the final state from it, as the sidebar
reads the same session: its figures (the roofline and byte-traffic charts too), its
summary rows and verdicts, and the static page's median bars. The progress (the
``progress`` trait) is the collector's :class:`~nsight_lab.contract.progress.Progress`
as it came; the widget's front end only renders what it is sent.

**The final charts show each trace's latest points.** The duration and clock
charts are the live ones: each trace its latest ``max_points`` points (the CI band
and the axes over every run), as the live view and the sidebar show them, not every
run thinned evenly as before the view model; the roofline, traffic, counter and
per-rank charts are drawn from each region's latest runs
(:data:`nsight_lab.viewmodel.session.WORK_RUNS`). The summary's statistics are over
every run (:mod:`nsight_lab.viewmodel.summary`).

The widget is the in-flight view only. At the end, :meth:`WidgetView.finish`
replaces the cell's output with the final bundle of :mod:`nsight_lab.views.bundle`
(nsight-lab's session JSON for the lab extension, a static page, text), which a
saved notebook shows again with no kernel, and closes the widget (why no widget
view stays in that bundle: the :mod:`~nsight_lab.views.bundle` docstring).
"""

from __future__ import annotations

import json
import math
import time
from typing import TYPE_CHECKING, Any, cast

from nsight_lab.contract.points import MAX_POINTS
from nsight_lab.contract.progress import make_progress
from nsight_lab.figures import LiveFigures, printable
from nsight_lab.viewmodel.session import SessionViewModel
from nsight_lab.viewmodel.summary import median_bars
from nsight_lab.views.bundle import final_bundle
from nsight_lab.views.widget import NsightWidget

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from IPython.display import DisplayHandle

    from nsight_lab.contract.progress import Progress
    from nsight_lab.contract.records import RunRecord, SessionInfo, SessionStatus
    from nsight_lab.results.derive import DeriveSpec
    from nsight_lab.roofline.placement import Peaks

__all__ = [
    "CLOSED_ESM",
    "MAX_UPDATES_PER_S",
    "MIN_UPDATE_INTERVAL_S",
    "UPDATE_BUDGET",
    "WidgetView",
]

MAX_UPDATES_PER_S = 10
"""At most this many widget updates a second while runs arrive."""
MIN_UPDATE_INTERVAL_S = 1 / MAX_UPDATES_PER_S
"""Seconds from the end of one update to the start of the next, at least."""
UPDATE_BUDGET = 0.05
"""Share of the wall time that live updates may take (measured, all of them)."""
CHECKPOINT_MIN_POINTS = 256
"""Points appended before the first re-send of the whole live figures."""
CLOSED_ESM = "export default { render() {} };"
"""The front-end module of a widget whose output was replaced (it has no view)."""


class WidgetView:
    """Shows one profile session in an :class:`NsightWidget` in the cell output.

    Attributes:
        update_s: Seconds spent in :meth:`update` so far (every call, drawn or not),
            but the first draw; this is what the budget bounds.
        first_draw_s: Seconds the first draw took (it displays the widget).
        drawn: Updates that reached the widget.
        records: Every record taken so far, once each.
        bundle: The final MIME bundle (:func:`nsight_lab.views.bundle.final_bundle`)
            once :meth:`finish` ran, else None.
    """

    def __init__(  # noqa: PLR0913  (keyword-only settings)
        self,
        *,
        session_id: int = 0,
        header: str = "",
        sidebar_link: str = "",
        max_points: int = MAX_POINTS,
        show: bool = True,
        budget: float = UPDATE_BUDGET,
        session: SessionInfo | None = None,
        derive: DeriveSpec | None = None,
    ) -> None:
        """Create the widget (displayed on the first update when ``show``).

        The wall-time budget counts from here: create the view just before the runs.

        Args:
            session_id: The store's session id.
            header: Text shown above the progress (backend, device, notes).
            sidebar_link: The session's link in the lab extension's sidebar, if any.
            max_points: Points per trace (the latest while running).
            show: Display the widget in the cell output (False in tests).
            budget: Share of the wall time live updates may take.
            session: The stored session (its parameters, normalization and
                ``--derive`` names label the summary, as the sidebar's).
            derive: The profile's derived metrics; a user function's values reach
                the view model once the results frame computed them.
        """
        self.widget = NsightWidget(session_id=session_id, sidebar_link=sidebar_link)
        self.header = header
        self.max_points = max_points
        self.budget = budget
        self.records: list[RunRecord] = []
        self.bundle: dict[str, Any] | None = None
        self.update_s = 0.0
        self.first_draw_s = 0.0
        self.drawn = 0
        # Built here, before the runs: the first figure imports plotly (a one-off).
        self.model = SessionViewModel(
            session,
            with_config=None if session else False,
            max_points=max_points,
            derive=derive,
        )
        self._pending: list[RunRecord] = []
        self._keys: set[tuple[int, int, str]] = set()
        self._show = show
        self._handle: DisplayHandle | None = None
        self._started = time.perf_counter()
        self._last = -math.inf
        self._last_cost = 0.0
        self._seq = 0
        self._synced_points = 0
        self._progress: Progress | None = None
        self._latest: Progress | None = None
        """The newest progress taken, drawn or not (:meth:`update` skips draws)."""
        self.widget.message = header

    @property
    def live(self) -> LiveFigures:
        """The live charts, the view model's (what the widget's appends extend)."""
        return self.model.live

    @property
    def wall_s(self) -> float:
        """Seconds since the view was created."""
        return time.perf_counter() - self._started

    # -- progress ---------------------------------------------------------------------
    def update(
        self,
        progress: Progress,
        records: Sequence[RunRecord] = (),
        *,
        force: bool = False,
    ) -> None:
        """Take ``progress``; show it when the rate and the time budget allow.

        Records arrive in ``records`` (those that came with this progress); each is
        kept once, even when an update is not drawn, and drawn with a later one. An
        update is drawn at most every :data:`MIN_UPDATE_INTERVAL_S` and only when the
        time spent in updates, with this one's expected cost (the last one's), stays
        within ``budget`` of the wall time; a forced update and the last one (the
        session ended) are always drawn.
        """
        start = time.perf_counter()
        first = self.drawn == 0
        self._latest = progress  # the final state starts from it, drawn or not
        try:
            self._add(records)
            done = progress.status != "running"
            if not (done or force):
                if start - self._last < MIN_UPDATE_INTERVAL_S:
                    return
                allowed = self.budget * (start - self._started)
                # Expected cost: the last draw's, or the mean if that is more.
                expected = max(self._last_cost, self.update_s / max(self.drawn, 1))
                if self.drawn and self.update_s + expected > allowed:
                    return
            self._draw(progress, done=done)
        finally:
            end = time.perf_counter()
            cost = end - start
            if first and self.drawn == 1:
                # The first draw displays the widget: in a kernel that opens its comm
                # and ships the ESM bundle, a one-off that would starve the budget
                # (0.5 s of it means no update for the next 10 s). Kept apart.
                self.first_draw_s = cost
            else:
                self.update_s += cost
        self._last = end
        if not first:
            self._last_cost = cost

    def finish(
        self,
        records: Sequence[RunRecord],
        peaks: Peaks | None = None,
        *,
        status: SessionStatus = "completed",
        message: str = "",
        verdicts: Mapping[str, Any] | None = None,
    ) -> None:
        """Show the final state, the view model's: its figures, summary and bars.

        The records not taken yet go into :attr:`model`, with the ``--derive``
        values the results frame computed; the cell's output becomes the final
        bundle (:attr:`bundle`) in place of the widget, which is closed; the
        widget's traits still hold the final state (for a caller that kept it;
        nothing is sent to a front end).

        Args:
            records: Every record of the session.
            peaks: The device's peaks; no roofline without them (the view model
                places the regions under them).
            status: How the session ended.
            message: Why it ended so, for a failed or interrupted session.
            verdicts: The verdict table against ``--baseline``, drawn under the
                summary (:meth:`nsight_lab.analysis.baselines.VerdictTable.to_json`).
        """
        view = self._final_view(records, peaks)
        figures = view["figures"] if self.model.runs else {}
        progress = self._final_progress(status).to_json()
        text = printable("\n".join(m for m in (self.header, message) if m))
        summary = view["summary"]
        if verdicts is None:
            verdicts = view["verdicts"]
        self.bundle = final_bundle(
            session_id=self.widget.session_id,
            status=status,
            progress=progress,
            message=text,
            figures=figures,
            summary=summary,
            bars=median_bars(self.model.regions),
            counters=view["counters"],
            checks=view["checks"],
            findings=view["findings"],
            sidebar_link=self.widget.sidebar_link,
            verdicts=verdicts,
        )
        self._show_final(self.bundle)
        with self.widget.hold_sync():
            self.widget.progress = progress
            self.widget.message = text
            self.widget.figures = figures
            self.widget.figures_seq = self._seq  # every append is in these
            self.widget.summary = summary
            self.widget.status = status

    # -- internals --------------------------------------------------------------------
    def _final_view(
        self, records: Sequence[RunRecord], peaks: Peaks | None
    ) -> dict[str, Any]:
        """The view model's payload once it took every record and the peaks."""
        self._add(records)
        if self._pending:
            if not self.live.points and self.model.session is None:
                self.live.with_config = len({r.config_index for r in self.records}) > 1
            self.model.add(self._pending)
            self._pending = []
        self.model.add_derived(self.records)  # the frame has computed them now
        if peaks is not None:
            self.model.set_peaks(peaks)
        return self.model.to_json()

    def _final_progress(self, status: SessionStatus) -> Progress:
        """The progress once the session ended: the newest taken, or the records'.

        Never the last one drawn (issue 29: "run 1751 · elapsed 0.1 s" from a 2.4 s
        cell): the newest progress taken, drawn or not, with the newest record's
        place and the time since the view began.
        """
        done = len({(r.config_index, r.run_index) for r in self.records})
        last = self._latest
        newest = self.records[-1] if self.records else None
        if last is None:
            configs = len({r.config_index for r in self.records})
            return make_progress(
                status=status,
                configs_total=configs,
                runs_per_config=0,
                config_index=newest.config_index if newest else 0,
                runs_done_in_config=newest.run_index + 1 if newest else 0,
                runs_done_total=done,
            )
        config_index, in_config = last.config_index, last.runs_done_in_config
        if newest is not None and newest.config_index >= config_index:
            in_config = max(
                in_config if newest.config_index == config_index else 0,
                newest.run_index + 1,
            )
            config_index = newest.config_index
        return make_progress(
            status=status,
            configs_total=last.configs_total,
            runs_per_config=last.runs_per_config,
            config_index=config_index,
            runs_done_in_config=in_config,
            runs_done_total=max(done, last.runs_done_total),
            elapsed_s=max(last.elapsed_s or 0.0, self.wall_s),
        )

    def _add(self, batch: Sequence[RunRecord]) -> None:
        for record in batch:
            key = (record.config_index, record.run_index, record.annotation)
            if key not in self._keys:
                self._keys.add(key)
                self.records.append(record)
                self._pending.append(record)

    def _draw(self, progress: Progress, *, done: bool) -> None:
        """Send the progress and, while running, the new points to the widget."""
        charts: dict[str, dict[str, Any]] = {}
        if self._pending and not done:  # the end: finish() draws every figure
            if not self.live.points:
                self.live.with_config = progress.configs_total > 1
            charts = self.model.add(self._pending)
            self._pending = []
            if charts:
                self._seq += 1
        message = "\n".join(m for m in (self.header, progress.message) if m)
        self._progress = progress
        with self.widget.hold_sync():
            self.widget.progress = self._progress.to_json()
            self.widget.message = printable(message)
            if charts:
                self._send(charts, self.live)
            if done:
                self.widget.status = cast("SessionStatus", progress.status)
        self.drawn += 1
        self._display()

    def _send(self, charts: dict[str, dict[str, Any]], live: LiveFigures) -> None:
        """Send the appends, or the whole live figures once appends have doubled them.

        Re-sending the figures when the points appended since the last re-send reach
        the points it held keeps the total cost linear in the points, and lets a view
        rendered late (it missed earlier appends) catch up.
        """
        fresh = live.points - self._synced_points
        if (
            fresh >= max(self._synced_points, CHECKPOINT_MIN_POINTS)
            or not self.widget.figures
            or set(live.figures) != set(self.widget.figures)  # a chart appeared
        ):
            # A copy: the trait must not share the lists that later appends extend.
            self.widget.figures = json.loads(json.dumps(live.figures))
            self.widget.figures_seq = self._seq
            self._synced_points = live.points
        else:
            self.widget.append = {"seq": self._seq, "charts": charts}

    def _display(self) -> None:
        """Show the widget, once."""
        if not self._show:
            return
        from IPython.display import display  # noqa: PLC0415  (IPython: in a kernel only)

        if self._handle is None:
            self._handle = display(self.widget, display_id=True)

    def _show_final(self, bundle: dict[str, Any]) -> None:
        """Put ``bundle`` in the widget's place (or show it) and close the widget.

        The output is replaced before the widget's comm closes, so the front end
        never shows a closed widget's view in between. Before closing, the widget's
        front-end state is emptied (its ~1 MB ESM bundle swapped for
        :data:`CLOSED_ESM`, the live figures dropped): nbclient (``nbconvert
        --execute``, papermill) saves the last state of every widget, closed or
        not, into the notebook; JupyterLab saves open widgets only.
        """
        if not self._show:
            return
        from IPython.display import display  # noqa: PLC0415  (IPython: in a kernel only)

        if self._handle is None:
            display(bundle, raw=True)
        else:
            self._handle.update(bundle, raw=True)
            with self.widget.hold_sync():
                self.widget._esm = CLOSED_ESM  # noqa: SLF001  (anywidget's trait)
                self.widget.figures = {}
                self.widget.append = {}
        self.widget.close()
