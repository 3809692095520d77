/**
 * The inline widget (anywidget, AFM): progress, live charts and the summary table of
 * one `%%nsight` session, in the cell output.
 *
 * Bundled by esbuild into `nsight_lab/static/widget.js`. All state lives in the
 * model's traits, so a re-rendered output or a reopened notebook with saved widget
 * state shows the same view. Text from the profile (annotation names, messages) is
 * only ever set through `textContent`.
 */
import type { AnyWidget } from '@anywidget/types';

import {
  ChartGrid,
  FigureMap,
  IChartGridOptions,
  hasData,
  servedOrder
} from '../charts/grid';
import { foldedCharts, isChartKind } from '../charts/titles';
import { findingsOpen, findingsSection } from '../components/Findings';
import { checksList } from '../components/RunTable';
import { formatSummaryCell, summaryColumns } from './format';
import { OPEN_SESSION_EVENT, SIDEBAR_MARKER } from './link';
import type {
  IRenderProps,
  ISummaryRow,
  IWidgetModel,
  IWidgetTraits
} from './types';

export type { IRenderProps, IWidgetModel, IWidgetTraits } from './types';

export { OPEN_SESSION_EVENT, SIDEBAR_MARKER } from './link';

const CLASS = 'jp-nsightLab-Widget';

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  parent?: HTMLElement
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  parent?.appendChild(node);
  return node;
}

function sidebarPresent(): boolean {
  return document.body.dataset[SIDEBAR_MARKER] === 'true';
}

/**
 * The progress bar's percentage: the served `fraction` (100 once completed, in
 * case the last progress predates the status).
 */
export function progressPercent(
  progress: IWidgetTraits['progress'],
  status: IWidgetTraits['status']
): number {
  if (status === 'completed') {
    return 100;
  }
  return 'fraction' in progress ? progress.fraction * 100 : 0;
}

/** Fill `table` with `rows` (columns: every key, in first-seen order). */
export function renderTable(
  table: HTMLTableElement,
  rows: ISummaryRow[]
): void {
  table.replaceChildren();
  if (rows.length === 0) {
    table.hidden = true;
    return;
  }
  table.hidden = false;
  const columns = summaryColumns(rows);
  const head = table.createTHead().insertRow();
  for (const column of columns) {
    const th = document.createElement('th');
    th.textContent = column;
    head.appendChild(th);
  }
  const body = table.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    for (const column of columns) {
      const value = row[column] ?? null;
      const td = tr.insertCell();
      td.textContent = formatSummaryCell(row, column);
      if (typeof value === 'number') {
        td.classList.add(`${CLASS}-number`);
      }
    }
  }
}

/**
 * `message` without the session's title where a line starts with it (`nsight-lab
 * session 3: backend cpu ...`): the header above says it once.
 */
export function withoutTitle(message: string, sessionId: number): string {
  const title = `nsight-lab session ${sessionId}: `;
  return message
    .split('\n')
    .map(line => (line.startsWith(title) ? line.slice(title.length) : line))
    .join('\n');
}

/**
 * How a session view draws beyond the widget's defaults: the words for a chart of
 * the order with nothing to draw (the widget leaves such charts out). Such charts
 * fold into one line after the drawn ones, worded as the sidebar's session panel
 * words it (`foldedCharts`: what another backend would add), each chart's reason
 * under it when opened.
 */
export type ISessionViewOptions = Pick<IChartGridOptions, 'missing'>;

/** The widget view of one model in one element. */
class WidgetView {
  constructor(
    private readonly model: IWidgetModel,
    private readonly el: HTMLElement,
    options: ISessionViewOptions = {}
  ) {
    el.classList.add(CLASS);
    // The answer first: the quality headline (a final output with a region
    // flagged), then what the session was, the flags, the table, the charts.
    this.headline = element('div', `${CLASS}-headline`, el);
    this.headline.hidden = true;
    const header = element('div', `${CLASS}-header`, el);
    this.title = element('span', `${CLASS}-title`, header);
    this.status = element('span', `${CLASS}-status`, header);
    this.link = element('a', `${CLASS}-sidebarLink`, header);
    // The lab extension opens the session in a main-area panel (src/widgets/).
    this.link.textContent = 'Open in nsight-lab';
    this.link.title = 'Open this session in an nsight-lab panel';
    this.link.addEventListener('click', this.onLinkClick);
    const progress = element('div', `${CLASS}-progress`, el);
    this.bar = element('div', `${CLASS}-progressBar`, progress);
    this.bar.setAttribute('role', 'progressbar');
    this.bar.setAttribute('aria-valuemin', '0');
    this.bar.setAttribute('aria-valuemax', '100');
    this.fill = element('div', `${CLASS}-progressFill`, this.bar);
    this.progressText = element('div', `${CLASS}-progressText`, progress);
    this.message = element('div', `${CLASS}-message`, el);
    this.checks = element('div', `${CLASS}-checks`, el);
    // Why it is slow (a final output's findings), before the table.
    this.findings = element('div', `${CLASS}-findings`, el);
    this.findings.hidden = true;
    this.table = element('table', `${CLASS}-summary`, el);
    this.charts = new ChartGrid(element('div', `${CLASS}-charts`, el), {
      className: `${CLASS}-chart`,
      missing: options.missing,
      fold: foldedCharts
    });
  }

  /** Draw everything and follow the model's changes. */
  start(): void {
    this.renderProgress();
    this.renderFigures();
    this.renderSummary();
    this.model.on('change', this.renderProgress);
    this.model.on('change:figures', this.renderFigures);
    this.model.on('change:append', this.renderAppend);
    this.model.on('change:summary', this.renderSummary);
  }

  dispose(): void {
    this.model.off('change', this.renderProgress);
    this.model.off('change:figures', this.renderFigures);
    this.model.off('change:append', this.renderAppend);
    this.model.off('change:summary', this.renderSummary);
    this.link.removeEventListener('click', this.onLinkClick);
    this.charts.dispose();
    this.el.replaceChildren();
    this.el.classList.remove(CLASS);
  }

  private readonly renderProgress = (): void => {
    const model = this.model;
    const status = model.get('status');
    const progress = model.get('progress') ?? {};
    const sessionId = model.get('session_id');
    this.title.textContent = `nsight-lab session ${sessionId}`;
    this.status.textContent = status;
    this.status.dataset.status = status;
    const percent = Math.round(progressPercent(progress, status));
    this.fill.style.width = `${percent}%`;
    this.bar.setAttribute('aria-valuenow', String(percent));
    this.bar.dataset.status = status;
    this.progressText.textContent = 'text' in progress ? progress.text : '';
    const message = withoutTitle(model.get('message') ?? '', sessionId);
    this.message.textContent = message;
    this.message.hidden = !message;
    const link = model.get('sidebar_link');
    this.link.hidden = !link || !sidebarPresent();
    this.link.href = link || '#';
    this.link.dataset.sessionId = String(sessionId);
  };

  private readonly renderFigures = (): void => {
    const figures: FigureMap = this.model.get('figures') ?? {};
    this.appended = this.model.get('figures_seq') ?? 0;
    // Charts only some sessions have (per rank) only where served with data:
    // another backend would not add them to a single-process session.
    this.charts.update(
      servedOrder(figures, this.model.get('chart_order')).filter(
        name => isChartKind(name) || hasData(figures[name])
      ),
      figures
    );
  };

  /**
   * Add the latest live points to the charts drawn (those it has not yet). An
   * append after one this view missed (it was drawn late) would extend figures
   * that lack the points between: the charts keep what they show until the next
   * whole figures (`figures`, `figures_seq`), as a sidebar panel that missed a
   * delta reads the whole view (issue 32).
   */
  private readonly renderAppend = (): void => {
    const append = this.model.get('append');
    if (!append || !('seq' in append) || append.seq <= this.appended) {
      return; // nothing new, or already in the figures drawn
    }
    if (append.seq > this.appended + 1) {
      return; // a gap: wait for the whole figures
    }
    this.appended = append.seq;
    this.charts.append(append.charts);
  };

  private readonly renderSummary = (): void => {
    const headline = this.model.get('headline') ?? '';
    this.headline.textContent = headline;
    this.headline.hidden = !headline;
    const checks = checksList(this.model.get('checks') ?? []);
    this.checks.replaceChildren(...(checks ? [checks] : []));
    this.checks.hidden = checks === null;
    this.renderFindings();
    renderTable(this.table, this.model.get('summary') ?? []);
  };

  /** Why it is slow: the three findings marked top, the rest folded. */
  private renderFindings(): void {
    const section = findingsSection(this.model.get('findings'), {
      open: findingsOpen(this.findings)
    });
    this.findings.replaceChildren(...(section ? [section] : []));
    this.findings.hidden = section === null;
  }

  private readonly onLinkClick = (event: MouseEvent): void => {
    event.preventDefault();
    this.el.dispatchEvent(
      new CustomEvent(OPEN_SESSION_EVENT, {
        bubbles: true,
        composed: true,
        detail: {
          session_id: this.model.get('session_id'),
          link: this.model.get('sidebar_link')
        }
      })
    );
  };

  private readonly headline: HTMLDivElement;
  private readonly checks: HTMLDivElement;
  private readonly findings: HTMLDivElement;
  private readonly title: HTMLSpanElement;
  private readonly status: HTMLSpanElement;
  private readonly link: HTMLAnchorElement;
  private readonly bar: HTMLDivElement;
  private readonly fill: HTMLDivElement;
  private readonly progressText: HTMLDivElement;
  private readonly message: HTMLDivElement;
  private readonly charts: ChartGrid;
  private readonly table: HTMLTableElement;
  /** The last live append the charts hold (`figures_seq` or a later one). */
  private appended = 0;
}

/**
 * Draw the session of `model` into `el` and follow its changes: the widget's view,
 * also drawn by the lab extension's renderer of a cell's final output (`mime/`).
 *
 * @returns The cleanup that removes the view.
 */
export function renderSession(
  model: IWidgetModel,
  el: HTMLElement,
  options: ISessionViewOptions = {}
): () => void {
  const view = new WidgetView(model, el, options);
  view.start();
  return () => view.dispose();
}

/**
 * AFM render: draw the session into `el`.
 *
 * @returns The cleanup anywidget calls when the view is removed.
 */
function render({ model, el }: IRenderProps): () => void {
  return renderSession(model, el);
}

export default { render } satisfies AnyWidget<IWidgetTraits>;
