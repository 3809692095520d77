/**
 * Two sessions side by side: per region, metric and config the ratio of medians
 * b/a with its confidence interval and a verdict (faster, slower, no change within
 * noise, deterministic), every value with its unit. What was compared (the configs
 * both sessions share) and why nothing could be are said in words. Everything
 * shown is computed in Python (nsight_lab/compare.py); this only renders it.
 */

import { TranslationBundle, nullTranslator } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { ICompareResponse, ICompareRow } from '../types';
import { h } from './dom';
import { formatConfig, formatQuantity, sessionTitle } from './format';

/** The ratio cell: `1.234× [1.100, 1.350]`; the plain ratio without interval. */
export function formatRatio(row: ICompareRow): string {
  if (row.ratio === null || !Number.isFinite(row.ratio)) {
    return '–';
  }
  const ci =
    row.ci_low !== null && row.ci_high !== null
      ? ` [${row.ci_low.toFixed(3)}, ${row.ci_high.toFixed(3)}]`
      : '';
  return `${row.ratio.toFixed(3)}×${ci}`;
}

/** The verdict cell: as served, `–` when there were too few runs to judge. */
export function formatVerdict(row: ICompareRow): string {
  return row.verdict ?? '–';
}

/** What a verdict means, for the cell's tooltip. */
function verdictTitle(
  row: ICompareRow,
  trans: TranslationBundle,
  confidence: number
): string {
  const level = `${Math.round(confidence * 100)}%`;
  switch (row.verdict) {
    case 'deterministic':
      return trans.__(
        'no noise to judge: a counted value (work model) or the same value in every run; the plain ratio'
      );
    case 'no change':
      return trans.__('within noise: the %1 interval of b/a holds 1', level);
    case null:
      return trans.__('too few runs on a side for an interval');
    default:
      return trans.__('the %1 interval of b/a excludes 1', level);
  }
}

/** The text shown when the sessions have nothing to compare. */
export function emptyText(comparison: ICompareResponse): string {
  const reason = comparison.scope.reason;
  return reason
    ? `nothing to compare: ${reason}`
    : 'these sessions share no region and metric to compare';
}

/** Render a comparison into `node`. */
export function renderComparison(
  node: HTMLElement,
  comparison: ICompareResponse,
  trans: TranslationBundle = nullTranslator.load('nsight-lab')
): void {
  node.replaceChildren();
  const { a, b } = comparison;
  const heading = h('div', 'jp-nsightLab-CompareView-heading');
  heading.append(
    h('div', undefined, `a: #${a.id} ${sessionTitle(a)} (${a.backend})`),
    h('div', undefined, `b: #${b.id} ${sessionTitle(b)} (${b.backend})`)
  );
  node.appendChild(heading);
  if (comparison.rows.length === 0) {
    node.appendChild(
      h('p', 'jp-nsightLab-CompareView-empty', emptyText(comparison))
    );
    return;
  }
  const note = comparison.scope.note;
  if (note) {
    node.appendChild(h('p', 'jp-nsightLab-CompareView-scope', note));
  }
  const level = `${Math.round(comparison.confidence * 100)}%`;
  const table = h('table', 'jp-nsightLab-Table jp-nsightLab-CompareView-table');
  const head = table.createTHead().insertRow();
  for (const label of [
    'Region',
    'Metric',
    'Config',
    'Median a',
    'Median b',
    `b/a [${level} CI]`,
    'Verdict',
    'n a/b'
  ]) {
    head.appendChild(h('th', undefined, label));
  }
  const body = table.createTBody();
  for (const row of comparison.rows) {
    const tr = body.insertRow();
    tr.className = row.significant ? 'jp-mod-significant' : '';
    tr.dataset.verdict = row.verdict ?? '';
    const cells = [
      row.annotation,
      row.metric,
      formatConfig(row.config),
      formatQuantity(row.median_a, row.unit),
      formatQuantity(row.median_b, row.unit),
      formatRatio(row),
      formatVerdict(row),
      `${row.n_a}/${row.n_b}`
    ];
    for (const text of cells) {
      tr.insertCell().textContent = text;
    }
    tr.cells[3].title = trans.__(
      'mean %1',
      formatQuantity(row.mean_a, row.unit)
    );
    tr.cells[4].title = trans.__(
      'mean %1',
      formatQuantity(row.mean_b, row.unit)
    );
    tr.cells[6].title = verdictTitle(row, trans, comparison.confidence);
    if (row.significant && row.verdict !== 'deterministic') {
      const badge = h('span', 'jp-nsightLab-CompareView-significant', ' ✱');
      badge.title = trans.__(
        'significant: the %1 interval of the ratio excludes 1',
        level
      );
      tr.cells[5].appendChild(badge);
    }
  }
  node.appendChild(table);
  node.appendChild(
    h(
      'p',
      'jp-nsightLab-CompareView-legend',
      `b/a is the ratio of medians (robust to outliers); ✱ significant: its ${level} interval excludes 1; deterministic: no noise to judge, the plain ratio`
    )
  );
}

/** The comparison view. */
export class CompareView extends Widget {
  constructor(trans: TranslationBundle) {
    super();
    this._trans = trans;
    this.addClass('jp-nsightLab-CompareView');
  }

  setComparison(comparison: ICompareResponse): void {
    renderComparison(this.node, comparison, this._trans);
    this.node.dataset.a = `${comparison.a.id}`;
    this.node.dataset.b = `${comparison.b.id}`;
  }

  private _trans: TranslationBundle;
}
