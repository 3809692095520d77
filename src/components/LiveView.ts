/**
 * The live section: the profile running in the current notebook, updated per run.
 */

import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { ILiveState, IRunsModel } from '../tokens';
import {
  ChartKind,
  IRunRecord,
  ISessionFigures,
  ISessionSummary
} from '../types';
import { ChartView } from './ChartView';
import { h } from './dom';
import { formatDuration, sessionTitle } from './format';

/** The charts the live view shows: those that grow run by run. */
export const LIVE_CHARTS: readonly ChartKind[] = ['duration', 'clocks'];

/**
 * The live charts in the served order (`chart_order`; before it is read, the
 * figures' own order), the user's default chart first. Nothing is ranked here:
 * the order is decided once, in Python.
 */
export function liveChartOrder(
  served: readonly string[] | null,
  figures: ISessionFigures,
  defaultChart: ChartKind
): ChartKind[] {
  const order = [...(served ?? Object.keys(figures)), ...LIVE_CHARTS];
  const live = LIVE_CHARTS.filter(kind => order.includes(kind)).sort(
    (x, y) => order.indexOf(x) - order.indexOf(y)
  );
  return live.includes(defaultChart)
    ? [defaultChart, ...live.filter(kind => kind !== defaultChart)]
    : live;
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
    this._notes = h('ul', 'jp-nsightLab-LiveView-notes');
    this._charts = h('div', 'jp-nsightLab-LiveView-charts');
    this.node.append(
      this._empty,
      this._header,
      this._progressText,
      this._progress,
      this._notes,
      this._charts
    );
    model.liveChanged.connect(this._render, this);
    this._render();
  }

  /** Re-order the charts after a settings change. */
  applySettings(): void {
    for (const kind of this._order()) {
      const chart = this._chart(kind);
      this._charts.appendChild(chart.node);
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    for (const chart of this._chartViews.values()) {
      chart.dispose();
    }
    this._chartViews.clear();
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
      this._notes,
      this._charts
    ]) {
      part.hidden = false;
    }
    this._header.textContent =
      `#${session.id} ${sessionTitle(session)} · ${session.status} · ` +
      `${session.backend}${session.device ? ` · ${session.device}` : ''}`;
    this._header.title = session.backend_reason;

    const progress = session.progress;
    const newest =
      live.runs.length > 0 ? live.runs[live.runs.length - 1] : null;
    this._progressText.textContent = progressLine(session, newest);
    this._progress.max = 1;
    this._progress.value = progress?.fraction ?? 0;

    const notes = [...session.notes];
    if (session.error) {
      notes.unshift(session.error);
    }
    this._notes.replaceChildren(...notes.map(note => h('li', undefined, note)));

    const order = this._order();
    const nodes = order.map(kind => this._chart(kind).node);
    const shown = Array.from(this._charts.children);
    if (nodes.some((chart, i) => shown[i] !== chart)) {
      this._charts.append(...nodes); // the served order (moved only when it changes)
    }
    for (const kind of order) {
      this._chart(kind).setFigure(live.figures[kind]);
    }

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

  private _order(): ChartKind[] {
    const live = this._model.live;
    return liveChartOrder(
      live.chartOrder,
      live.figures,
      this._model.settings.defaultChart
    );
  }

  private _chart(kind: ChartKind): ChartView {
    let chart = this._chartViews.get(kind);
    if (!chart) {
      chart = new ChartView(kind);
      this._chartViews.set(kind, chart);
      this._charts.appendChild(chart.node);
    }
    return chart;
  }

  private _model: IRunsModel;
  private _trans: TranslationBundle;
  private _empty: HTMLParagraphElement;
  private _header: HTMLDivElement;
  private _progressText: HTMLDivElement;
  private _progress: HTMLProgressElement;
  private _notes: HTMLUListElement;
  private _charts: HTMLDivElement;
  private _chartViews = new Map<ChartKind, ChartView>();
}
