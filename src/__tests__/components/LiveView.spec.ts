/**
 * LiveView renders the progress the server computed (totals as totals: a 3 x 30
 * cell reads "30 / 90 runs") and the charts in the served order.
 */

import { nullTranslator } from '@jupyterlab/translation';
import { Signal } from '@lumino/signaling';

import { mountChart } from '../../charts/mount';
import { CHART_MISSING, CHART_TITLES } from '../../charts/titles';
import {
  LiveView,
  liveChartOrder,
  progressLine
} from '../../components/LiveView';
import { ILiveState, IRunsModel } from '../../tokens';
import { DEFAULT_SIDEBAR_SETTINGS, IProgress } from '../../types';
import { run, session } from '../fixtures';

jest.mock('../../charts/mount', () => ({ mountChart: jest.fn() }));
(mountChart as jest.Mock).mockImplementation((el: HTMLElement) => ({
  element: el,
  figure: { data: [] },
  update: jest.fn(),
  append: jest.fn(),
  dispose: jest.fn(),
  isDisposed: false
}));

const trans = nullTranslator.load('nsight-lab');

/** A 3-config x 30-run cell after its first config, as the server sends it. */
const PROGRESS: IProgress = {
  status: 'running',
  configs_total: 3,
  config_index: 0,
  runs_per_config: 30,
  runs_planned_total: 90,
  runs_done_in_config: 30,
  runs_done_total: 30,
  elapsed_s: null,
  eta_s: null,
  fraction: 1 / 3,
  text: '30 / 90 runs · config 1 / 3 · run 30 / 30'
};

function liveModel(live: ILiveState): IRunsModel {
  const model = {
    live,
    settings: DEFAULT_SIDEBAR_SETTINGS,
    liveChanged: new Signal<IRunsModel, void>({} as IRunsModel)
  };
  return model as unknown as IRunsModel;
}

const LIVE: ILiveState = {
  session: session(9, {
    status: 'running',
    configs: [{ n: 1 }, { n: 2 }, { n: 3 }],
    runs_per_config: 30,
    runs_planned_total: 90,
    run_count: 60,
    progress: PROGRESS
  }),
  runs: [run(60, 9, { duration_ns: 2500 })],
  figures: {
    clocks: { data: [{ type: 'scatter' }], layout: {} },
    duration: { data: [{ type: 'scatter' }], layout: {} }
  },
  chartOrder: ['duration', 'clocks', 'roofline', 'traffic'],
  lastRunId: 60,
  eventAt: null,
  updatedAt: null
};

describe('LiveView', () => {
  it('shows the served progress: a 3 x 30 cell reads 30 / 90 runs', () => {
    const view = new LiveView(liveModel(LIVE), trans);

    const text = view.node.querySelector(
      '.jp-nsightLab-LiveView-progressText'
    )!.textContent;
    expect(text).toBe(
      '30 / 90 runs · config 1 / 3 · run 30 / 30 · last 2.500 µs'
    );
    expect(view.node.dataset.runCount).toBe('30');
    const bar = view.node.querySelector('progress')!;
    expect(bar.value).toBeCloseTo(1 / 3);
    const charts = Array.from(
      view.node.querySelectorAll<HTMLElement>('.jp-nsightLab-ChartView')
    ).map(node => node.dataset.chart ?? node.dataset.kind);
    expect(charts).toHaveLength(2);
    view.dispose();
  });

  it('lays out the live charts with the shared grid, drawn in place', () => {
    const model = liveModel({
      ...LIVE,
      figures: { duration: { data: [{ type: 'scatter' }], layout: {} } }
    });
    (mountChart as jest.Mock).mockClear();
    const view = new LiveView(model, trans);
    const boxes = () =>
      Array.from(
        view.node.querySelectorAll<HTMLElement>('.jp-nsightLab-ChartView')
      ).map(node => `${node.dataset.chart}:${node.dataset.state}`);
    expect(boxes()).toEqual(['duration:drawn', 'clocks:missing']);
    expect(
      view.node.querySelector(
        '[data-chart="duration"] .jp-nsightLab-ChartView-title'
      )!.textContent
    ).toBe(CHART_TITLES.duration);
    expect(
      view.node.querySelector(
        '[data-chart="clocks"] .jp-nsightLab-ChartView-missing'
      )!.textContent
    ).toBe(CHART_MISSING.clocks);

    // Each run: the charts are updated in place, not mounted again.
    (model.liveChanged as Signal<IRunsModel, void>).emit();
    expect(mountChart).toHaveBeenCalledTimes(1);
    expect(view.grid.names).toEqual(['duration', 'clocks']);
    view.dispose();
    expect(view.grid.names).toEqual([]);
  });

  it('mounts the charts afresh for a new session, at the width of now', () => {
    const live: ILiveState = {
      ...LIVE,
      figures: { duration: { data: [{ type: 'scatter' }], layout: {} } }
    };
    const model = liveModel(live);
    (mountChart as jest.Mock).mockClear();
    const view = new LiveView(model, trans);
    expect(mountChart).toHaveBeenCalledTimes(1);
    const signal = model.liveChanged as Signal<IRunsModel, void>;

    signal.emit(); // a run of the same session: drawn in place
    expect(mountChart).toHaveBeenCalledTimes(1);
    // The next cell (a 1-config one after a 3-config one): a new session id.
    (model as unknown as { live: ILiveState }).live = {
      ...live,
      session: session(10, { status: 'running', progress: PROGRESS })
    };
    signal.emit();
    expect(mountChart).toHaveBeenCalledTimes(2);
    expect(view.grid.names).toEqual(['duration', 'clocks']);
    view.dispose();
  });

  it('shows no progress line before the session is read', () => {
    const live = {
      ...LIVE,
      session: { ...LIVE.session!, progress: undefined },
      runs: []
    };
    const view = new LiveView(liveModel(live), trans);
    expect(
      view.node.querySelector('.jp-nsightLab-LiveView-progressText')!
        .textContent
    ).toBe('');
    expect(view.node.dataset.runCount).toBe('0');
    view.dispose();
  });
});

describe('liveChartOrder and progressLine', () => {
  it('follows the served order, the default chart first', () => {
    expect(liveChartOrder(['clocks', 'duration'], {}, 'roofline')).toEqual([
      'clocks',
      'duration'
    ]);
    expect(liveChartOrder(['clocks', 'duration'], {}, 'duration')).toEqual([
      'duration',
      'clocks'
    ]);
    expect(
      liveChartOrder(null, { clocks: null, duration: null }, 'traffic')
    ).toEqual(['clocks', 'duration']);
  });

  it('adds the per-rank and counter charts once the server drew them', () => {
    const drawn = { data: [{ type: 'scatter', x: [0], y: [1] }], layout: {} };
    const empty = { data: [], layout: {} };
    const served = [
      'duration',
      'ranks',
      'clocks',
      'rank_clocks',
      'roofline',
      'traffic',
      'counters'
    ];
    // A PM-sampled profile: its counters follow the clocks, in the served order;
    // the roofline and traffic charts (whole-session placements) stay out.
    expect(
      liveChartOrder(
        served,
        { counters: drawn, roofline: drawn, traffic: drawn },
        'duration'
      )
    ).toEqual(['duration', 'clocks', 'counters']);
    // A multi-rank profile, the counters chart the default.
    expect(
      liveChartOrder(
        served,
        { ranks: drawn, rank_clocks: drawn, counters: empty } as never,
        'counters'
      )
    ).toEqual(['duration', 'ranks', 'clocks', 'rank_clocks']);
    // Nothing sampled yet: no box saying what is missing.
    expect(liveChartOrder(served, { counters: null }, 'counters')).toEqual([
      'duration',
      'clocks'
    ]);
  });

  it('is the server text and the newest run', () => {
    expect(progressLine(LIVE.session!, null)).toBe(PROGRESS.text);
  });
});
