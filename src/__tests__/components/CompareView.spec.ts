/**
 * CompareView: the two sessions, one row per region, metric and config with the
 * ratio of medians b/a, its interval and the served verdict, values with their
 * units, significant rows marked (never deterministic ones), what was compared and
 * why nothing could be in words, names shown as text.
 */

import { nullTranslator } from '@jupyterlab/translation';

import {
  CompareView,
  formatRatio,
  formatVerdict,
  renderVerdicts
} from '../../components/CompareView';
import { formatQuantity } from '../../components/format';
import { ICompareResponse, ICompareRow } from '../../types';
import { XSS, compareResponse } from '../fixtures';

const trans = nullTranslator.load('nsight-lab');

function cells(row: HTMLTableRowElement): string[] {
  return Array.from(row.cells).map(cell => cell.textContent ?? '');
}

describe('CompareView', () => {
  it('shows both sessions and a row per comparison with ratio and interval', () => {
    const view = new CompareView(trans);

    view.setComparison(compareResponse(2, 7));

    const heading = view.node.querySelector(
      '.jp-nsightLab-CompareView-heading'
    );
    expect(heading?.children[0].textContent).toBe('a: #2 nb2.ipynb (cpu)');
    expect(heading?.children[1].textContent).toBe('b: #7 nb7.ipynb (cpu)');
    expect(view.node.dataset.a).toBe('2');
    expect(view.node.dataset.b).toBe('7');
    const header = view.node.querySelector('thead tr') as HTMLTableRowElement;
    expect(cells(header)).toEqual([
      'Region',
      'Metric',
      'Config',
      'Median a',
      'Median b',
      'b/a [95% CI]',
      'Verdict',
      'n a/b',
      'Note'
    ]);
    const rows = Array.from(
      view.node.querySelectorAll<HTMLTableRowElement>('tbody tr')
    );
    expect(rows.length).toBe(2);
    const [significant, same] = rows.map(cells);
    expect(significant[3]).toBe('100 ns');
    expect(significant[4]).toBe('150 ns');
    expect(significant[5]).toBe('1.500× [1.400, 1.600] ✱');
    expect(significant[6]).toBe('slower');
    expect(significant[7]).toBe('10/10');
    expect(same[0]).toBe('b');
    expect(same[5]).toBe('1.010× [0.950, 1.070]');
    expect(same[6]).toBe('no change');
    expect(rows[1].cells[6].title).toContain('holds 1');
    expect(rows[0].cells[3].title).toBe('mean 100 ns');
    expect(rows[0].classList.contains('jp-mod-significant')).toBe(true);
    expect(rows[1].classList.contains('jp-mod-significant')).toBe(false);
    expect(
      rows[0]
        .querySelector('.jp-nsightLab-CompareView-significant')
        ?.getAttribute('title')
    ).toContain('excludes 1');
    view.dispose();
  });

  it('escapes annotation names', () => {
    const view = new CompareView(trans);

    view.setComparison(compareResponse(1, 2));

    const first = view.node.querySelector('tbody tr td') as HTMLElement;
    expect(first.textContent).toBe(XSS);
    expect(first.innerHTML).toContain('&lt;img');
    expect(view.node.querySelector('img')).toBeNull();
    view.dispose();
  });

  it('says why when the sessions share nothing, and replaces an earlier table', () => {
    const view = new CompareView(trans);
    view.setComparison(compareResponse(1, 2));
    const empty = compareResponse(1, 3);

    view.setComparison({
      ...empty,
      rows: [],
      scope: {
        ...empty.scope,
        regions: [],
        configs: [],
        reason: 'no config in common for mm: a ran n=512; b ran n=1024'
      }
    });

    expect(view.node.querySelector('table')).toBeNull();
    expect(
      view.node.querySelector('.jp-nsightLab-CompareView-empty')?.textContent
    ).toBe(
      'nothing to compare: no config in common for mm: a ran n=512; b ran n=1024'
    );
    view.dispose();
  });

  it('says which configs were compared when the sessions ran different ones', () => {
    const view = new CompareView(trans);
    const response = compareResponse(1, 2);
    const note = 'compared on n=512; only in a: n=256; only in b: n=1024';

    view.setComparison({
      ...response,
      scope: {
        ...response.scope,
        configs_only_a: [{ n: 256 }],
        configs_only_b: [{ n: 1024 }],
        note
      }
    });

    expect(
      view.node.querySelector('.jp-nsightLab-CompareView-scope')?.textContent
    ).toBe(note);
    // No note when both ran the same configs and regions.
    view.setComparison(response);
    expect(
      view.node.querySelector('.jp-nsightLab-CompareView-scope')
    ).toBeNull();
    view.dispose();
  });

  it('shows deterministic rows with the plain ratio, no mark, units per row', () => {
    const view = new CompareView(trans);
    const response: ICompareResponse = compareResponse(1, 2);
    const base = response.rows[1];
    const rows: ICompareRow[] = [
      {
        ...base,
        metric: 'model__flops',
        unit: 'FLOP',
        median_a: 2.5e9,
        median_b: 5e9,
        ratio: 2,
        ci_low: null,
        ci_high: null,
        significant: false,
        verdict: 'deterministic'
      },
      {
        ...base,
        metric: 'dram__bytes_read.sum',
        unit: 'bytes',
        median_a: 1048576,
        median_b: 2097152,
        ratio: 2,
        ci_low: 1.9,
        ci_high: 2.1,
        significant: true,
        verdict: 'higher'
      },
      { ...base, ci_low: null, ci_high: null, n_a: 2, verdict: null }
    ];

    view.setComparison({ ...response, rows });

    const [flops, bytes, few] = Array.from(
      view.node.querySelectorAll<HTMLTableRowElement>('tbody tr')
    ).map(cells);
    expect(flops.slice(3, 7)).toEqual([
      '2.500 GFLOP',
      '5.000 GFLOP',
      '2.000×',
      'deterministic'
    ]);
    expect(bytes.slice(3, 7)).toEqual([
      '1.049 MB',
      '2.097 MB',
      '2.000× [1.900, 2.100] ✱',
      'higher'
    ]);
    expect(few[5]).toBe('1.010×');
    expect(few[6]).toBe('–');
    expect(
      view.node.querySelectorAll('.jp-nsightLab-CompareView-significant')
    ).toHaveLength(1);
    view.dispose();
  });
});

describe('formatQuantity', () => {
  it('formats each unit the server names', () => {
    expect(formatQuantity(7200, 'ns')).toBe('7.200 µs');
    expect(formatQuantity(9.9e3, 'ns')).toBe('9.900 µs');
    expect(formatQuantity(512, 'bytes')).toBe('512 B');
    expect(formatQuantity(3.2e12, 'bytes/s')).toBe('3.200 TB/s');
    expect(formatQuantity(1e6, 'FLOP')).toBe('1.000 MFLOP');
    expect(formatQuantity(42.5, '%')).toBe('42.5 %');
    expect(formatQuantity(1234, 'cycles')).toBe('1234 cycles');
    expect(formatQuantity(0.5, '')).toBe('0.5');
    expect(formatQuantity(null, 'ns')).toBe('–');
    expect(formatQuantity(Number.NaN, 'bytes')).toBe('–');
  });
});

describe('formatRatio', () => {
  const row = compareResponse(1, 2).rows[1];

  it('shows the ratio with its interval, or a dash when there is none', () => {
    expect(formatRatio(row)).toBe('1.010× [0.950, 1.070]');
    const noInterval: ICompareRow = { ...row, ci_low: null, ci_high: null };
    expect(formatRatio(noInterval)).toBe('1.010×');
    expect(formatRatio({ ...row, ratio: null })).toBe('–');
    expect(formatRatio({ ...row, ratio: Infinity })).toBe('–');
  });

  it('shows the served verdict, or a dash when there was none', () => {
    expect(formatVerdict(row)).toBe('no change');
    expect(formatVerdict({ ...row, verdict: null })).toBe('–');
  });
});

describe('verdicts: the overall line, flags and notes', () => {
  it('marks a flagged row, shows its note and the threshold in the tooltip', () => {
    const response = compareResponse(1, 2);
    const note =
      "SM clocks differ: median 1980 MHz in a, 1755 MHz in b (-11.4 %, more than 2 %): the ratio may be the clocks', not the code's";
    const flagged: ICompareRow = {
      ...response.rows[1],
      threshold: 0.02,
      sm_clock_mhz_a: 1980,
      sm_clock_mhz_b: 1755,
      clock_differs: true,
      flagged: true,
      note
    };
    const node = document.createElement('div');

    renderVerdicts(
      node,
      { ...response, rows: [flagged], threshold: 0.02 },
      trans
    );

    const overall = node.querySelector<HTMLElement>(
      '.jp-nsightLab-CompareView-overall'
    );
    expect(overall?.textContent).toBe('slower: 1 slower, 1 no change');
    expect(overall?.dataset.verdict).toBe('slower');
    const row = node.querySelector('tbody tr') as HTMLTableRowElement;
    expect(row.classList.contains('jp-mod-flagged')).toBe(true);
    expect(cells(row)[6]).toBe('no change ⚠');
    expect(cells(row)[8]).toBe(note);
    const flag = row.querySelector<HTMLElement>(
      '.jp-nsightLab-CompareView-flag'
    );
    expect(flag?.title).toBe(note); // the flag says which, as the note does
    expect(row.cells[6].title).toBe(
      'no change: the 95% interval of b/a is not wholly beyond ±2%'
    );
    const plain = node.ownerDocument.createElement('div');
    renderVerdicts(plain, response, trans);
    expect(plain.querySelector('.jp-mod-flagged')).toBeNull();
    expect(plain.querySelector('.jp-nsightLab-CompareView-flag')).toBeNull();
  });
});
