/**
 * Two sessions side by side: per region, metric and config the ratio b/a with its
 * confidence interval; rows whose interval excludes 1 are marked significant.
 */

import { TranslationBundle, nullTranslator } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { ICompareResponse, ICompareRow } from '../types';
import { h } from './dom';
import { formatConfig, formatNumber, sessionTitle } from './format';

/** The ratio cell: `1.234× [1.100, 1.350]`. */
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
      h(
        'p',
        'jp-nsightLab-CompareView-empty',
        'these sessions share no region and metric to compare'
      )
    );
    return;
  }
  const table = h('table', 'jp-nsightLab-Table jp-nsightLab-CompareView-table');
  const head = table.createTHead().insertRow();
  for (const label of [
    'Region',
    'Metric',
    'Config',
    'Mean a',
    'Mean b',
    'b/a [95% CI]',
    'n a/b'
  ]) {
    head.appendChild(h('th', undefined, label));
  }
  const body = table.createTBody();
  for (const row of comparison.rows) {
    const tr = body.insertRow();
    tr.className = row.significant ? 'jp-mod-significant' : '';
    const cells = [
      row.annotation,
      row.metric,
      formatConfig(row.config),
      formatNumber(row.mean_a),
      formatNumber(row.mean_b),
      formatRatio(row),
      `${row.n_a}/${row.n_b}`
    ];
    for (const text of cells) {
      tr.insertCell().textContent = text;
    }
    const mark = tr.cells[5];
    if (row.significant) {
      const badge = h('span', 'jp-nsightLab-CompareView-significant', ' ✱');
      badge.title = trans.__(
        'significant: the 95% interval of the ratio excludes 1'
      );
      mark.appendChild(badge);
    }
  }
  node.appendChild(table);
  node.appendChild(
    h(
      'p',
      'jp-nsightLab-CompareView-legend',
      '✱ significant: the 95% interval of b/a excludes 1'
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
