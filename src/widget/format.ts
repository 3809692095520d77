/**
 * Text of the summary table, shared by the inline widget and the session panel's
 * run table. Nothing here computes a statistic: the rows, the progress line and the
 * chart order are computed once in Python and only rendered. Values with a unit go
 * through the one formatter of `components/format.ts` (durations as ns/µs/ms/s).
 */
import { formatQuantity } from '../components/format';
import type { ISummaryRow, SummaryValue } from '../types';

/**
 * The columns whose values are in the row's `Unit` (nsight_lab/results.py): shown
 * with their unit, so the table needs no `Unit` column.
 */
export const UNIT_COLUMNS: readonly string[] = [
  'AvgValue',
  'StdDev',
  'MinValue',
  'MaxValue'
];

/** The served column that names the unit of {@link UNIT_COLUMNS}. */
const UNIT_COLUMN = 'Unit';

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

/**
 * A summary table cell as text: a value of {@link UNIT_COLUMNS} with the row's unit
 * (`21.56 ms` for 21,560,000 ns), anything else through {@link formatCell}.
 */
export function formatSummaryCell(row: ISummaryRow, column: string): string {
  const value = row[column] ?? null;
  const unit = row[UNIT_COLUMN];
  if (
    typeof value === 'number' &&
    typeof unit === 'string' &&
    UNIT_COLUMNS.includes(column)
  ) {
    return formatQuantity(value, unit);
  }
  return formatCell(value);
}

/**
 * The columns of summary rows: every key, in first-seen order (as served), less
 * `Unit` (the value cells carry it).
 */
export function summaryColumns(rows: readonly ISummaryRow[]): string[] {
  const columns: string[] = [];
  for (const row of rows) {
    for (const key of Object.keys(row)) {
      if (key !== UNIT_COLUMN && !columns.includes(key)) {
        columns.push(key);
      }
    }
  }
  return columns;
}
