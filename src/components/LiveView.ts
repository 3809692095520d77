/**
 * The live section: the profile running in the current notebook, updated per run.
 */

import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import {
  ChartGrid,
  FigureMap,
  hasData,
  servedOrder,
  withFirst
} from '../charts/grid';
import { LIVE_DRAW_MS, LIVE_DRAWN_POINTS } from '../charts/decimate';
import type { IChartAppend } from '../charts/mount';
import { chartMissing, chartTitle } from '../charts/titles';
import { ILiveState, IRunsModel } from '../tokens';
import {
  ChartKind,
  IRunRecord,
  ISessionFigures,
  ISessionSummary
} from '../types';
import { h } from './dom';
import { formatDuration, sessionTitle } from './format';

/** The charts the live view always shows: those that grow run by run. */
export const LIVE_CHARTS: readonly ChartKind[] = ['duration', 'clocks'];

/**
 * The charts it shows once the server has drawn them: a multi-rank profile's
 * per-rank durations and clocks, and a PM-sampled one's counters over time (the
 * profiles that have them; the others would only show what is missing).
 */
export const LIVE_WHEN_DRAWN: readonly string[] = [
  'ranks',
  'rank_clocks',
  'counters'
];

/**
 * The live charts in the served order (`chart_order`; before it is read, the
 * figures' own order), the user's default chart first. Nothing is ranked here:
 * the order is decided once, in Python.
 */
export function liveChartOrder(
  served: readonly string[] | null,
  figures: ISessionFigures,
  defaultChart: ChartKind
): string[] {
  const order = [...servedOrder(figures, served), ...LIVE_CHARTS];
  const shown = (name: string): boolean =>
    (LIVE_CHARTS as readonly string[]).includes(name) ||
    (LIVE_WHEN_DRAWN.includes(name) && hasData((figures as FigureMap)[name]));
  const live = order.filter(
    (name, i) => shown(name) && order.indexOf(name) === i
  );
  return withFirst(live, defaultChart);
}

/**
 * The progress line of a session: the server's (`session.progress.text`, computed
 * in Python over every stored run), and the newest run's duration.
 */
export function progressLine(
  session: ISessionSummary,
  newest: IRunRecord | null
): string {
  const parts = session.progress ? [session.progress.text] : [];
  if (newest) {
    parts.push(`last ${formatDuration(newest.duration_ns)}`);
  }
  return parts.join(' · ');
}

/**
 * The live view. Data attributes for tests: `data-session-id`, `data-run-count`,
 * `data-last-update-ms` (from a `runs-changed` event to the charts updated),
 * `data-last-finished-at` (the newest run's `finished_at`) and `data-rendered-at`
 * (`Date.now()` when it was shown).
 */
export class LiveView extends Widget {
  constructor(model: IRunsModel, trans: TranslationBundle) {
    super();
    this._model = model;
    this._trans = trans;
    this.addClass('jp-nsightLab-LiveView');
    this.title.label = trans.__('Live');
    this._empty = h('p', 'jp-nsightLab-LiveView-empty');
    this._header = h('div', 'jp-nsightLab-LiveView-header');
    this._progressText = h('div', 'jp-nsightLab-LiveView-progressText');
    this._progress = h('progress', 'jp-nsightLab-LiveView-progress');
    // Notes fold into one line (the sidebar is short); an error opens them.
    this._notes = h('details', 'jp-nsightLab-LiveView-notes');
    this._notesSummary = h('summary', 'jp-nsightLab-LiveView-notesSummary');
    this._notesList = h('ul');
    this._notes.append(this._notesSummary, this._notesList);
    this._charts = h('div', 'jp-nsightLab-LiveView-charts');
    // Compact charts: the grid's title names each one, so the plot takes the
    // room of the figure's own title (the sidebar is short).
    this._grid = new ChartGrid(this._charts, {
      className: 'jp-nsightLab-ChartView',
      title: chartTitle,
      missing: chartMissing,
      // Compact live charts: at most LIVE_DRAWN_POINTS points drawn per trace
      // (issue 32: a redraw of 2,000 per trace took plotly 0.3-1.6 s a frame),
      // each drawn at most every LIVE_DRAW_MS, in a task of its own.
      mount: {
        title: false,
        drawnPoints: LIVE_DRAWN_POINTS,
        drawEveryMs: LIVE_DRAW_MS
      }
    });
    // The charts before the notes: in a short sidebar the chart is what shows.
    this.node.append(
      this._empty,
      this._header,
      this._progressText,
      this._progress,
      this._charts,
      this._notes
    );
    model.liveChanged.connect(this._render, this);
    this._render();
  }

  /** Re-order the charts after a settings change. */
  applySettings(): void {
    this._updateCharts();
  }

  /** The charts, as laid out. */
  get grid(): ChartGrid {
    return this._grid;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._grid.dispose();
    super.dispose();
  }

  private _render(): void {
    const live: ILiveState = this._model.live;
    const session = live.session;
    const node = this.node;
    if (!session) {
      this._empty.textContent = this._trans.__(
        'No profile in this notebook yet. Run a %1 cell and it shows here, run by run.',
        '%%nsight'
      );
      this._empty.hidden = false;
      for (const part of [
        this._header,
        this._progressText,
        this._progress,
        this._notes,
        this._charts
      ]) {
        part.hidden = true;
      }
      delete node.dataset.sessionId;
      node.dataset.runCount = '0';
      return;
    }
    this._empty.hidden = true;
    for (const part of [
      this._header,
      this._progressText,
      this._progress,
      this._charts
    ]) {
      part.hidden = false;
    }
    const header =
      `#${session.id} ${sessionTitle(session)} · ${session.status} · ` +
      `${session.backend}${session.device ? ` · ${session.device}` : ''}`;
    // One line (cut with an ellipsis when narrow); the whole of it in the tooltip.
    this._header.textContent = header;
    this._header.title = session.backend_reason
      ? `${header}\n${session.backend_reason}`
      : header;

    const progress = session.progress;
    const newest =
      live.runs.length > 0 ? live.runs[live.runs.length - 1] : null;
    const line = progressLine(session, newest);
    // One line (cut with an ellipsis when narrow); the whole of it in the tooltip.
    this._progressText.textContent = line;
    this._progressText.title = line;
    this._progress.max = 1;
    this._progress.value = progress?.fraction ?? 0;

    const notes = [...session.notes];
    if (session.error) {
      notes.unshift(session.error);
    }
    this._notesList.replaceChildren(
      ...notes.map(note => h('li', undefined, note))
    );
    this._notesSummary.textContent = session.error
      ? this._trans.__('failed: %1', session.error)
      : notes.length === 1
        ? this._trans.__('1 note')
        : this._trans.__('%1 notes', notes.length);
    this._notes.hidden = notes.length === 0;
    this._notes.classList.toggle('jp-mod-error', !!session.error);

    this._updateCharts();

    node.dataset.sessionId = `${session.id}`;
    node.dataset.status = session.status;
    node.dataset.runCount = `${progress?.runs_done_total ?? 0}`;
    if (newest) {
      node.dataset.lastFinishedAt = newest.finished_at;
    }
    node.dataset.renderedAt = `${Date.now()}`;
    if (live.eventAt !== null) {
      node.dataset.lastUpdateMs = `${Math.round(performance.now() - live.eventAt)}`;
    }
  }

  /**
   * Lay out the live charts in the served order (drawn in place when there). A new
   * session's charts are mounted afresh, at the box's width now: a chart drawn in
   * place keeps the size of the one before (a 3-config figure's 615 px in a
   * 457 px box, its x-axis cut, until the next resize).
   */
  private _updateCharts(): void {
    const live = this._model.live;
    const id = live.session?.id ?? null;
    if (id !== this._chartsFor) {
      this._chartsFor = id;
      this._grid.update([], {});
    } else if (live.changes) {
      // A delta: the new points are appended to the charts drawn, not redrawn.
      this._grid.appendChanges(
        live.changes.from as FigureMap,
        live.figures as FigureMap,
        live.changes.charts as Record<string, IChartAppend | null>
      );
    }
    this._grid.update(
      liveChartOrder(
        live.chartOrder,
        live.figures,
        this._model.settings.defaultChart
      ),
      live.figures
    );
  }

  private _model: IRunsModel;
  private _trans: TranslationBundle;
  private _empty: HTMLParagraphElement;
  private _header: HTMLDivElement;
  private _progressText: HTMLDivElement;
  private _progress: HTMLProgressElement;
  private _notes: HTMLDetailsElement;
  private _notesSummary: HTMLElement;
  private _notesList: HTMLUListElement;
  private _charts: HTMLDivElement;
  private _grid: ChartGrid;
  /** The session whose charts the grid holds. */
  private _chartsFor: number | null = null;
}
