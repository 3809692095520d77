/**
 * The run table renders the summary rows and counters the server computed and
 * formatted; it computes and formats nothing (issue 20: one formatter, in Python).
 */

import {
  checksList,
  counterSection,
  runTable,
  summarySection
} from '../../components/RunTable';
import { ICheck, ICounterTable, ISummaryRow } from '../../types';

const ROWS: ISummaryRow[] = [
  {
    Region: 'mlp_up',
    Duration: '1.410 ms',
    RSD: '0.13 %',
    'GB/s': '985.5',
    'TFLOP/s': '810.2',
    '% of roof': '82 %',
    Bound: 'compute'
  },
  {
    Region: 'gelu',
    Duration: '173.7 µs',
    RSD: '<0.01 %',
    'GB/s': '2977',
    'TFLOP/s': '15.28',
    '% of roof': '62 %',
    Bound: 'memory'
  }
];

const COUNTERS: ICounterTable = {
  columns: ['Region', 'Metric', 'Median', 'RSD', 'Runs'],
  rows: [
    {
      cells: ['gelu', 'dram__bytes_read.sum', '268.5 MB', '0 %', '2'],
      zero: false
    },
    {
      cells: ['gelu', 'sm__ops_path_tensor_src_fp64.sum', '0 ops', '0 %', '2'],
      zero: true
    },
    {
      cells: ['mlp_up', 'sm__ops_path_tensor_src_fp8.sum', '0 ops', '0 %', '2'],
      zero: true
    }
  ],
  zero: 2
};

function texts(table: HTMLTableElement): string[][] {
  return Array.from(table.tBodies[0].rows).map(row =>
    Array.from(row.cells).map(td => td.textContent ?? '')
  );
}

describe('runTable', () => {
  it('renders the served rows as they are, the answer first', () => {
    const table = runTable(ROWS);

    const head = Array.from(table.querySelectorAll('th')).map(
      th => th.textContent
    );
    expect(head).toEqual([
      'Region',
      'Duration',
      'RSD',
      'GB/s',
      'TFLOP/s',
      '% of roof',
      'Bound'
    ]);
    expect(texts(table)[1]).toEqual([
      'gelu',
      '173.7 µs',
      '<0.01 %',
      '2977',
      '15.28',
      '62 %',
      'memory'
    ]);
    const [region, duration] = Array.from(table.tBodies[0].rows[0].cells);
    expect(region.classList.contains('jp-nsightLab-RunTable-number')).toBe(
      false
    );
    expect(duration.classList.contains('jp-nsightLab-RunTable-number')).toBe(
      true
    );
  });

  it('is an empty table without rows', () => {
    const table = runTable([]);
    expect(table.querySelectorAll('td')).toHaveLength(0);
  });
});

describe('counterSection', () => {
  it('folds the counters, and those that read 0 in every run again', () => {
    const section = counterSection(COUNTERS)!;

    expect(section.open).toBe(false);
    expect(section.querySelector('summary')?.textContent).toBe(
      'Counters: 1 row (2 more read 0 in every run)'
    );
    const [read, zero] = Array.from(
      section.querySelectorAll<HTMLTableElement>('table')
    );
    expect(texts(read)).toEqual([
      ['gelu', 'dram__bytes_read.sum', '268.5 MB', '0 %', '2']
    ]);
    const folded = section.querySelector<HTMLDetailsElement>(
      '.jp-nsightLab-RunTable-zero'
    );
    expect(folded?.open).toBe(false);
    expect(folded?.querySelector('summary')?.textContent).toBe(
      '2 counter rows that read 0 in every run'
    );
    expect(texts(zero).map(row => row[1])).toEqual([
      'sm__ops_path_tensor_src_fp64.sum',
      'sm__ops_path_tensor_src_fp8.sum'
    ]);
  });

  it('is nothing without counters', () => {
    expect(counterSection(null)).toBeNull();
    expect(counterSection({ ...COUNTERS, rows: [], zero: 0 })).toBeNull();
    expect(summarySection(ROWS, null)).toHaveLength(1);
    expect(summarySection(ROWS, COUNTERS)).toHaveLength(2);
  });
});

describe('checks (issue 28: a number that cannot be true is never shown as true)', () => {
  const FLAGGED: ISummaryRow[] = [
    {
      Region: 'backward',
      Duration: '2.083 µs',
      RSD: '0.5 %',
      'GPU busy': '0.03 %',
      '% of roof': '68934 %',
      Flag: '68934 % of roof cannot be true'
    },
    {
      Region: 'step',
      Duration: '10.80 ms',
      RSD: '24 %',
      'GPU busy': '30 % launch-bound',
      '% of roof': '\u2013',
      Flag: '\u2013'
    }
  ];
  const CHECKS: ICheck[] = [
    {
      region: 'backward',
      config: '',
      kind: 'over_roof',
      text: '68934 % of roof cannot be true',
      cause: 'its duration misses kernels it caused (other threads or streams)',
      action: 'check its kernels and threads; time it with --backend events'
    },
    {
      region: '<img src=x onerror=alert(1)>',
      config: 'n=2',
      kind: 'launch_bound',
      text: 'launch-bound: GPU busy 30 % of the span; the spread follows the host',
      cause: '',
      action: ''
    }
  ];

  it('marks the flagged cell and lists each flag with its cause and action', () => {
    // The findings first, then the table.
    const [list, scroll, counters] = summarySection(FLAGGED, COUNTERS, CHECKS);
    const table = scroll.querySelector('table')!;
    const flagColumn = summaryColumnsIndex(table, 'Flag');
    const body = table.tBodies[0];
    const flagged = body.rows[0].cells[flagColumn];
    expect(flagged.textContent).toBe('68934 % of roof cannot be true');
    expect(flagged.classList).toContain('jp-nsightLab-RunTable-flag');
    expect(body.rows[1].cells[flagColumn].classList).not.toContain(
      'jp-nsightLab-RunTable-flag'
    );
    expect(list.classList).toContain('jp-nsightLab-RunTable-checks');
    const items = Array.from(list.querySelectorAll('li'));
    expect(items).toHaveLength(2);
    expect(items[0].querySelector('strong')!.textContent).toBe(
      '\u26a0 backward: 68934 % of roof cannot be true'
    );
    expect(
      Array.from(items[0].querySelectorAll('div'), d => d.textContent)
    ).toEqual([
      'cause: its duration misses kernels it caused (other threads or streams)',
      'do: check its kernels and threads; time it with --backend events'
    ]);
    // A note is one line, the served text, names shown as text, never markup.
    expect(items[1].classList).toContain('jp-nsightLab-RunTable-note');
    expect(items[1].textContent).toBe(
      '<img src=x onerror=alert(1)> (n=2): launch-bound: GPU busy 30 % of the ' +
        'span; the spread follows the host'
    );
    expect(list.querySelector('img')).toBeNull();
    expect(counters.tagName).toBe('DETAILS');
  });

  it('adds nothing when the server sent no checks', () => {
    expect(checksList([])).toBeNull();
    expect(checksList(undefined)).toBeNull();
    expect(summarySection(ROWS, null, [])).toHaveLength(1);
  });
});

function summaryColumnsIndex(table: HTMLTableElement, column: string): number {
  return Array.from(table.tHead!.rows[0].cells).findIndex(
    th => th.textContent === column
  );
}
