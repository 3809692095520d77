/**
 * Issue 30's layout of a session panel: the answer first (what cannot be true,
 * then the summary table, before the charts and the session's facts), charts with
 * nothing to draw folded into one line saying what another backend would add,
 * each region's kernels in a folded table, and history rows that leave parts out
 * rather than cut them.
 */

import { nullTranslator } from '@jupyterlab/translation';

import { ChartGrid } from '../../charts/grid';
import { IChartHandle, IFigure, mountChart } from '../../charts/mount';
import { chartMissing, foldedCharts } from '../../charts/titles';
import { checksList } from '../../components/RunTable';
import { fitRow, renderSessionRow } from '../../components/SessionList';
import { SessionView, kernelSection } from '../../components/SessionView';
import { IRunsModel, ISessionDetail } from '../../tokens';
import { IKernelRow } from '../../types';
import { XSS, run, session, sessionResponse } from '../fixtures';

jest.mock('../../charts/mount', () => ({ mountChart: jest.fn() }));

const mocked = mountChart as jest.MockedFunction<typeof mountChart>;
const trans = nullTranslator.load('nsight-lab');

function fakeHandle(el: HTMLElement, figure: IFigure): IChartHandle {
  return {
    element: el,
    figure,
    update: jest.fn(),
    append: jest.fn(),
    dispose: jest.fn(),
    isDisposed: false
  };
}

const MODEL = {
  settings: { refreshInterval: 200, maxPoints: 2000, defaultChart: 'duration' },
  exportSession: jest.fn(),
  downloadReport: jest.fn(),
  deleteSession: jest.fn()
} as unknown as IRunsModel;

const KERNELS: IKernelRow[] = [
  {
    region: 'layernorm_1',
    config: '',
    kernels: [
      {
        name: '_ZN2at6native28vectorized_layer_norm_kernelIfEEvv',
        short: 'at::native::vectorized_layer_norm_kernel'
      }
    ]
  },
  {
    region: XSS,
    config: '',
    kernels: [
      { name: 'nvjet_a', short: 'nvjet_a' },
      { name: 'nvjet_b', short: 'nvjet_b' }
    ]
  }
];

function detail(kernels: IKernelRow[] = []): ISessionDetail {
  const s = session(7, { backend: 'cupti' });
  const runs = [run(1, 7), run(2, 7)];
  const response = sessionResponse(s, runs);
  return {
    session: s,
    figures: response.figures ?? {},
    chartOrder: response.chart_order ?? null,
    summary: [{ Region: 'a', Duration: '1.0 ms' }],
    checks: [
      {
        region: 'a',
        config: '',
        kind: 'over_roof',
        text: '120 % of roof cannot be true',
        cause: 'c',
        action: 'd'
      }
    ],
    kernels
  };
}

beforeEach(() => {
  mocked.mockReset();
  mocked.mockImplementation((el, figure) => fakeHandle(el, figure));
});

describe('the session panel, answer first', () => {
  it('puts the findings, then the table, before the charts and the facts', () => {
    const view = new SessionView(MODEL, trans);
    view.setDetail(detail(KERNELS));
    const order = (selector: string): number =>
      Array.from(view.node.querySelectorAll('*')).indexOf(
        view.node.querySelector(selector)!
      );
    const checks = order('.jp-nsightLab-RunTable-checks');
    const table = order('.jp-nsightLab-SessionView-table table');
    const charts = order('.jp-nsightLab-SessionView-charts');
    const kernels = order('.jp-nsightLab-SessionView-kernels');
    const facts = order('.jp-nsightLab-SessionView-facts');
    expect(checks).toBeGreaterThan(-1);
    expect(checks).toBeLessThan(table);
    expect(table).toBeLessThan(charts);
    expect(charts).toBeLessThan(kernels);
    expect(kernels).toBeLessThan(facts);
    view.dispose();
  });

  it('folds the charts with nothing to draw into one line after the drawn ones', () => {
    const view = new SessionView(MODEL, trans);
    view.setDetail(detail());
    const grid = view.node.querySelector('.jp-nsightLab-SessionView-charts')!;
    const folded = grid.querySelector<HTMLDetailsElement>(
      ':scope > .jp-nsightLab-ChartView-folded'
    );
    expect(folded).not.toBeNull();
    expect(folded!.open).toBe(false);
    expect(grid.lastElementChild).toBe(folded);
    // Only drawn charts sit in the grid itself.
    const direct = Array.from(
      grid.querySelectorAll<HTMLElement>(':scope > .jp-nsightLab-ChartView')
    ).map(n => n.dataset.state);
    expect(direct).toEqual(['drawn']);
    const inside = Array.from(
      folded!.querySelectorAll<HTMLElement>('.jp-nsightLab-ChartView')
    ).map(n => n.dataset.chart);
    expect(inside).toEqual(['clocks', 'roofline', 'traffic', 'counters']);
    expect(folded!.querySelector('summary')!.textContent).toBe(
      foldedCharts(['clocks', 'roofline', 'traffic', 'counters'])
    );
    expect(folded!.querySelector('summary')!.textContent).toContain(
      'counters over time (--backend pm)'
    );
    view.dispose();
  });

  it('leaves out the per-rank charts of a session that has none', () => {
    const view = new SessionView(MODEL, trans);
    view.setDetail({
      ...detail(),
      chartOrder: ['duration', 'ranks', 'clocks', 'rank_clocks', 'counters'],
      // Served by the multi-rank charts' names, which are no chart kinds.
      figures: {
        ...detail().figures,
        ranks: { data: [], layout: {} },
        rank_clocks: { data: [], layout: {} }
      } as ISessionDetail['figures']
    });
    const names = Array.from(
      view.node.querySelectorAll<HTMLElement>('.jp-nsightLab-ChartView')
    ).map(n => n.dataset.chart);
    expect(names).not.toContain('ranks');
    expect(names).not.toContain('rank_clocks');
    view.dispose();
  });

  it('hides the folded line when every chart is drawn', () => {
    const host = document.createElement('div');
    const grid = new ChartGrid(host, {
      className: 'x',
      missing: chartMissing,
      fold: foldedCharts
    });
    const figure: IFigure = { data: [{ x: [1], y: [1] }], layout: {} };
    grid.update(['duration'], { duration: figure });
    expect(grid.folded?.hidden).toBe(true);
    grid.update(['duration', 'counters'], { duration: figure });
    expect(grid.folded?.hidden).toBe(false);
    expect(grid.folded?.querySelectorAll('[data-chart]').length).toBe(1);
    grid.dispose();
    expect(host.children.length).toBe(0);
  });
});

describe('findings', () => {
  it('shows a note as one line and a flag without empty cause or action lines', () => {
    const list = checksList([
      {
        region: 'layernorm_1',
        config: '',
        kind: 'not_modelled',
        text: 'TFLOP/s not shown: the work model counts no FLOPs for its ops',
        cause: '',
        action: ''
      },
      {
        region: 'qkv_proj',
        config: '',
        kind: 'unsteady',
        text: 'RSD 70 %: the numbers are not usable',
        cause: 'the host was busy',
        action: ''
      }
    ])!;
    // The flag first (a number not to read as it is), the note after it.
    const [flag, note] = Array.from(list.children);
    expect(note.classList).toContain('jp-nsightLab-RunTable-note');
    expect(note.textContent).toBe(
      'layernorm_1: TFLOP/s not shown: the work model counts no FLOPs for its ops'
    );
    expect(Array.from(flag.children, c => c.textContent)).toEqual([
      '\u26a0 qkv_proj: RSD 70 %: the numbers are not usable',
      'cause: the host was busy'
    ]);
  });
});

describe('findings grouped', () => {
  it('lists one finding of many regions once, its regions named', () => {
    const regions = ['a', 'b', 'c', 'd', 'e'];
    const list = checksList(
      regions.map(region => ({
        region,
        config: '',
        kind: 'throttled' as const,
        text: 'throttled (30 of 30 runs)',
        cause: 'power cap',
        action: 'lock the clocks'
      }))
    )!;
    expect(list.children.length).toBe(1);
    const item = list.children[0] as HTMLElement;
    expect(item.querySelector('strong')!.textContent).toBe(
      '\u26a0 5 regions (a, b, c, …): throttled (30 of 30 runs)'
    );
    expect(item.title).toBe('a, b, c, d, e');
    expect(
      Array.from(item.querySelectorAll('div'), d => d.textContent)
    ).toEqual(['cause: power cap', 'do: lock the clocks']);
  });
});

describe('kernel names per region', () => {
  it('lists each region with its kernels, folded, names as text', () => {
    const section = kernelSection(KERNELS)!;
    expect(section.open).toBe(false);
    expect(section.querySelector('summary')!.textContent).toBe(
      'Kernels: 3 in 2 regions'
    );
    const rows = Array.from(section.querySelectorAll('tbody tr'));
    expect(rows.map(r => Array.from(r.children, c => c.textContent))).toEqual([
      [
        'layernorm_1',
        'at::native::vectorized_layer_norm_kernel',
        '_ZN2at6native28vectorized_layer_norm_kernelIfEEvv'
      ],
      [XSS, 'nvjet_a', 'nvjet_a'],
      ['', 'nvjet_b', 'nvjet_b']
    ]);
    expect((rows[0].children[1] as HTMLElement).title).toBe(
      '_ZN2at6native28vectorized_layer_norm_kernelIfEEvv'
    );
    expect(section.querySelector('img')).toBeNull();
  });

  it('is left out where the backend saw no kernels', () => {
    expect(kernelSection([])).toBeNull();
    expect(kernelSection(undefined)).toBeNull();
    const view = new SessionView(MODEL, trans);
    view.setDetail(detail());
    expect(
      view.node.querySelector('.jp-nsightLab-SessionView-kernels')
    ).toBeNull();
    view.setDetail(detail(KERNELS));
    expect(
      view.node.querySelector('.jp-nsightLab-SessionView-kernels')
    ).not.toBeNull();
    view.dispose();
  });
});

describe('history rows are never cut', () => {
  it('leaves parts out, from the end, while a line is too wide', () => {
    const row = document.createElement('div');
    renderSessionRow(
      row,
      session(6, {
        name: 'sweep-matmul',
        device: 'NVIDIA H200',
        regions: ['matmul', 'relu']
      }),
      0
    );
    const details = row.querySelector<HTMLElement>(
      '.jp-nsightLab-SessionList-details'
    )!;
    const name = row.querySelector<HTMLElement>(
      '.jp-nsightLab-SessionList-name'
    )!;
    // A 120 px line: each visible part measured as 8 px a character.
    const width = (el: HTMLElement): number =>
      Array.from(el.querySelectorAll<HTMLElement>('span'))
        .filter(s => !s.hidden && s.parentElement === el)
        .reduce((n, s) => n + (s.textContent ?? '').length * 8, 0) +
      (el === name ? (el.firstChild?.textContent ?? '').length * 8 : 0);
    for (const el of [details, name]) {
      Object.defineProperty(el, 'clientWidth', { get: () => 120 });
      Object.defineProperty(el, 'scrollWidth', { get: () => width(el) });
    }
    fitRow(row);
    const shown = Array.from(
      details.querySelectorAll<HTMLElement>('.jp-nsightLab-SessionList-part')
    )
      .filter(s => !s.hidden)
      .map(s => s.textContent);
    expect(shown.length).toBeGreaterThan(0);
    expect(shown[0]).toBe('cpu');
    expect(width(details)).toBeLessThanOrEqual(120);
    // Whole parts only; the whole line in the tooltip.
    expect(details.title).toContain('NVIDIA H200');
    expect(width(name)).toBeLessThanOrEqual(120);
  });
});
