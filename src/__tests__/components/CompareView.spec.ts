/**
 * CompareView: the two sessions, one row per region, metric and config with the
 * cells the server formatted (medians, change, ratio and interval, verdict, note),
 * deterministic rows folded behind a toggle, the legend as served, what was
 * compared and why nothing could be in words, names shown as text. Nothing is
 * formatted or judged here (issue 20: tolerances come from the server).
 */

import { nullTranslator } from '@jupyterlab/translation';

import {
  CompareView,
  formatRatio,
  formatVerdict,
  renderVerdicts,
  rowCells,
  sharedNote
} from '../../components/CompareView';
import { ICompareCells, ICompareResponse, ICompareRow } from '../../types';
import { XSS, compareResponse } from '../fixtures';

const trans = nullTranslator.load('nsight-lab');

function texts(row: HTMLTableRowElement): string[] {
  return Array.from(row.cells).map(cell => cell.textContent ?? '');
}

function served(row: ICompareRow, cells: Partial<ICompareCells>): ICompareRow {
  return {
    ...row,
    cells: {
      region: row.annotation,
      metric: 'duration',
      config: 'n=512',
      median_a: '100 ns',
      median_b: '150 ns',
      change: '+50 %',
      ratio: '1.500× [1.400, 1.600]',
      verdict: row.verdict ?? '–',
      note: row.note,
      ...cells
    }
  };
}

/** The fixture's comparison with the cells a server sends. */
function response(): ICompareResponse {
  const base = compareResponse(2, 7);
  const [slow, same] = base.rows;
  return {
    ...base,
    legend: 'b/a is the ratio of medians; changes within ±2.2 % are no change',
    rows: [
      served(slow, {}),
      served(same, {
        median_b: '101 ns',
        change: '+1.0 %',
        ratio: '1.010× [0.950, 1.070]'
      }),
      served(
        {
          ...same,
          metric: 'model__flops',
          unit: 'FLOP',
          verdict: 'deterministic',
          folded: true
        },
        {
          metric: 'model__flops',
          median_a: '2.500 GFLOP',
          median_b: '2.500 GFLOP',
          change: '0 %',
          ratio: '1.000×',
          verdict: 'deterministic'
        }
      )
    ]
  };
}

describe('CompareView', () => {
  it('shows the served cells, one row per timed comparison', () => {
    const view = new CompareView(trans);

    view.setComparison(response());

    const heading = view.node.querySelector(
      '.jp-nsightLab-CompareView-heading'
    );
    expect(heading?.children[0].textContent).toBe('a: #2 nb2.ipynb (cpu)');
    expect(heading?.children[1].textContent).toBe('b: #7 nb7.ipynb (cpu)');
    expect(view.node.dataset.a).toBe('2');
    const table = view.node.querySelector(
      '.jp-nsightLab-CompareView-table'
    ) as HTMLTableElement;
    // The answer first; one config, one metric and one (empty) note for every
    // row: those columns are left out.
    expect(texts(table.tHead!.rows[0])).toEqual([
      'Region',
      'Verdict',
      'Change',
      'b/a [95% CI]',
      'Median a',
      'Median b'
    ]);
    const rows = Array.from(table.tBodies[0].rows);
    expect(rows).toHaveLength(2); // the deterministic row is folded away
    expect(texts(rows[0]).slice(1)).toEqual([
      'slower',
      '+50 %',
      '1.500× [1.400, 1.600]',
      '100 ns',
      '150 ns'
    ]);
    expect(rows[1].dataset.verdict).toBe('no change');
    expect(rows[1].cells[1].title).toContain('holds 1');
    expect(rows[0].classList.contains('jp-mod-significant')).toBe(true);
    view.dispose();
  });

  it('folds deterministic rows behind a toggle and shows the served legend', () => {
    const view = new CompareView(trans);

    view.setComparison(response());

    const folded = view.node.querySelector<HTMLDetailsElement>(
      '.jp-nsightLab-CompareView-folded'
    );
    expect(folded).not.toBeNull();
    expect(folded!.open).toBe(false);
    expect(folded!.querySelector('summary')?.textContent).toBe(
      '1 deterministic row (work-model counts: nothing to judge)'
    );
    const inner = folded!.querySelectorAll('tbody tr');
    expect(inner).toHaveLength(1);
    expect(inner[0].textContent).toContain('model__flops');
    expect(
      view.node.querySelector('.jp-nsightLab-CompareView-legend')?.textContent
    ).toBe('b/a is the ratio of medians; changes within ±2.2 % are no change');
    view.dispose();
  });

  it('shows an inconclusive row with its note, clocks and what to do', () => {
    const base = response();
    const note =
      "one session's runs throttled, the other's not: a at 1980 MHz, throttled in 0 of 30 runs; b at 1950 MHz, throttled in 30 of 30 runs (software power cap); profile both with --clock-control base --thermal auto";
    const row = served(
      {
        ...base.rows[0],
        verdict: 'inconclusive: clocks',
        significant: false,
        flagged: true,
        note
      },
      { verdict: 'inconclusive: clocks ⚠', note }
    );
    const node = document.createElement('div');

    renderVerdicts(
      node,
      {
        ...base,
        rows: [row],
        verdict: {
          ...base.verdict,
          verdict: 'inconclusive: clocks',
          note: '1 inconclusive (clocks)'
        }
      },
      trans
    );

    const overall = node.querySelector<HTMLElement>(
      '.jp-nsightLab-CompareView-overall'
    );
    expect(overall?.dataset.verdict).toBe('inconclusive: clocks');
    const tr = node.querySelector('tbody tr') as HTMLTableRowElement;
    expect(tr.classList.contains('jp-mod-flagged')).toBe(true);
    expect(tr.classList.contains('jp-mod-significant')).toBe(false);
    const verdict = tr.querySelector<HTMLElement>('[data-column="verdict"]');
    expect(verdict?.textContent).toBe('inconclusive: clocks ⚠');
    expect(verdict?.title).toBe(note);
    const noteCell = tr.querySelector<HTMLElement>('[data-column="note"]');
    expect(noteCell?.textContent).toContain('--clock-control base');
  });

  it('escapes annotation names', () => {
    const view = new CompareView(trans);

    view.setComparison(response());

    const first = view.node.querySelector('tbody tr td') as HTMLElement;
    expect(first.textContent).toBe(XSS);
    expect(first.innerHTML).toContain('&lt;img');
    expect(view.node.querySelector('img')).toBeNull();
    view.dispose();
  });

  it('says why when the sessions share nothing, and replaces an earlier table', () => {
    const view = new CompareView(trans);
    view.setComparison(response());
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
    const base = response();
    const note = 'compared on n=512; only in a: n=256; only in b: n=1024';

    view.setComparison({ ...base, scope: { ...base.scope, note } });

    expect(
      view.node.querySelector('.jp-nsightLab-CompareView-scope')?.textContent
    ).toBe(note);
    view.setComparison(base);
    expect(
      view.node.querySelector('.jp-nsightLab-CompareView-scope')
    ).toBeNull();
    view.dispose();
  });
});

describe('sharedNote', () => {
  it('says a note every row shares once, above the table', () => {
    const base = response();
    const note =
      'a at 1980 MHz; b at 1950 MHz; profile both with --clock-control base';
    const rows = base.rows
      .slice(0, 2)
      .map(row => served({ ...row, note }, { note }));
    const node = document.createElement('div');

    renderVerdicts(node, { ...base, rows }, trans);

    expect(sharedNote(rows)).toBe(note);
    expect(
      node.querySelector('.jp-nsightLab-CompareView-note')?.textContent
    ).toBe(`Every row: ${note}`);
    expect(node.querySelector('td[data-column="note"]')).toBeNull();
    expect(sharedNote(base.rows.slice(0, 1))).toBeNull();
  });
});

describe('formatRatio and formatVerdict', () => {
  it('show the served ratio cell and verdict, or a dash', () => {
    const row = response().rows[1];
    expect(formatRatio(row)).toBe('1.010× [0.950, 1.070]');
    expect(formatVerdict(row)).toBe('no change');
    expect(formatVerdict({ ...row, verdict: null })).toBe('–');
    // A row from a server that sent no cells: dashes, never numbers made here.
    const bare: ICompareRow = { ...compareResponse(1, 2).rows[0] };
    expect(rowCells(bare).median_a).toBe('–');
    expect(formatRatio(bare)).toBe('–');
  });
});
