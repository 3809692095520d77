/**
 * One selected session: the answer first (findings against its baseline, what
 * cannot be true, why it is slow and what would help, then the run summary
 * table), its charts laid out by the shared chart grid (`charts/grid.ts`; charts
 * with nothing to draw folded into one line), each region's kernels (folded),
 * then what the session was; its actions (delete, export) on the title's line.
 */

import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import {
  ChartGrid,
  FigureMap,
  hasData,
  servedOrder,
  withFirst
} from '../charts/grid';
import type { IChartAppend, IFigure } from '../charts/mount';
import {
  chartMissing,
  chartTitle,
  foldedCharts,
  isChartKind
} from '../charts/titles';
import { IDownload, describeError } from '../request';
import { IRunsModel, ISessionDetail } from '../tokens';
import {
  CHART_KINDS,
  ChartKind,
  IKernelRow,
  ISessionFigures,
  ISessionSummary
} from '../types';
import { renderVerdicts } from './CompareView';
import { button, h } from './dom';
import { findingsOpen, findingsSection, FINDINGS_SHOWN } from './Findings';
import { formatTime, runsText, sessionTitle } from './format';
import { checksList, summarySection } from './RunTable';

/**
 * The charts of a session: those served, in the server's order (`chart_order`, else
 * the figures' own order), then the known kinds it sent none of (they say what
 * they need); the user's default chart first. Charts only some sessions have (the
 * per-rank charts of a multi-rank session) only where served with data: a
 * single-GPU session has no "per rank" chart to miss.
 */
export function sessionChartOrder(
  figures: ISessionFigures,
  chartOrder: readonly string[] | null,
  defaultChart: ChartKind
): string[] {
  const served = servedOrder(figures, chartOrder).filter(
    name =>
      isChartKind(name) ||
      hasData((figures as Readonly<Record<string, IFigure | null>>)[name])
  );
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
      // 'cpu · no GPU timing available, ... (torch.cuda.is_available() is
      // False)': the reason's own parentheses nest in no others.
      session.backend_reason
        ? `${session.backend} \u00b7 ${session.backend_reason}`
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
 * Each region's kernels as a folded table (per-kernel backends: cupti, pm, ncu):
 * region, config, then each kernel's readable name (its whole name on hover and
 * selectable in the last column). Null when no region has kernels.
 */
export function kernelSection(
  rows: readonly IKernelRow[] | null | undefined
): HTMLDetailsElement | null {
  if (!rows || rows.length === 0) {
    return null;
  }
  const count = rows.reduce((n, row) => n + row.kernels.length, 0);
  const details = h('details', 'jp-nsightLab-SessionView-kernels');
  details.appendChild(
    h(
      'summary',
      undefined,
      `Kernels: ${count} in ${rows.length} region${rows.length === 1 ? '' : 's'}`
    )
  );
  const withConfig = rows.some(row => row.config !== '');
  const table = h('table', 'jp-nsightLab-Table jp-nsightLab-KernelTable');
  const head = table.createTHead().insertRow();
  for (const label of withConfig
    ? ['Region', 'Config', 'Kernel', 'Full name']
    : ['Region', 'Kernel', 'Full name']) {
    head.appendChild(h('th', undefined, label));
  }
  const body = table.createTBody();
  for (const row of rows) {
    row.kernels.forEach((kernel, i) => {
      const tr = body.insertRow();
      tr.dataset.region = row.region;
      const cells = withConfig
        ? [i === 0 ? row.region : '', i === 0 ? row.config : '']
        : [i === 0 ? row.region : ''];
      for (const text of cells) {
        tr.insertCell().textContent = text;
      }
      const short = tr.insertCell();
      short.textContent = kernel.short;
      short.title = kernel.name;
      const full = tr.insertCell();
      full.className = 'jp-nsightLab-KernelTable-name';
      full.textContent = kernel.name;
    });
  }
  const scroll = h('div', 'jp-nsightLab-Table-scroll');
  scroll.appendChild(table);
  details.appendChild(scroll);
  return details;
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
    this._kernels = h('div', 'jp-nsightLab-SessionView-kernelSlot');
    this._grid = new ChartGrid(this._charts, {
      className: 'jp-nsightLab-ChartView',
      title: chartTitle,
      missing: chartMissing,
      fold: foldedCharts
    });
    // The answer first: the verdicts against a baseline and the summary (what
    // cannot be true, then the table), the charts, the kernels; what the session
    // was (facts, notes) last. The actions share the title's line.
    const header = h('div', 'jp-nsightLab-SessionView-header');
    header.append(this._title, this._actions);
    this.node.append(
      header,
      this._verdicts,
      this._table,
      this._charts,
      this._kernels,
      this._facts,
      this._notes
    );
  }

  setDetail(detail: ISessionDetail): void {
    const { session } = detail;
    const changed = this._sessionId !== session.id;
    this._sessionId = session.id;
    this.node.dataset.sessionId = `${session.id}`;
    // Named as the history names it: an unnamed session by its regions (the
    // list's, sorted), never "session 2" beside a history row "fused, unfused".
    const regions = Array.from(
      new Set(detail.summary.map(row => String(row.Region ?? '')))
    )
      .filter(region => region !== '')
      .sort();
    this._title.textContent = `#${session.id} ${sessionTitle({
      regions,
      ...session
    })}`;
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
    // The summary rows are computed on the server over every run. What cannot
    // be true first, then why it is slow (the findings, the rest folded as the
    // user left them), then the table.
    const checks = checksList(detail.checks);
    const findings = findingsSection(detail.findings, {
      shown: this._model.settings.findingsShown ?? FINDINGS_SHOWN,
      open: !changed && findingsOpen(this._table)
    });
    this._table.replaceChildren(
      ...(checks ? [checks] : []),
      ...(findings ? [findings] : []),
      ...summarySection(detail.summary, detail.counters, null)
    );
    const kernels = kernelSection(detail.kernels);
    const open = this._kernels.querySelector('details')?.open ?? false;
    if (kernels) {
      kernels.open = open && !changed;
    }
    this._kernels.replaceChildren(...(kernels ? [kernels] : []));
    // Against its baseline (`--baseline`): the served verdict table, first.
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
    if (detail.changes && !changed) {
      // A delta: new points appended to the charts drawn, not drawn again.
      this._grid.appendChanges(
        detail.changes.from as FigureMap,
        detail.figures as FigureMap,
        detail.changes.charts as Record<string, IChartAppend | null>
      );
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
  private _kernels: HTMLDivElement;
  private _grid: ChartGrid;
}
