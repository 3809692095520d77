/**
 * Two sessions side by side: per region, metric and config the ratio of medians
 * b/a with its confidence interval and a verdict (faster, slower, no change,
 * inconclusive: clocks), every value with its unit, and b's overall verdict. What
 * was compared and why nothing could be are said in words; a row whose SM clocks
 * differ or that has throttled runs is flagged with its note; deterministic rows
 * (work-model counts) fold behind a toggle. Everything shown is computed and
 * formatted in Python (nsight_lab/analysis/compare.py, baselines.py, views/verdicts.py:
 * each row's `cells`, the table's `legend`); this only renders it. The same table
 * is a session's verdicts against its baseline (the session view, a cell's final
 * output).
 */

import { TranslationBundle, nullTranslator } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import {
  ICompareCells,
  ICompareResponse,
  ICompareRow,
  IVerdictTable
} from '../types';
import { h } from './dom';
import { sessionTitle } from './format';

/** What a row's cells read when the server sent none (an older server). */
const MISSING = '–';

/** A row's display text, as the server formatted it. */
export function rowCells(row: ICompareRow): ICompareCells {
  return (
    row.cells ?? {
      region: row.annotation,
      metric: row.label ?? row.metric,
      config: MISSING,
      median_a: MISSING,
      median_b: MISSING,
      change: MISSING,
      ratio: MISSING,
      verdict: row.verdict ?? MISSING,
      note: row.note
    }
  );
}

/** The ratio cell, as served: `1.234× [1.100, 1.350]`. */
export function formatRatio(row: ICompareRow): string {
  return rowCells(row).ratio;
}

/** The verdict cell, as served (`–` when there were too few runs to judge). */
export function formatVerdict(row: ICompareRow): string {
  return row.verdict ?? MISSING;
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
            'no change: the %1 interval of b/a holds 1, or the change is within ±%2%',
            level,
            `${+(row.threshold * 100).toFixed(3)}`
          )
        : trans.__('within noise: the %1 interval of b/a holds 1', level);
    case 'inconclusive: clocks':
      return row.note;
    case null:
      return trans.__('too few runs on a side for an interval');
    default:
      return trans.__('the %1 interval of b/a excludes 1', level);
  }
}

/** The rows, scope and overall verdict: a comparison, or a verdict table. */
export type VerdictRows = Pick<
  IVerdictTable,
  | 'rows'
  | 'scope'
  | 'confidence'
  | 'verdict'
  | 'threshold'
  | 'baseline'
  | 'legend'
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

/** The columns of the verdict table: header label and cell key. */
function columns(level: string): [string, keyof ICompareCells][] {
  // The answer first: a narrow panel shows the verdict and the change.
  return [
    ['Region', 'region'],
    ['Metric', 'metric'],
    ['Config', 'config'],
    ['Verdict', 'verdict'],
    ['Change', 'change'],
    [`b/a [${level} CI]`, 'ratio'],
    ['Median a', 'median_a'],
    ['Median b', 'median_b'],
    ['Note', 'note']
  ];
}

/**
 * The note every row shares, said once above the table instead of in each row;
 * `null` when the rows' notes differ (or there is one row or none).
 */
export function sharedNote(rows: readonly ICompareRow[]): string | null {
  const notes = new Set(rows.map(row => rowCells(row).note));
  if (rows.length < 2 || notes.size !== 1) {
    return null;
  }
  const [note] = notes;
  return note ? note : null;
}

/** A table of `rows` (their served cells), with the verdict's tooltip and marks. */
function rowsTable(
  rows: readonly ICompareRow[],
  comparison: VerdictRows,
  trans: TranslationBundle,
  className: string
): HTMLTableElement {
  const level = `${Math.round(comparison.confidence * 100)}%`;
  const cols = columns(level);
  // A column with one value for every row (the config, the metric, a note they
  // share) says nothing per row: it is left out (the shared note is said once).
  const same = (key: keyof ICompareCells): boolean =>
    rows.length > 1 && new Set(rows.map(row => rowCells(row)[key])).size === 1;
  const shown = cols.filter(
    ([, key]) =>
      !(key === 'config' || key === 'metric' || key === 'note') || !same(key)
  );
  const table = h('table', `jp-nsightLab-Table ${className}`);
  const head = table.createTHead().insertRow();
  for (const [label, key] of shown) {
    const th = h('th', undefined, label);
    th.dataset.column = key;
    head.appendChild(th);
  }
  const body = table.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    tr.className = row.significant ? 'jp-mod-significant' : '';
    tr.classList.toggle('jp-mod-flagged', row.flagged);
    tr.dataset.verdict = row.verdict ?? '';
    const cells = rowCells(row);
    for (const [, key] of shown) {
      const td = tr.insertCell();
      td.textContent = cells[key];
      td.dataset.column = key;
      if (key === 'verdict') {
        td.title = verdictTitle(row, trans, comparison.confidence);
      } else if (key === 'note' && cells.note) {
        td.title = cells.note;
      }
    }
  }
  return table;
}

/**
 * Append the overall verdict, what was compared and the table of rows to `node`:
 * the body of a comparison and a session's verdicts against its baseline. Rows
 * the server folds (deterministic: nothing to judge) go under a toggle.
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
  const shown = comparison.rows.filter(row => !row.folded);
  const folded = comparison.rows.filter(row => row.folded);
  const shared = sharedNote(shown);
  if (shared) {
    node.appendChild(
      h('p', 'jp-nsightLab-CompareView-note', trans.__('Every row: %1', shared))
    );
  }
  const wrap = h('div', 'jp-nsightLab-CompareView-scroll');
  wrap.appendChild(
    rowsTable(shown, comparison, trans, 'jp-nsightLab-CompareView-table')
  );
  node.appendChild(wrap);
  if (folded.length > 0) {
    const details = h('details', 'jp-nsightLab-CompareView-folded');
    details.appendChild(
      h(
        'summary',
        undefined,
        trans._n(
          '%1 deterministic row (work-model counts: nothing to judge)',
          '%1 deterministic rows (work-model counts: nothing to judge)',
          folded.length
        )
      )
    );
    const inner = h('div', 'jp-nsightLab-CompareView-scroll');
    inner.appendChild(
      rowsTable(
        folded,
        comparison,
        trans,
        'jp-nsightLab-CompareView-foldedTable'
      )
    );
    details.appendChild(inner);
    node.appendChild(details);
  }
  if (comparison.legend) {
    node.appendChild(
      h('p', 'jp-nsightLab-CompareView-legend', comparison.legend)
    );
  }
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
