/**
 * The summary of a session: the region table the server computed and formatted
 * over every run (nsight_lab/views/summary.py, through nsight_lab/results.py
 * `summary_rows`: Region, Duration, RSD, GB/s, TFLOP/s, % of roof, Bound first),
 * then the counter table folded behind a toggle, its all-zero rows folded again.
 * Every cell is text as served: nothing is summarised or formatted here.
 */

import { ICounterTable, ISummaryRow } from '../types';
import { summaryColumns } from '../widget/format';
import { h, textTable } from './dom';

/** The region columns that hold names, not numbers (left-aligned). */
const TEXT_COLUMNS: readonly string[] = ['Region', 'Bound', 'Bytes', 'FLOPs'];

/** A served cell as text (`''` for a missing one). */
function cellText(row: ISummaryRow, column: string): string {
  const value = row[column];
  return value === null || value === undefined ? '' : String(value);
}

/** The served region rows as a table (columns as served; names are text). */
export function runTable(rows: readonly ISummaryRow[]): HTMLTableElement {
  const columns = summaryColumns(rows);
  const table = textTable(
    'jp-nsightLab-RunTable',
    columns,
    rows.map(row => columns.map(column => cellText(row, column)))
  );
  const body = table.tBodies[0];
  const header = table.tHead!.rows[0];
  columns.forEach((column, j) => {
    header.cells[j].dataset.column = column;
    const numeric = !TEXT_COLUMNS.includes(column) && j > 0;
    rows.forEach((_, i) => {
      body.rows[i].cells[j].classList.toggle(
        'jp-nsightLab-RunTable-number',
        numeric
      );
    });
  });
  return table;
}

/**
 * The counter table under a toggle: the counters that read something, and those
 * that read 0 in every run under a toggle of their own. `null` without counters.
 */
export function counterSection(
  counters: ICounterTable | null | undefined
): HTMLDetailsElement | null {
  if (!counters || counters.rows.length === 0) {
    return null;
  }
  const read = counters.rows.filter(row => !row.zero);
  const zero = counters.rows.filter(row => row.zero);
  const section = h('details', 'jp-nsightLab-RunTable-counters');
  const label =
    `Counters: ${read.length} row${read.length === 1 ? '' : 's'}` +
    (zero.length ? ` (${zero.length} more read 0 in every run)` : '');
  section.appendChild(h('summary', undefined, label));
  if (read.length > 0) {
    const scroll = h('div', 'jp-nsightLab-Table-scroll');
    scroll.appendChild(
      textTable(
        'jp-nsightLab-RunTable jp-nsightLab-CounterTable',
        counters.columns,
        read.map(row => row.cells)
      )
    );
    section.appendChild(scroll);
  }
  if (zero.length > 0) {
    const folded = h('details', 'jp-nsightLab-RunTable-zero');
    folded.appendChild(
      h(
        'summary',
        undefined,
        `${zero.length} counter row${zero.length === 1 ? '' : 's'} that read 0 in every run`
      )
    );
    const scroll = h('div', 'jp-nsightLab-Table-scroll');
    scroll.appendChild(
      textTable(
        'jp-nsightLab-RunTable jp-nsightLab-CounterTable',
        counters.columns,
        zero.map(row => row.cells)
      )
    );
    folded.appendChild(scroll);
    section.appendChild(folded);
  }
  return section;
}

/** The region table (scrolling within the panel if it must) and the counters. */
export function summarySection(
  rows: readonly ISummaryRow[],
  counters?: ICounterTable | null
): HTMLElement[] {
  const scroll = h('div', 'jp-nsightLab-Table-scroll');
  scroll.appendChild(runTable(rows));
  const folded = counterSection(counters);
  return folded ? [scroll, folded] : [scroll];
}
