/**
 * Text of the summary table, shared by the inline widget and the session panel's
 * run table. Nothing here computes a statistic: the rows, the progress line and the
 * chart order are computed and formatted once in Python (nsight_lab/text/units.py)
 * and only rendered.
 */
import type { ISummaryRow, SummaryValue } from '../types';

/** A summary table cell as text: the server's text, shown as sent. */
export function formatCell(value: SummaryValue): string {
  return value === null ? '' : String(value);
}

/** The text of `column` in `row`, as the server formatted it. */
export function formatSummaryCell(row: ISummaryRow, column: string): string {
  return formatCell(row[column] ?? null);
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
