/**
 * The run table renders the summary rows the server computed; it computes nothing.
 */

import { runTable } from '../../components/RunTable';
import { ISummaryRow } from '../../types';

describe('runTable', () => {
  it('renders the served rows as they are, columns in first-seen order', () => {
    const rows: ISummaryRow[] = [
      {
        Annotation: 'a',
        Metric: 'gpu__time_duration.sum',
        n: 1,
        AvgValue: 1234.5678,
        NumRuns: 200000,
        StableMeasurement: true,
        StdDev: null
      },
      { Annotation: 'b', Metric: 'gpu__time_duration.sum', n: 2, AvgValue: 10 }
    ];

    const table = runTable(rows);

    const head = Array.from(table.querySelectorAll('th')).map(
      th => th.textContent
    );
    expect(head).toEqual([
      'Annotation',
      'Metric',
      'n',
      'AvgValue',
      'NumRuns',
      'StableMeasurement',
      'StdDev'
    ]);
    const cells = Array.from(table.tBodies[0].rows).map(row =>
      Array.from(row.cells).map(td => td.textContent)
    );
    expect(cells[0]).toEqual([
      'a',
      'gpu__time_duration.sum',
      '1',
      '1235',
      '200000',
      'true',
      ''
    ]);
    expect(cells[1]).toEqual([
      'b',
      'gpu__time_duration.sum',
      '2',
      '10',
      '',
      '',
      ''
    ]);
    expect(
      table.tBodies[0].rows[0].cells[3].classList.contains(
        'jp-nsightLab-RunTable-number'
      )
    ).toBe(true);
  });

  it('shows values with their unit, durations in the one duration format', () => {
    const rows: ISummaryRow[] = [
      {
        Annotation: 'a',
        Metric: 'gpu__time_duration.sum',
        AvgValue: 21560000,
        MinValue: 999960,
        NumRuns: 3,
        Unit: 'ns'
      },
      { Annotation: 'a', Metric: 'gbps', AvgValue: 812.25, Unit: 'GB/s' }
    ];

    const table = runTable(rows);

    const head = Array.from(table.querySelectorAll('th')).map(
      th => th.textContent
    );
    expect(head).toEqual([
      'Annotation',
      'Metric',
      'AvgValue',
      'MinValue',
      'NumRuns'
    ]);
    const cells = Array.from(table.tBodies[0].rows).map(row =>
      Array.from(row.cells).map(td => td.textContent)
    );
    expect(cells[0]).toEqual([
      'a',
      'gpu__time_duration.sum',
      '21.56 ms',
      '1.000 ms',
      '3'
    ]);
    expect(cells[1][2]).toBe('812.3 GB/s');
  });

  it('is an empty table without rows', () => {
    const table = runTable([]);
    expect(table.querySelectorAll('td')).toHaveLength(0);
  });
});
