/**
 * CompareView: the two sessions, one row per region, metric and config with the
 * ratio b/a and its interval, significant rows marked, names shown as text.
 */

import { nullTranslator } from '@jupyterlab/translation';

import { CompareView, formatRatio } from '../../components/CompareView';
import { ICompareRow } from '../../types';
import { XSS, compareResponse, session } from '../fixtures';

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
      'Mean a',
      'Mean b',
      'b/a [95% CI]',
      'n a/b'
    ]);
    const rows = Array.from(
      view.node.querySelectorAll<HTMLTableRowElement>('tbody tr')
    );
    expect(rows.length).toBe(2);
    const [significant, same] = rows.map(cells);
    expect(significant[5]).toBe('1.500× [1.400, 1.600] ✱');
    expect(significant[6]).toBe('10/10');
    expect(same[0]).toBe('b');
    expect(same[5]).toBe('1.010× [0.950, 1.070]');
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

  it('says so when the sessions share nothing, and replaces an earlier table', () => {
    const view = new CompareView(trans);
    view.setComparison(compareResponse(1, 2));

    view.setComparison({
      schema_version: 1,
      a: session(1),
      b: session(3),
      method: 'delta-log-welch',
      confidence: 0.95,
      rows: []
    });

    expect(view.node.querySelector('table')).toBeNull();
    expect(
      view.node.querySelector('.jp-nsightLab-CompareView-empty')?.textContent
    ).toBe('these sessions share no region and metric to compare');
    view.dispose();
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
});
