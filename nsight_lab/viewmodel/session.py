"""One session's view model, built incrementally from its runs as they arrive.

:class:`SessionViewModel` is what every view of a session reads: the inline widget
while a cell runs (:mod:`nsight_lab.views.live`), the sidebar's session and live views
(``GET sessions/<id>?figures=1``, :mod:`nsight_lab.server`), the cell's final bundle
and its static page. :meth:`~SessionViewModel.add` costs the
new runs only; :meth:`~SessionViewModel.to_json` builds the payload from state
whose size is bounded by the regions and the window, never by the session's runs.

What it keeps, per region and config (:class:`~nsight_lab.viewmodel.regions.
RegionStats`): running statistics over every run (counts, mean and spread exact,
medians exact up to :data:`~nsight_lab.viewmodel.streaming.EXACT_VALUES` runs then
within 0.1 %), telemetry aggregates, and the latest ``window`` runs. The duration
and clock charts are :class:`nsight_lab.figures.LiveFigures`' (each trace its
latest ``max_points`` points; the CI band over every run); the roofline, traffic,
counters-over-time and per-rank clock charts, the roofline columns and the verdicts
against a baseline (its latest runs too) are drawn from each region's latest
:data:`WORK_RUNS` runs (every run while a session fits in that). No pandas anywhere
on this path.

``--derive`` metrics are counter rows (:mod:`nsight_lab.viewmodel.summary`): the
built-in ``tflops``/``gbps`` are computed as runs arrive; a user function's values
come from its :class:`~nsight_lab.results.derive.DeriveSpec` once the results frame
has called it (:meth:`SessionViewModel.add_derived`): the view model never calls
user code. A stored session's view model (the server's) has the built-in ones only:
user functions and their values are not stored.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from nsight_lab.analysis.baselines import table_of
from nsight_lab.analysis.findings import findings_json, session_findings
from nsight_lab.analysis.findings.facts import Analysed, analyse
from nsight_lab.analysis.validity import checks_json
from nsight_lab.contract.points import MAX_POINTS
from nsight_lab.figures import (
    CHART_ORDER,
    LiveFigures,
    counters_figure,
    figure_json,
    ordered_charts,
    roofline_figure,
    traffic_figure,
)
from nsight_lab.figures.durations import duration_axes, duration_layout
from nsight_lab.figures.kernels import kernels_json, region_kernels
from nsight_lab.figures.ranks import RANKS_CHART, rank_figures
from nsight_lab.figures.telemetry import missing_telemetry
from nsight_lab.results.derive import DeriveSpec, derived_values, run_key, stored_derive
from nsight_lab.viewmodel.regions import RegionStats
from nsight_lab.viewmodel.summary import counter_table, region_rows

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from nsight_lab.analysis.findings.warmth import Counterpart
    from nsight_lab.contract.records import RunRecord, SessionInfo
    from nsight_lab.roofline.placement import Peaks, Placement, RegionWork

__all__ = ["KeptBaseline", "SessionViewModel", "build"]

WORK_RUNS = 500
"""Latest runs per region the roofline, traffic, counters-over-time and per-rank
charts, the roofline columns and the verdicts are drawn from (a bounded cost per
refresh: these are medians and a median run, which the latest 500 runs give)."""


@dataclass(frozen=True)
class KeptBaseline:
    """The baseline a session was profiled with (``--baseline``), its runs in hand."""

    session_id: int
    name: str | None
    threshold: float
    records: Sequence[RunRecord]


class SessionViewModel:
    """Everything the views show of one session, updated run by run.

    Attributes:
        session: The stored session (None for a widget's session before it is kept).
        peaks: The device's peaks; no roofline without them.
        attainable: Peaks ``%nsight peaks`` measured on the device, if kept: the
            findings judge against them before the datasheet's.
        counterpart: The same cell in the other cache mode (``viewmodel/roofs.py``).
        runs: Records taken so far.
        version: Bumped by every :meth:`add` that took records (a cache key).
    """

    def __init__(  # noqa: PLR0913  (keyword-only settings)
        self,
        session: SessionInfo | None = None,
        *,
        peaks: Peaks | None = None,
        max_points: int = MAX_POINTS,
        with_config: bool | None = None,
        baseline: KeptBaseline | None = None,
        derive: DeriveSpec | None = None,
    ) -> None:
        """Start with no runs.

        Args:
            session: The session (its options name the parameters shown).
            peaks: The device's peaks, for the roofline.
            max_points: Points per live trace and runs per region in the window
                (0: every point; the window is then :data:`MAX_POINTS` runs).
            with_config: Label traces with their config; by default when the
                session plans several configs.
            baseline: The kept baseline to judge the runs against, if any.
            derive: The ``--derive`` metrics; by default the built-in ones the
                session's options name (:func:`~nsight_lab.results.derive.
                stored_derive`). With user functions, every derived value comes
                from :meth:`add_derived`.
        """
        if with_config is None:
            with_config = session is not None and len(session.configs) > 1
        self.session = session
        self.peaks = peaks
        self.attainable: Peaks | None = None
        self.counterpart: Counterpart | None = None
        """The same cell in the other cache mode (``viewmodel/roofs.py``)."""
        self.max_points = max_points
        self.baseline = baseline
        self.live = LiveFigures(with_config=with_config, max_points=max_points or None)
        self.runs = 0
        self.version = 0
        self._groups: dict[tuple[str, int], RegionStats] = {}
        self._metrics: dict[str, int] = {}
        self.derive = derive or stored_derive(session.options if session else {})
        self._derived: dict[str, float | str] = {}
        self._view: tuple[int, dict[str, Any]] | None = None
        self._layout: tuple[object, dict[str, Any]] | None = None

    # -- taking runs ------------------------------------------------------------------
    def add(self, records: Sequence[RunRecord]) -> dict[str, dict[str, Any]]:
        """Take ``records`` (in the order they ran); return the live charts' appends.

        The appends are :meth:`nsight_lab.figures.LiveFigures.add`'s (what the
        widget sends its front end). Costs the new records only.

        Raises:
            Nothing.
        """
        if not records:
            return {}
        for record in records:
            key = (record.annotation, record.config_index)
            group = self._groups.get(key)
            if group is None:
                group = self._groups[key] = RegionStats(
                    record, self.max_points or MAX_POINTS
                )
            group.add(record)
            for metric in record.metrics:
                self._metrics.setdefault(metric, len(self._metrics))
            if self.derive.names and not self.derive.functions:
                self._take_derived(group, derived_values(record, self.derive))
        self.runs += len(records)
        self.version += 1
        return self.live.add(records)

    def add_derived(self, records: Sequence[RunRecord]) -> None:
        """Take the ``--derive`` values the results frame computed for ``records``.

        Only with user functions (built-in metrics are computed by :meth:`add`):
        their values, each run's as :func:`~nsight_lab.results.derive.
        derived_values` kept them in :attr:`derive`'s ``computed``, which the view
        model reads and never recomputes (user code runs once per run). Call it
        once per record, after :meth:`add` took it; runs without values are
        skipped.

        Raises:
            Nothing.
        """
        if not self.derive.functions:
            return
        taken = False
        for record in records:
            values = self.derive.computed.get(run_key(record))
            group = self._groups.get((record.annotation, record.config_index))
            if values is not None and group is not None:
                self._take_derived(group, values)
                taken = True
        if taken:
            self.version += 1

    def _take_derived(
        self, group: RegionStats, values: dict[str, tuple[float, float | str]]
    ) -> None:
        group.add_derived(values)
        for name, (_value, unit) in values.items():
            if isinstance(unit, str) or name not in self._derived:
                self._derived[name] = unit  # the frame's: the last unit given

    def set_peaks(self, peaks: Peaks | None) -> None:
        """Place the regions under ``peaks`` from now on (the roofline, % of roof)."""
        if peaks != self.peaks:
            self.peaks = peaks
            self.version += 1

    @property
    def regions(self) -> list[RegionStats]:
        """Each region and config, in the order it first ran."""
        return list(self._groups.values())

    def window(self, per_region: int | None = None) -> list[RunRecord]:
        """The latest runs of every region and config (at most ``max_points`` each).

        With ``per_region``, at most that many of each (the latest).
        """
        if per_region is None:
            return [r for g in self._groups.values() for r in g.window]
        return [
            r
            for g in self._groups.values()
            for r in itertools.islice(
                g.window, max(len(g.window) - per_region, 0), None
            )
        ]

    # -- what the views show ----------------------------------------------------------
    def figures(self) -> dict[str, dict[str, Any]]:
        """Every chart as plotly JSON, by name, in the charts' order.

        Raises:
            Nothing.
        """
        return dict(self._built()["figures"])

    def summary(self) -> list[dict[str, str]]:
        """The summary table's rows (:mod:`nsight_lab.viewmodel.summary`)."""
        return list(self._built()["summary"])

    def to_json(self) -> dict[str, Any]:
        """The view: figures, chart order, the tables, findings, kernels, verdicts.

        ``{"figures", "chart_order", "summary", "counters", "checks", "findings",
        "kernels", "verdicts"}``.
        What ``GET sessions/<id>?figures=1`` adds to a page of runs, and what the
        widget's and the bundle's traits hold: JSON-safe values (the figures'
        lists are shared with the view model: encode, do not change them). Built
        once per :attr:`version`.

        Raises:
            Nothing.
        """
        return dict(self._built())

    def _built(self) -> dict[str, Any]:
        if self._view is not None and self._view[0] == self.version:
            return self._view[1]
        recent = self.window(WORK_RUNS)
        done = analyse(recent, self.peaks)  # placed, modelled, checked once
        view = {
            "figures": self._figures(done),
            "chart_order": list(CHART_ORDER),
            **self._tables(done),
            "verdicts": self._verdicts(recent),
        }
        self._view = (self.version, view)
        return view

    def tables(self) -> dict[str, Any]:
        """``{"summary", "counters", "checks", "findings", "kernels"}``, no figure.

        The same rows as :meth:`to_json`'s (``nsight-lab show`` prints them).

        Raises:
            Nothing.
        """
        return self._tables(analyse(self.window(WORK_RUNS), self.peaks))

    def _tables(self, done: Analysed) -> dict[str, Any]:
        groups, checks = self.regions, done.checks
        with_config = len({g.config_index for g in groups}) > 1
        return {
            "summary": region_rows(
                self.session, groups, done.works, done.placements, checks
            ),
            "counters": counter_table(
                self.session, groups, self._metrics, self._derived
            ),
            # What cannot be true, its cause and what to do; launch-bound notes.
            "checks": checks_json(checks.values(), with_config=with_config),
            # Why it is slow and what would help (analysis/findings), ranked.
            "findings": findings_json(
                session_findings(
                    done,
                    self.session,
                    peaks=self.peaks,
                    attainable=self.attainable,
                    counterpart=self.counterpart,
                )
            ),
            # Per-kernel backends: each region's kernels (a folded table).
            "kernels": kernels_json(done.measured),
        }

    def _figures(self, done: Analysed) -> dict[str, dict[str, Any]]:
        window, placements, checks = done.measured, done.placements, done.checks
        order = {key: i for i, key in enumerate(self._groups)}
        kernels = region_kernels(window)
        out = dict(self.live.figures)
        out["duration"] = {**out["duration"], "layout": self._duration_layout(window)}
        if not out["clocks"]["data"] and window:
            layout = {**out["clocks"]["layout"], "meta": {}}
            layout["meta"] = {"missing": missing_telemetry(window)}
            out["clocks"] = {**out["clocks"], "layout": layout}
        if placements and self.peaks is not None:
            flags = {key: v.flags for key, v in checks.items() if v.flags}
            out["roofline"] = figure_json(
                roofline_figure(
                    placements, self.peaks, order=order, flags=flags, kernels=kernels
                )
            )
        # Without peaks, the bytes the work model gives (the table's "modelled").
        bars: Sequence[Placement | RegionWork] = placements or [
            w for w in done.works if w.bytes_total > 0
        ]
        if bars:
            out["traffic"] = figure_json(
                traffic_figure(bars, order=order, kernels=kernels)
            )
        counters = counters_figure(list(window), self.peaks, order=order)
        if counters is not None:
            out["counters"] = figure_json(counters)
        for name, fig in rank_figures(list(window), self.max_points).items():
            if name != RANKS_CHART or name not in out:
                out[name] = figure_json(fig)
        return {name: out[name] for name in ordered_charts(out)}

    def _duration_layout(self, window: Sequence[RunRecord]) -> dict[str, Any]:
        """The duration chart's axes over every run (as the final figure's)."""
        stats = [g.duration for g in self._groups.values() if g.duration.n]
        key = duration_axes(stats, window)
        if self._layout is None or self._layout[0] != key:
            yrange, runs, hot = key
            figure = go.Figure(layout=duration_layout(yrange, runs, throttled=hot))
            self._layout = (key, figure_json(figure)["layout"])
        return self._layout[1]

    def _verdicts(self, recent: Sequence[RunRecord]) -> dict[str, Any] | None:
        kept = self.baseline
        if kept is None or self.session is None:
            return None
        return table_of(
            kept.records,
            recent,
            a=kept.session_id,
            b=self.session.id,
            baseline=kept.name,
            threshold=kept.threshold,
        ).to_json()


def build(  # noqa: PLR0913  (keyword-only settings)
    records: Iterable[RunRecord],
    session: SessionInfo | None = None,
    *,
    peaks: Peaks | None = None,
    max_points: int = MAX_POINTS,
    baseline: KeptBaseline | None = None,
    derive: DeriveSpec | None = None,
) -> SessionViewModel:
    """A view model of ``records`` taken at once (what incremental adds must equal).

    With user ``--derive`` functions, their values are taken as computed
    (:meth:`SessionViewModel.add_derived`).

    Raises:
        Nothing.
    """
    model = SessionViewModel(
        session, peaks=peaks, max_points=max_points, baseline=baseline, derive=derive
    )
    taken = list(records)
    model.add(taken)
    model.add_derived(taken)
    return model
