/**
 * Text of the summary table, shared by the inline widget and the sidebar's run
 * table. Nothing here computes a statistic: the rows, the progress line and the
 * chart order are computed once in Python and only rendered.
 */
import type { ISummaryRow, SummaryValue } from '../types';

/** A summary table cell as text (numbers to four significant digits). */
export function formatCell(value: SummaryValue): string {
  if (value === null) {
    return '';
  }
  if (typeof value === 'number') {
    if (Number.isInteger(value) || !Number.isFinite(value)) {
      return String(value);
    }
    return Number(value.toPrecision(4)).toString();
  }
  return String(value);
}

/** The columns of summary rows: every key, in first-seen order (as served). */
export function summaryColumns(rows: readonly ISummaryRow[]): string[] {
  const columns: string[] = [];
  for (const row of rows) {
    for (const key of Object.keys(row)) {
      if (!columns.includes(key)) {
        columns.push(key);
      }
    }
  }
  return columns;
}
