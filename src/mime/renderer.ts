/**
 * Draw a cell's final output (nsight-lab's session JSON) with no kernel.
 *
 * The data is only drawn: the widget's own view (`renderSession`) on a model that
 * holds the bundle and never changes, so the charts go through the same grid and
 * `mountChart` (themed, following light and dark), the progress and the summary
 * table through the same formatting as the live widget and the sidebar. Text from
 * the profile is set as text only; nothing in the data is run.
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { chartMissing } from '../charts/titles';
import { renderVerdicts } from '../components/CompareView';
import type { ISummaryRow, IVerdictTable } from '../types';
import { renderSession } from '../widget/index';
import type { IWidgetModel, IWidgetTraits } from '../widget/types';
import { BUNDLE_VERSION, ISessionBundle } from './types';

/** The class of the renderer's node. */
export const RENDERER_CLASS = 'jp-nsightLab-SessionOutput';

const STATUSES: readonly string[] = [
  'running',
  'completed',
  'failed',
  'interrupted'
];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether `value` reads as a finding: what the findings section shows of one. */
function isFinding(value: unknown): boolean {
  return (
    isObject(value) &&
    typeof value.statement === 'string' &&
    typeof value.rank === 'number' &&
    Array.isArray(value.regions) &&
    Array.isArray(value.evidence)
  );
}

/** What is wrong with `data` as a session bundle, or `null` when nothing is. */
function problem(data: Record<string, unknown>): string | null {
  const version = data.version;
  if (typeof version !== 'number') {
    return 'it has no version';
  }
  if (version > BUNDLE_VERSION) {
    return `it was written by a newer nsight-lab (output version ${version}, this extension reads ${BUNDLE_VERSION}): upgrade nsight-lab`;
  }
  const checks: [string, boolean][] = [
    ['session_id', typeof data.session_id === 'number'],
    [
      'status',
      typeof data.status === 'string' && STATUSES.includes(data.status)
    ],
    ['progress', isObject(data.progress)],
    ['message', typeof data.message === 'string'],
    [
      'chart_order',
      Array.isArray(data.chart_order) &&
        data.chart_order.every(name => typeof name === 'string')
    ],
    [
      'figures',
      isObject(data.figures) &&
        Object.values(data.figures).every(
          figure => isObject(figure) && Array.isArray(figure.data)
        )
    ],
    [
      'summary',
      Array.isArray(data.summary) && data.summary.every(row => isObject(row))
    ],
    [
      'summary_columns',
      Array.isArray(data.summary_columns) &&
        data.summary_columns.every(name => typeof name === 'string')
    ],
    ['sidebar_link', typeof data.sidebar_link === 'string'],
    [
      'verdicts',
      data.verdicts === undefined ||
        data.verdicts === null ||
        (isObject(data.verdicts) &&
          Array.isArray(data.verdicts.rows) &&
          isObject(data.verdicts.verdict) &&
          isObject(data.verdicts.scope))
    ],
    [
      'headline',
      data.headline === undefined || typeof data.headline === 'string'
    ],
    [
      'checks',
      data.checks === undefined ||
        (Array.isArray(data.checks) && data.checks.every(isObject))
    ],
    [
      'findings',
      data.findings === undefined ||
        (Array.isArray(data.findings) && data.findings.every(isFinding))
    ]
  ];
  const bad = checks.filter(([, ok]) => !ok).map(([key]) => key);
  return bad.length > 0 ? `unreadable ${bad.join(', ')}` : null;
}

/**
 * Read `data` as a session bundle.
 *
 * @returns The bundle, or one line saying what is wrong and what to do.
 */
export function readBundle(data: unknown): ISessionBundle | string {
  const what = isObject(data) ? problem(data) : 'it is not a JSON object';
  if (what !== null) {
    return `[nsight-lab] cannot draw this output: ${what}. Re-run the cell to make it again.`;
  }
  return data as unknown as ISessionBundle;
}

/**
 * `rows` with their keys in the served column order (the table shows the columns
 * in the rows' key order); keys the order does not name keep theirs, after it.
 */
export function inServedOrder(
  rows: readonly ISummaryRow[],
  columns: readonly string[]
): ISummaryRow[] {
  return rows.map(row => {
    const ordered: ISummaryRow = {};
    for (const key of [...columns, ...Object.keys(row)]) {
      if (key in row && !(key in ordered)) {
        ordered[key] = row[key];
      }
    }
    return ordered;
  });
}

/** The verdict table of a bundle against its baseline, with its heading. */
export function verdictsNode(table: IVerdictTable): HTMLElement {
  const node = document.createElement('div');
  node.className = `${RENDERER_CLASS}-verdicts jp-nsightLab-CompareView`;
  const heading = document.createElement('div');
  heading.className = `${RENDERER_CLASS}-verdictsHeading`;
  const against = table.baseline
    ? `baseline ${table.baseline} (session ${table.a})`
    : `session ${table.a}`;
  heading.textContent = `Against ${against}`;
  node.appendChild(heading);
  renderVerdicts(node, table);
  return node;
}

/** A widget model that holds `bundle` and never changes. */
export function bundleModel(bundle: ISessionBundle): IWidgetModel {
  const traits: IWidgetTraits = {
    session_id: bundle.session_id,
    status: bundle.status,
    progress: bundle.progress,
    message: bundle.message,
    figures: bundle.figures,
    chart_order: bundle.chart_order,
    figures_seq: 0,
    append: {},
    summary: inServedOrder(bundle.summary, bundle.summary_columns),
    sidebar_link: bundle.sidebar_link,
    headline: bundle.headline ?? '',
    checks: bundle.checks ?? [],
    findings: bundle.findings ?? []
  };
  return {
    get: key => traits[key],
    on: () => undefined,
    off: () => undefined
  };
}

/**
 * The renderer of nsight-lab's session JSON in an output area.
 *
 * It draws once attached: plotly measures its element, and an output is rendered
 * before the output area attaches it.
 */
export class SessionRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this._mimeType = options.mimeType;
    this.addClass(RENDERER_CLASS);
  }

  /** Draw the session of `model` (again, if another was drawn). */
  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this._data = model.data[this._mimeType];
    this._drawn = false;
    if (this.isAttached) {
      this._draw();
    }
    return Promise.resolve();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._cleanup?.();
    this._cleanup = null;
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (!this._drawn) {
      this._draw();
    }
  }

  private _draw(): void {
    this._cleanup?.();
    this._cleanup = null;
    this.node.replaceChildren();
    this._drawn = true;
    const bundle = readBundle(this._data);
    if (typeof bundle === 'string') {
      const error = document.createElement('div');
      error.className = `${RENDERER_CLASS}-error`;
      error.textContent = bundle;
      this.node.appendChild(error);
      return;
    }
    const view = document.createElement('div');
    this.node.appendChild(view);
    this._cleanup = renderSession(bundleModel(bundle), view, {
      missing: chartMissing
    });
    if (bundle.verdicts) {
      // Under the summary: the session against its baseline, as served.
      this.node.appendChild(verdictsNode(bundle.verdicts));
    }
  }

  private readonly _mimeType: string;
  private _data: unknown = null;
  private _drawn = false;
  private _cleanup: (() => void) | null = null;
}
