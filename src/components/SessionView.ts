/**
 * One selected session: what it was, its actions (delete, export), a run summary
 * table and its charts, laid out by the shared chart grid (`charts/grid.ts`).
 */

import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { ChartGrid, servedOrder, withFirst } from '../charts/grid';
import { chartMissing, chartTitle } from '../charts/titles';
import { IDownload, describeError } from '../request';
import { IRunsModel, ISessionDetail } from '../tokens';
import {
  CHART_KINDS,
  ChartKind,
  ISessionFigures,
  ISessionSummary
} from '../types';
import { renderVerdicts } from './CompareView';
import { button, h } from './dom';
import { formatTime, runsText, sessionTitle } from './format';
import { summarySection } from './RunTable';

/**
 * The charts of a session: those served, in the server's order (`chart_order`, else
 * the figures' own order), then the known kinds it sent none of (they say what
 * they need); the user's default chart first.
 */
export function sessionChartOrder(
  figures: ISessionFigures,
  chartOrder: readonly string[] | null,
  defaultChart: ChartKind
): string[] {
  const served = servedOrder(figures, chartOrder);
  const absent = CHART_KINDS.filter(kind => !served.includes(kind));
  return withFirst([...served, ...absent], defaultChart);
}

/** Hand a downloaded file to the browser. */
export function saveDownload(download: IDownload): void {
  const url = URL.createObjectURL(download.blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = download.filename;
  link.style.display = 'none';
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/** The facts of a session as label/value pairs. */
export function sessionFacts(session: ISessionSummary): [string, string][] {
  const facts: [string, string][] = [
    ['Status', session.status],
    [
      'Backend',
      session.backend_reason
        ? `${session.backend} (${session.backend_reason})`
        : session.backend
    ],
    ['Device', session.device ?? '–'],
    ['Notebook', session.notebook ?? '–'],
    ['Host', session.host ?? '–'],
    ['Created', formatTime(session.created_at)],
    ['Finished', formatTime(session.finished_at)],
    [
      'Runs',
      // One meaning of "runs" everywhere: executions of the cell, one per config
      // and repetition (the stored records are one per region per run).
      `${runsText(
        session.progress?.runs_done_total ?? session.runs_done ?? 0,
        session.runs_planned_total
      )} (${session.config_count || 1} config${
        (session.config_count || 1) === 1 ? '' : 's'
      } × ${session.runs_per_config}); ${session.run_count} region measurements stored`
    ]
  ];
  if (session.error) {
    facts.push(['Error', session.error]);
  }
  return facts;
}

/**
 * The session view; one instance is kept and refilled, so charts redraw in place.
 */
export class SessionView extends Widget {
  constructor(model: IRunsModel, trans: TranslationBundle) {
    super();
    this._model = model;
    this._trans = trans;
    this.addClass('jp-nsightLab-SessionView');
    this._title = h('div', 'jp-nsightLab-SessionView-title');
    this._actions = h('div', 'jp-nsightLab-SessionView-actions');
    this._facts = h('dl', 'jp-nsightLab-SessionView-facts');
    this._notes = h('ul', 'jp-nsightLab-SessionView-notes');
    this._table = h('div', 'jp-nsightLab-SessionView-table');
    this._verdicts = h(
      'div',
      'jp-nsightLab-SessionView-verdicts jp-nsightLab-CompareView'
    );
    this._charts = h('div', 'jp-nsightLab-SessionView-charts');
    this._grid = new ChartGrid(this._charts, {
      className: 'jp-nsightLab-ChartView',
      title: chartTitle,
      missing: chartMissing
    });
    this.node.append(
      this._title,
      this._actions,
      this._facts,
      this._notes,
      this._table,
      this._verdicts,
      this._charts
    );
  }

  setDetail(detail: ISessionDetail): void {
    const { session } = detail;
    const changed = this._sessionId !== session.id;
    this._sessionId = session.id;
    this.node.dataset.sessionId = `${session.id}`;
    this._title.textContent = `#${session.id} ${sessionTitle(session)}`;
    if (changed || this._backend !== session.backend) {
      this._backend = session.backend;
      this._renderActions(session);
    }
    this._facts.replaceChildren();
    for (const [label, value] of sessionFacts(session)) {
      this._facts.append(h('dt', undefined, label), h('dd', undefined, value));
    }
    this._notes.replaceChildren(
      ...session.notes.map(note => h('li', undefined, note))
    );
    // The summary rows are computed on the server over every run.
    this._table.replaceChildren(
      ...summarySection(detail.summary, detail.counters, detail.checks)
    );
    // Against its baseline (`--baseline`): the served verdict table, under it.
    this._verdicts.replaceChildren();
    const verdicts = detail.verdicts ?? null;
    this._verdicts.hidden = verdicts === null;
    if (verdicts) {
      const against = verdicts.baseline
        ? this._trans.__(
            'Against baseline %1 (session #%2)',
            verdicts.baseline,
            verdicts.a
          )
        : this._trans.__('Against session #%1', verdicts.a);
      this._verdicts.appendChild(
        h('div', 'jp-nsightLab-SessionView-verdictsHeading', against)
      );
      renderVerdicts(this._verdicts, verdicts, this._trans);
    }
    this._grid.update(
      sessionChartOrder(
        detail.figures,
        detail.chartOrder,
        this._model.settings.defaultChart
      ),
      detail.figures
    );
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

  private _renderActions(session: ISessionSummary): void {
    const trans = this._trans;
    const id = session.id;
    const items = [
      button(
        'jp-nsightLab-SessionView-delete jp-mod-warn',
        trans.__('Delete'),
        trans.__('Delete this session and its runs from the store'),
        () => void this._delete(session)
      ),
      button(
        'jp-nsightLab-SessionView-exportRuns',
        trans.__('Runs CSV'),
        trans.__('Download every run of this session as CSV'),
        () =>
          void this._download(() =>
            this._model.exportSession(id, 'csv', 'runs')
          )
      ),
      button(
        'jp-nsightLab-SessionView-exportResults',
        trans.__('Results CSV'),
        trans.__(
          'Download the results table (one row per region, metric and config) as CSV'
        ),
        () =>
          void this._download(() =>
            this._model.exportSession(id, 'csv', 'results')
          )
      ),
      button(
        'jp-nsightLab-SessionView-exportParquet',
        trans.__('Parquet'),
        trans.__('Download every run of this session as Parquet'),
        () =>
          void this._download(() =>
            this._model.exportSession(id, 'parquet', 'runs')
          )
      )
    ];
    if (session.has_report) {
      items.push(
        button(
          'jp-nsightLab-SessionView-report',
          trans.__('.ncu-rep'),
          trans.__(
            'Download the Nsight Compute report (open it in Nsight Compute)'
          ),
          () => void this._download(() => this._model.downloadReport(id))
        )
      );
    }
    this._actions.replaceChildren(...items);
  }

  private async _delete(session: ISessionSummary): Promise<void> {
    const trans = this._trans;
    const result = await showDialog({
      title: trans.__('Delete session #%1?', session.id),
      body: trans.__(
        '%1 and its %2 stored runs are removed from the run store.',
        sessionTitle(session),
        session.run_count
      ),
      buttons: [
        Dialog.cancelButton(),
        Dialog.warnButton({ label: trans.__('Delete') })
      ]
    });
    if (!result.button.accept) {
      return;
    }
    try {
      await this._model.deleteSession(session.id);
    } catch (error) {
      console.error('[nsight-lab] delete failed', error);
      Notification.error(
        trans.__(
          'could not delete session %1: %2',
          session.id,
          describeError(error)
        )
      );
    }
  }

  private async _download(fetch: () => Promise<IDownload>): Promise<void> {
    try {
      saveDownload(await fetch());
    } catch (error) {
      console.error('[nsight-lab] download failed', error);
      Notification.error(
        this._trans.__('download failed: %1', describeError(error))
      );
    }
  }

  private _model: IRunsModel;
  private _trans: TranslationBundle;
  private _sessionId: number | null = null;
  private _backend: string | null = null;
  private _title: HTMLDivElement;
  private _actions: HTMLDivElement;
  private _facts: HTMLDListElement;
  private _notes: HTMLUListElement;
  private _table: HTMLDivElement;
  private _verdicts: HTMLDivElement;
  private _charts: HTMLDivElement;
  private _grid: ChartGrid;
}
