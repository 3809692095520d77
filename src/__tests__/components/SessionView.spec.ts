/**
 * SessionView: the session header, facts and notes, the table note, the actions,
 * and the charts mounted through the grid in order (the default chart first).
 */

import { nullTranslator } from '@jupyterlab/translation';

import { IChartHandle, IFigure, mountChart } from '../../charts/mount';
import { CHART_MISSING } from '../../charts/titles';
import {
  SessionView,
  sessionChartOrder,
  sessionFacts
} from '../../components/SessionView';
import { IRunsModel, ISessionDetail } from '../../tokens';
import { ChartKind, ISessionFigures, ISessionSummary } from '../../types';
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

function modelWith(defaultChart: ChartKind): IRunsModel {
  const model: Partial<IRunsModel> = {
    settings: {
      refreshInterval: 200,
      maxPoints: 2000,
      defaultChart,
      findingsShown: 3
    },
    exportSession: jest.fn(),
    downloadReport: jest.fn(),
    deleteSession: jest.fn()
  };
  return model as IRunsModel;
}

function detailOf(
  s: ISessionSummary,
  runs = [run(1, s.id), run(2, s.id)],
  figures?: ISessionFigures
): ISessionDetail {
  const response = sessionResponse(s, runs);
  return {
    session: s,
    figures: figures ?? response.figures ?? {},
    chartOrder: figures ? null : (response.chart_order ?? null),
    summary: response.summary ?? []
  };
}

function text(view: SessionView, selector: string): string {
  return view.node.querySelector(selector)?.textContent ?? '';
}

function charts(view: SessionView): string[] {
  return Array.from(
    view.node.querySelectorAll<HTMLElement>('.jp-nsightLab-ChartView')
  ).map(node => `${node.dataset.chart}:${node.dataset.state}`);
}

beforeEach(() => {
  mocked.mockReset();
  mocked.mockImplementation((el, figure) => fakeHandle(el, figure));
});

describe('SessionView', () => {
  it('shows the session header, its facts, notes and actions', () => {
    const view = new SessionView(modelWith('duration'), trans);
    const s = session(4, {
      name: 'matmul sweep',
      backend: 'ncu',
      has_report: true,
      backend_reason: 'requested',
      device: 'NVIDIA H200',
      notes: ['clocks were locked'],
      error: 'one config failed'
    });

    view.setDetail(detailOf(s));

    expect(text(view, '.jp-nsightLab-SessionView-title')).toBe(
      '#4 matmul sweep'
    );
    expect(view.node.dataset.sessionId).toBe('4');
    const facts = text(view, '.jp-nsightLab-SessionView-facts');
    expect(facts).toContain('ncu \u00b7 requested');
    expect(facts).toContain('NVIDIA H200');
    expect(facts).toContain('one config failed');
    expect(text(view, '.jp-nsightLab-SessionView-notes')).toBe(
      'clocks were locked'
    );
    // A session whose backend keeps a report (served: has_report) offers it.
    expect(
      view.node.querySelector('.jp-nsightLab-SessionView-report')
    ).not.toBeNull();
    view.dispose();
  });

  it('offers the report only where the server says one is kept', () => {
    const view = new SessionView(modelWith('duration'), trans);
    // The backend's name decides nothing: only the served has_report.
    view.setDetail(detailOf(session(5, { backend: 'ncu', has_report: false })));
    expect(
      view.node.querySelector('.jp-nsightLab-SessionView-report')
    ).toBeNull();
    view.setDetail(
      detailOf(session(6, { backend: 'other', has_report: true }))
    );
    expect(
      view.node.querySelector('.jp-nsightLab-SessionView-report')
    ).not.toBeNull();
    view.dispose();
  });

  it('mounts the charts in order, the default first, and says what the others need', () => {
    const view = new SessionView(modelWith('clocks'), trans);
    const detail = detailOf(session(4));

    view.setDetail(detail);

    // The drawn charts first; those with nothing to draw folded after them
    // (in order, the default first).
    expect(charts(view)).toEqual([
      'duration:drawn',
      'clocks:missing',
      'roofline:missing',
      'traffic:missing',
      'counters:missing'
    ]);
    expect(mocked).toHaveBeenCalledTimes(1);
    expect(mocked.mock.calls[0][1]).toBe(detail.figures.duration);
    expect(
      text(view, '[data-chart="roofline"] .jp-nsightLab-ChartView-missing')
    ).toBe(CHART_MISSING.roofline);
    expect(
      text(view, '[data-chart="duration"] .jp-nsightLab-ChartView-title')
    ).toBe('Duration per run');
    view.dispose();
  });

  it('redraws in place for a new read, and drops charts on dispose', () => {
    const view = new SessionView(modelWith('duration'), trans);
    view.setDetail(detailOf(session(4)));
    const handle = mocked.mock.results[0].value as IChartHandle;
    const boxes = view.node.querySelectorAll('.jp-nsightLab-ChartView').length;

    const next = detailOf(session(4), [run(1, 4), run(2, 4), run(3, 4)]);
    view.setDetail(next);

    expect(mocked).toHaveBeenCalledTimes(1);
    expect(handle.update).toHaveBeenCalledWith(next.figures.duration);
    expect(view.node.querySelectorAll('.jp-nsightLab-ChartView').length).toBe(
      boxes
    );
    view.dispose();
    expect(handle.dispose).toHaveBeenCalled();
  });

  it('shows the summary rows the server computed, and the runs planned', () => {
    const view = new SessionView(modelWith('duration'), trans);
    const s = session(4, {
      configs: [{ n: 1 }, { n: 2 }, { n: 3 }],
      config_count: 3,
      runs_per_config: 10,
      runs_planned_total: 30,
      run_count: 60,
      progress: {
        status: 'completed',
        configs_total: 3,
        config_index: 2,
        runs_per_config: 10,
        runs_planned_total: 30,
        runs_done_in_config: 10,
        runs_done_total: 30,
        elapsed_s: null,
        eta_s: null,
        fraction: 1,
        text: '30 / 30 runs'
      }
    });
    const detail: ISessionDetail = {
      ...detailOf(s),
      summary: [
        {
          Region: 'a',
          n: '1',
          Duration: '1.049 ms',
          RSD: '0.54 %',
          Bound: 'compute'
        }
      ],
      counters: {
        columns: ['Region', 'n', 'Metric', 'Median', 'RSD', 'Runs'],
        rows: [
          {
            cells: [
              'a',
              '1',
              'dram__bytes_read.sum',
              '68.00 MB',
              '0.06 %',
              '10'
            ],
            zero: false
          },
          {
            cells: ['a', '1', 'smsp__sass_op_dadd.sum', '0 inst', '0 %', '10'],
            zero: true
          }
        ],
        zero: 1
      }
    };

    view.setDetail(detail);

    const table = view.node.querySelector(
      '.jp-nsightLab-SessionView-table table'
    ) as HTMLTableElement;
    expect(
      Array.from(table.tHead?.rows[0].cells ?? []).map(c => c.textContent)
    ).toEqual(['Region', 'n', 'Duration', 'RSD', 'Bound']);
    // Shown as served: nothing formatted here.
    expect(
      Array.from(table.tBodies[0].rows[0].cells).map(c => c.textContent)
    ).toEqual(['a', '1', '1.049 ms', '0.54 %', 'compute']);
    // Counters under a toggle, the all-zero ones under a second one.
    const counters = view.node.querySelector<HTMLDetailsElement>(
      '.jp-nsightLab-RunTable-counters'
    );
    expect(counters?.open).toBe(false);
    expect(counters?.querySelector('summary')?.textContent).toBe(
      'Counters: 1 row (1 more read 0 in every run)'
    );
    const zero = counters?.querySelector<HTMLDetailsElement>(
      '.jp-nsightLab-RunTable-zero'
    );
    expect(zero?.open).toBe(false);
    expect(zero?.textContent).toContain('smsp__sass_op_dadd.sum');
    // One meaning of "runs": executions of the cell (3 configs x 10), not the
    // 60 records of its 2 regions.
    expect(text(view, '.jp-nsightLab-SessionView-facts')).toContain(
      '30 of 30 runs (3 configs × 10); 60 region measurements stored'
    );
    view.dispose();
  });

  it('shows a malicious session name and note as text', () => {
    const view = new SessionView(modelWith('duration'), trans);

    view.setDetail(detailOf(session(4, { name: XSS, notes: [XSS] })));

    expect(view.node.querySelector('img')).toBeNull();
    expect(text(view, '.jp-nsightLab-SessionView-title')).toBe(`#4 ${XSS}`);
    view.dispose();
  });
});

describe('sessionChartOrder', () => {
  const figures: ISessionFigures = {
    roofline: { data: [{}], layout: {} },
    duration: { data: [{}], layout: {} }
  };

  it('follows the served order, then the kinds not served, default first', () => {
    expect(
      sessionChartOrder(figures, ['roofline', 'duration'], 'duration')
    ).toEqual(['duration', 'roofline', 'clocks', 'traffic', 'counters']);
    expect(
      sessionChartOrder(figures, ['roofline', 'duration'], 'traffic')
    ).toEqual(['traffic', 'roofline', 'duration', 'clocks', 'counters']);
  });

  it('falls back to the figures’ own order when no chart_order came', () => {
    expect(sessionChartOrder(figures, null, 'clocks')).toEqual([
      'clocks',
      'roofline',
      'duration',
      'traffic',
      'counters'
    ]);
  });
});

describe('sessionFacts', () => {
  it('lists the facts as label/value pairs', () => {
    const facts = new Map(sessionFacts(session(3, { host: 'gpu-node' })));
    expect(facts.get('Host')).toBe('gpu-node');
    expect(facts.get('Status')).toBe('completed');
    expect(facts.has('Error')).toBe(false);
  });
});
