/**
 * The live section: the profile running in the current notebook, updated per run.
 */

import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { ILiveState, IRunsModel } from '../tokens';
import { ChartKind, IRunRecord, ISessionSummary } from '../types';
import { ChartView } from './ChartView';
import { h } from './dom';
import { formatDuration, sessionTitle } from './format';

/** Where a profile stands: configs × runs. */
export interface IProgress {
  /** Complete runs (one per config and repetition, whatever the regions). */
  done: number;
  /** Planned runs: configs × runs per config; 0 when unknown. */
  planned: number;
  /** 1-based config of the newest run, and the number of configs. */
  config: number;
  configs: number;
  /** 1-based repetition of the newest run within its config. */
  run: number;
  runsPerConfig: number;
  /** Runs flagged as throttled among those read. */
  throttled: number;
}

/**
 * The progress of a session from its stored run count and the runs read so far.
 *
 * Each run stores one record per region, so the run count is divided by the number
 * of regions seen.
 */
export function progressOf(
  session: ISessionSummary,
  runs: IRunRecord[]
): IProgress {
  const regions = new Set(runs.map(r => r.annotation)).size || 1;
  const configs = Math.max(1, session.configs.length);
  const newest = runs.length > 0 ? runs[runs.length - 1] : null;
  return {
    done: Math.floor(session.run_count / regions),
    planned: configs * session.runs_planned,
    config: newest ? newest.config_index + 1 : 0,
    configs,
    run: newest ? newest.run_index + 1 : 0,
    runsPerConfig: session.runs_planned,
    throttled: runs.filter(r => r.telemetry?.throttled).length
  };
}

/** The live charts in the order to show them: the default chart first. */
export function liveChartOrder(defaultChart: ChartKind): ChartKind[] {
  return defaultChart === 'clocks'
    ? ['clocks', 'duration']
    : ['duration', 'clocks'];
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
    const order = liveChartOrder(this._model.settings.defaultChart);
    for (const kind of order) {
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

    const progress = progressOf(session, live.runs);
    const parts = [
      progress.planned > 0
        ? `${progress.done} / ${progress.planned} runs`
        : `${progress.done} runs`,
      `config ${progress.config} / ${progress.configs}`,
      `run ${progress.run} / ${progress.runsPerConfig}`
    ];
    if (progress.throttled > 0) {
      parts.push(`${progress.throttled} throttled`);
    }
    const newest =
      live.runs.length > 0 ? live.runs[live.runs.length - 1] : null;
    if (newest) {
      parts.push(`last ${formatDuration(newest.duration_ns)}`);
    }
    this._progressText.textContent = parts.join(' · ');
    this._progress.max = Math.max(progress.planned, progress.done, 1);
    this._progress.value = progress.done;

    const notes = [...session.notes];
    if (session.error) {
      notes.unshift(session.error);
    }
    this._notes.replaceChildren(...notes.map(note => h('li', undefined, note)));

    for (const kind of liveChartOrder(this._model.settings.defaultChart)) {
      const chart = this._chart(kind);
      chart.setFigure(live.figures[kind]);
    }

    node.dataset.sessionId = `${session.id}`;
    node.dataset.status = session.status;
    node.dataset.runCount = `${progress.done}`;
    if (newest) {
      node.dataset.lastFinishedAt = newest.finished_at;
    }
    node.dataset.renderedAt = `${Date.now()}`;
    if (live.eventAt !== null) {
      node.dataset.lastUpdateMs = `${Math.round(performance.now() - live.eventAt)}`;
    }
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
