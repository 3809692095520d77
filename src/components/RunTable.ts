/**
 * The summary table of a session: the rows the server computed over every run
 * (nsight_lab/results.py `summary_rows`, the inline widget's rows too), rendered as
 * text cells (values with their unit: `widget/format.ts`). Nothing is summarised
 * here.
 */

import { ISummaryRow } from '../types';
import { formatSummaryCell, summaryColumns } from '../widget/format';
import { textTable } from './dom';

/** The served summary rows as a table (columns as served; names are text). */
export function runTable(rows: readonly ISummaryRow[]): HTMLTableElement {
  const columns = summaryColumns(rows);
  const table = textTable(
    'jp-nsightLab-RunTable',
    columns,
    rows.map(row => columns.map(column => formatSummaryCell(row, column)))
  );
  const body = table.tBodies[0];
  rows.forEach((row, i) => {
    columns.forEach((column, j) => {
      if (typeof row[column] === 'number') {
        body.rows[i].cells[j].classList.add('jp-nsightLab-RunTable-number');
      }
    });
  });
  return table;
}
