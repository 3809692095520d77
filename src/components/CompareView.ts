/**
 * Two sessions side by side: per region, metric and config the ratio of medians
 * b/a with its confidence interval and a verdict (faster, slower, no change within
 * noise, deterministic), every value with its unit, and b's overall verdict. What
 * was compared (the configs both sessions share) and why nothing could be are said
 * in words; a row whose SM clocks differ or that has throttled runs is flagged with
 * its note. Everything shown is computed in Python (nsight_lab/compare.py,
 * baselines.py); this only renders it. The same table is a session's verdicts
 * against its baseline (the session view, a cell's final output).
 */

import { TranslationBundle, nullTranslator } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { ICompareResponse, ICompareRow, IVerdictTable } from '../types';
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
      return row.threshold > 0
        ? trans.__(
            'no change: the %1 interval of b/a is not wholly beyond ±%2%',
            level,
            `${+(row.threshold * 100).toFixed(3)}`
          )
        : trans.__('within noise: the %1 interval of b/a holds 1', level);
    case null:
      return trans.__('too few runs on a side for an interval');
    default:
      return trans.__('the %1 interval of b/a excludes 1', level);
  }
}

/** The rows, scope and overall verdict: a comparison, or a verdict table. */
export type VerdictRows = Pick<
  IVerdictTable,
  'rows' | 'scope' | 'confidence' | 'verdict' | 'threshold' | 'baseline'
>;

/** The overall line: `slower: 1 slower, 1 no change` (as served). */
export function overallText(table: VerdictRows): string {
  const word = table.verdict.verdict ?? 'nothing judged';
  return `${word}: ${table.verdict.note}`;
}

/** The text shown when the sessions have nothing to compare. */
export function emptyText(comparison: Pick<VerdictRows, 'scope'>): string {
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
  renderVerdicts(node, comparison, trans);
}

/**
 * Append the overall verdict, what was compared and the table of rows to `node`:
 * the body of a comparison and a session's verdicts against its baseline.
 */
export function renderVerdicts(
  node: HTMLElement,
  comparison: VerdictRows,
  trans: TranslationBundle = nullTranslator.load('nsight-lab')
): void {
  if (comparison.rows.length === 0) {
    node.appendChild(
      h('p', 'jp-nsightLab-CompareView-empty', emptyText(comparison))
    );
    return;
  }
  const overall = h(
    'p',
    'jp-nsightLab-CompareView-overall',
    overallText(comparison)
  );
  overall.dataset.verdict = comparison.verdict.verdict ?? '';
  node.appendChild(overall);
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
    'n a/b',
    'Note'
  ]) {
    head.appendChild(h('th', undefined, label));
  }
  const body = table.createTBody();
  for (const row of comparison.rows) {
    const tr = body.insertRow();
    tr.className = row.significant ? 'jp-mod-significant' : '';
    tr.classList.toggle('jp-mod-flagged', row.flagged);
    tr.dataset.verdict = row.verdict ?? '';
    const cells = [
      row.annotation,
      row.metric,
      formatConfig(row.config),
      formatQuantity(row.median_a, row.unit),
      formatQuantity(row.median_b, row.unit),
      formatRatio(row),
      formatVerdict(row),
      `${row.n_a}/${row.n_b}`,
      row.note
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
    if (row.flagged) {
      const flag = h('span', 'jp-nsightLab-CompareView-flag', ' ⚠');
      // The row's note says which: SM clocks, the host's speed or throttling.
      flag.title =
        row.note ||
        trans.__(
          'SM clocks or host speeds apart, or runs throttled: the ratio may not be the code’s'
        );
      tr.cells[6].appendChild(flag);
    }
  }
  node.appendChild(table);
  node.appendChild(
    h(
      'p',
      'jp-nsightLab-CompareView-legend',
      `b/a is the ratio of medians (robust to outliers); ✱ significant: its ${level} interval excludes 1; deterministic: no noise to judge, the plain ratio; ⚠ flagged: SM clocks apart by more than 2%, host speeds apart by more than 15% (cpu backend) or throttled runs; the row's note says which`
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
