/**
 * The summary of a session: the region table the server computed and formatted
 * over every run (nsight_lab/views/show.py, through nsight_lab/results.py
 * `summary_rows`: Region, Duration, RSD, GB/s, TFLOP/s, % of roof, Bound first),
 * then the checks (a number that cannot be true: its cause and what to do; a
 * launch-bound note), then the counter table folded behind a toggle, its all-zero
 * rows folded again. Every cell is text as served: nothing is summarised, formatted
 * or judged here (the checks are nsight_lab/analysis/validity.py's).
 */

import { ICheck, ICounterTable, ISummaryRow } from '../types';
import { summaryColumns } from '../widget/format';
import { h, textTable } from './dom';

/** The region columns that hold names, not numbers (left-aligned). */
const TEXT_COLUMNS: readonly string[] = [
  'Region',
  'Bound',
  'Flag',
  'Bytes',
  'FLOPs'
];

/** What the served `Flag` cell reads when there is nothing to flag (an en dash). */
const NOTHING = '\u2013';

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
    rows.forEach((row, i) => {
      const cell = body.rows[i].cells[j];
      cell.classList.toggle('jp-nsightLab-RunTable-number', numeric);
      const text = cellText(row, column);
      if (column === 'Flag' && text !== '' && text !== NOTHING) {
        cell.classList.add('jp-nsightLab-RunTable-flag');
      }
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

/**
 * The served checks as a list: each flag (what cannot be true or is not usable,
 * in the flag's colour) with its cause and what to do, then each note (launch-
 * bound, a value not modelled) as a line. `null` without.
 */
export function checksList(
  checks: readonly ICheck[] | null | undefined
): HTMLUListElement | null {
  if (!checks || checks.length === 0) {
    return null;
  }
  const list = h('ul', 'jp-nsightLab-RunTable-checks');
  // The flags (numbers not to read as they are) first, the notes after them.
  const isNote = (check: ICheck): boolean =>
    check.kind === 'launch_bound' || check.kind === 'not_modelled';
  const ordered = [
    ...checks.filter(check => !isNote(check)),
    ...checks.filter(isNote)
  ];
  // One line per finding, its regions listed: twelve regions throttled the same
  // way are one line, not twelve. Flags with one action (five regions too spread
  // on a busy host) are one item: their lines, each cause once after the lines it
  // explains, then what to do once.
  const groups = new Map<
    string,
    { check: ICheck; causes: Map<string, Map<string, string[]>> }
  >();
  for (const check of ordered) {
    const key = JSON.stringify(
      isNote(check) ? [check.kind, check.text] : [check.kind, check.action]
    );
    const where = check.config
      ? `${check.region} (${check.config})`
      : check.region;
    const group = groups.get(key) ?? { check, causes: new Map() };
    groups.set(key, group);
    const texts = group.causes.get(check.cause) ?? new Map<string, string[]>();
    group.causes.set(check.cause, texts);
    texts.set(check.text, [...(texts.get(check.text) ?? []), where]);
  }
  const line = (regions: string[], text: string): string =>
    `${
      regions.length > 3
        ? `${regions.length} regions (${regions.slice(0, 3).join(', ')}, …)`
        : regions.join(', ')
    }: ${text}`;
  for (const { check, causes } of groups.values()) {
    const item = h('li');
    const all: string[] = [];
    causes.forEach(texts => texts.forEach(regions => all.push(...regions)));
    item.title = all.join(', ');
    // A note (launch-bound, a value not modelled) is one line; a flag has its
    // cause and what to do, each line only where there is one.
    if (isNote(check)) {
      item.classList.add('jp-nsightLab-RunTable-note');
      const [texts] = Array.from(causes.values());
      const [[text, regions]] = Array.from(texts);
      item.textContent = line(regions, text);
    } else {
      item.classList.add('jp-nsightLab-RunTable-flag');
      for (const [cause, texts] of causes) {
        for (const [text, regions] of texts) {
          item.append(h('strong', undefined, `\u26a0 ${line(regions, text)}`));
        }
        if (cause) {
          item.append(h('div', undefined, `cause: ${cause}`));
        }
      }
      if (check.action) {
        item.append(h('div', undefined, `do: ${check.action}`));
      }
    }
    list.appendChild(item);
  }
  return list;
}

/**
 * The region table (scrolling within the panel if it must), the checks under it,
 * and the counters.
 */
export function summarySection(
  rows: readonly ISummaryRow[],
  counters?: ICounterTable | null,
  checks?: readonly ICheck[] | null
): HTMLElement[] {
  const scroll = h('div', 'jp-nsightLab-Table-scroll');
  scroll.appendChild(runTable(rows));
  // The answer first: what cannot be true (the findings), then the table.
  const out: HTMLElement[] = [];
  const said = checksList(checks);
  if (said) {
    out.push(said);
  }
  out.push(scroll);
  const folded = counterSection(counters);
  if (folded) {
    out.push(folded);
  }
  return out;
}
