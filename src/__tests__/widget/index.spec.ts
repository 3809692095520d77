/**
 * The inline widget's AFM render: progress, charts through mountChart, the summary
 * table as text, the sidebar link, and cleanup. The model is a fake with the same
 * get/on/off surface as anywidget's.
 */
import { IChartHandle, IFigure, mountChart } from '../../charts/mount';
import widget, { OPEN_SESSION_EVENT, renderTable } from '../../widget/index';
import * as widgetModule from '../../widget/index';

// Only the default export: a named `render` makes anywidget warn that direct
// exports are deprecated.
const render = widget.render;
import {
  formatCell,
  formatSummaryCell,
  summaryColumns
} from '../../widget/format';
import type {
  IProgress,
  IWidgetModel,
  IWidgetTraits
} from '../../widget/types';

jest.mock('../../charts/mount', () => ({
  mountChart: jest.fn((el: HTMLElement, figure: IFigure): IChartHandle => {
    const handle = {
      element: el,
      figure,
      isDisposed: false,
      update: jest.fn((next: IFigure) => {
        handle.figure = next;
      }),
      append: jest.fn(),
      dispose: jest.fn(() => {
        handle.isDisposed = true;
      })
    };
    return handle;
  })
}));

const mount = mountChart as jest.Mock;

class FakeModel implements IWidgetModel {
  constructor(traits: Partial<IWidgetTraits> = {}) {
    this.traits = { ...DEFAULTS, ...traits };
  }

  get<K extends keyof IWidgetTraits>(key: K): IWidgetTraits[K] {
    return this.traits[key];
  }

  on(event: string, callback: () => void): void {
    const set = this.handlers.get(event) ?? new Set();
    set.add(callback);
    this.handlers.set(event, set);
  }

  off(event?: string | null, callback?: (() => void) | null): void {
    if (event && callback) {
      this.handlers.get(event)?.delete(callback);
    }
  }

  /** Set traits as a kernel update would, then fire backbone's events. */
  set(changes: Partial<IWidgetTraits>): void {
    Object.assign(this.traits, changes);
    for (const key of Object.keys(changes)) {
      this.fire(`change:${key}`);
    }
    this.fire('change');
  }

  listenerCount(): number {
    let n = 0;
    for (const set of this.handlers.values()) {
      n += set.size;
    }
    return n;
  }

  private fire(event: string): void {
    for (const callback of this.handlers.get(event) ?? []) {
      callback();
    }
  }

  private readonly traits: IWidgetTraits;
  private readonly handlers = new Map<string, Set<() => void>>();
}

const DEFAULTS: IWidgetTraits = {
  session_id: 12,
  status: 'running',
  progress: {},
  message: '',
  figures: {},
  chart_order: ['duration', 'clocks', 'roofline', 'traffic'],
  figures_seq: 0,
  append: {},
  summary: [],
  sidebar_link: ''
};

function figure(points: number): IFigure {
  return {
    data: [{ type: 'scatter', x: [...Array(points).keys()], y: [] }],
    layout: {}
  };
}

/** A served progress (as nsight_lab/contract/progress.py sends it; the text is not recomputed). */
function progress(overrides: Partial<IProgress>): IProgress {
  return {
    status: 'running',
    configs_total: 2,
    config_index: 0,
    runs_per_config: 10,
    runs_planned_total: 20,
    runs_done_in_config: 0,
    runs_done_total: 0,
    elapsed_s: 0,
    eta_s: null,
    fraction: 0,
    text: '0 / 20 runs · config 1 / 2 · run 0 / 10 · elapsed 0.0 s',
    ...overrides
  };
}

function chartNames(el: HTMLElement): string[] {
  return Array.from(
    el.querySelectorAll<HTMLElement>('.jp-nsightLab-Widget-chart')
  ).map(box => box.dataset.chart ?? '');
}

beforeEach(() => {
  mount.mockClear();
  delete document.body.dataset.nsightLabSidebar;
});

describe('format', () => {
  it('shows cells as served and lists columns in first-seen order', () => {
    expect(
      summaryColumns([
        { a: '1', b: '2' },
        { c: '3', a: '4' }
      ])
    ).toEqual(['a', 'b', 'c']);
    expect(formatCell('21.56 ms')).toBe('21.56 ms');
    expect(formatCell(12)).toBe('12');
    expect(formatCell(null)).toBe('');
    expect(formatCell(true)).toBe('true');
  });

  it('shows the text Python formatted (the one formatter), never reformats', () => {
    const row = { Region: 'matmul', Duration: '21.56 ms', Bytes: '1.049 MB' };
    expect(formatSummaryCell(row, 'Duration')).toBe('21.56 ms');
    expect(formatSummaryCell(row, 'Bytes')).toBe('1.049 MB');
    expect(formatSummaryCell(row, 'Missing')).toBe('');
  });

  it('renders the widget summary as served', () => {
    const table = document.createElement('table');
    renderTable(table, [{ Region: 'matmul', n: '1', Duration: '21.56 ms' }]);
    const text = table.tBodies[0].rows[0].cells[2].textContent;
    expect(text).toBe('21.56 ms');
  });
});

describe('render', () => {
  it('is the AFM default export, and only that', () => {
    // anywidget warns "Direct export of a 'render' will likely be deprecated"
    // whenever the module has a named `render`.
    expect(typeof widget.render).toBe('function');
    expect(Object.keys(widgetModule)).not.toContain('render');
  });

  it('shows the progress and advances it as traits change', () => {
    const model = new FakeModel();
    const el = document.createElement('div');
    const cleanup = render({ model, el });

    const bar = el.querySelector<HTMLElement>('[role="progressbar"]')!;
    const fill = el.querySelector<HTMLElement>(
      '.jp-nsightLab-Widget-progressFill'
    )!;
    const text = el.querySelector('.jp-nsightLab-Widget-progressText')!;
    expect(bar.getAttribute('aria-valuenow')).toBe('0');
    expect(el.querySelector('.jp-nsightLab-Widget-title')!.textContent).toBe(
      'nsight-lab session 12'
    );

    const served = 'whatever Python says · 15 / 20 runs';
    model.set({ progress: progress({ fraction: 0.75, text: served }) });

    expect(bar.getAttribute('aria-valuenow')).toBe('75');
    expect(fill.style.width).toBe('75%');
    expect(text.textContent).toBe(served); // rendered, never recomputed

    model.set({ status: 'completed', progress: progress({ fraction: 0.9 }) });
    expect(fill.style.width).toBe('100%');
    expect(el.querySelector('.jp-nsightLab-Widget-status')!.textContent).toBe(
      'completed'
    );
    cleanup();
  });

  it('draws the charts in the served order, others after it', () => {
    const model = new FakeModel({
      chart_order: ['traffic', 'duration'],
      figures: { duration: figure(1), extra: figure(1), traffic: figure(1) }
    });
    const el = document.createElement('div');
    const cleanup = render({ model, el });
    expect(chartNames(el)).toEqual(['traffic', 'duration', 'extra']);
    cleanup();
  });

  it('mounts each figure once, in chart order, and updates it in place', () => {
    const model = new FakeModel({ figures: { duration: figure(1) } });
    const el = document.createElement('div');
    const cleanup = render({ model, el });
    expect(mount).toHaveBeenCalledTimes(1);

    model.set({ figures: { duration: figure(2), clocks: figure(2) } });
    expect(mount).toHaveBeenCalledTimes(2);
    const duration = mount.mock.results[0].value as IChartHandle;
    expect(duration.update).toHaveBeenCalledWith(figure(2));

    // The final state: roofline and traffic join; traffic arrives "first".
    model.set({
      figures: {
        traffic: figure(3),
        roofline: figure(3),
        clocks: figure(2),
        duration: figure(2)
      }
    });
    expect(mount).toHaveBeenCalledTimes(4);
    expect(chartNames(el)).toEqual([
      'duration',
      'clocks',
      'roofline',
      'traffic'
    ]);
    // An unchanged figure is not redrawn.
    const clocks = mount.mock.results[1].value as IChartHandle;
    expect(clocks.update).not.toHaveBeenCalled();

    model.set({ figures: { duration: figure(2) } });
    expect(chartNames(el)).toEqual(['duration']);
    expect(
      (mount.mock.results[3].value as IChartHandle).dispose
    ).toHaveBeenCalled();
    cleanup();
  });

  it('appends live points once each, after the figures they extend', () => {
    const model = new FakeModel({ figures: { duration: figure(2) } });
    const el = document.createElement('div');
    render({ model, el });
    const handle = mount.mock.results[0].value as IChartHandle;
    const append = handle.append as jest.Mock;
    const change = {
      traces: [],
      extend: [{ indices: [0], data: { x: [[2]], y: [[5]] } }],
      max_points: 2000
    };
    model.set({
      append: { seq: 1, charts: { duration: change, gone: change } }
    });
    expect(append).toHaveBeenCalledTimes(1); // no chart "gone": nothing to extend
    expect(append).toHaveBeenLastCalledWith(change);
    model.set({ message: 'still running' }); // any other change: not applied again
    model.set({ append: { seq: 1, charts: { duration: change } } });
    expect(append).toHaveBeenCalledTimes(1);
    // The whole figures re-sent with appends 1-3 in them: append 3 is not re-applied.
    model.set({ figures: { duration: figure(4) }, figures_seq: 3 });
    expect(handle.update).toHaveBeenCalledTimes(1);
    model.set({ append: { seq: 3, charts: { duration: change } } });
    expect(append).toHaveBeenCalledTimes(1);
    model.set({ append: { seq: 4, charts: { duration: change } } });
    expect(append).toHaveBeenCalledTimes(2);
  });

  it('after an append it missed, waits for the whole figures (issue 32)', () => {
    const model = new FakeModel({ figures: { duration: figure(2) } });
    const el = document.createElement('div');
    render({ model, el });
    const handle = mount.mock.results[0].value as IChartHandle;
    const append = handle.append as jest.Mock;
    const change = {
      extend: [{ indices: [0], data: { x: [[2]], y: [[5]] } }],
      max_points: 2000
    };
    model.set({ append: { seq: 1, charts: { duration: change } } });
    expect(append).toHaveBeenCalledTimes(1);
    // Appends 2 and 3 went by before this view saw them: 4 would extend figures
    // that lack their points.
    model.set({ append: { seq: 4, charts: { duration: change } } });
    expect(append).toHaveBeenCalledTimes(1);
    model.set({ append: { seq: 5, charts: { duration: change } } });
    expect(append).toHaveBeenCalledTimes(1);
    // The whole figures, with appends 1-5 in them, then the next append.
    model.set({ figures: { duration: figure(6) }, figures_seq: 5 });
    expect(handle.update).toHaveBeenCalledTimes(1);
    model.set({ append: { seq: 6, charts: { duration: change } } });
    expect(append).toHaveBeenCalledTimes(2);
  });

  it('shows the summary table as text, never as markup', () => {
    const model = new FakeModel();
    const el = document.createElement('div');
    const cleanup = render({ model, el });
    const table = el.querySelector('table')!;
    expect(table.hidden).toBe(true);

    model.set({
      summary: [
        {
          Annotation: '<img src=x onerror="alert(1)">',
          Metric: 'gpu__time_duration.sum',
          AvgValue: '1.235 µs',
          StableMeasurement: true
        },
        {
          Annotation: 'fused',
          Metric: 'tflops',
          AvgValue: '500.0 GFLOP/s'
        }
      ]
    });

    expect(table.hidden).toBe(false);
    expect(el.querySelector('img')).toBeNull();
    const headers = Array.from(table.querySelectorAll('th')).map(
      th => th.textContent
    );
    expect(headers).toEqual([
      'Annotation',
      'Metric',
      'AvgValue',
      'StableMeasurement'
    ]);
    const cells = Array.from(table.querySelectorAll('tbody tr')).map(tr =>
      Array.from(tr.querySelectorAll('td')).map(td => td.textContent)
    );
    expect(cells[0]).toEqual([
      '<img src=x onerror="alert(1)">',
      'gpu__time_duration.sum',
      '1.235 µs',
      'true'
    ]);
    expect(cells[1]).toEqual(['fused', 'tflops', '500.0 GFLOP/s', '']);
    cleanup();
  });

  it('shows messages as text', () => {
    const model = new FakeModel({ message: 'note: <b>cpu</b> backend' });
    const el = document.createElement('div');
    const cleanup = render({ model, el });
    const message = el.querySelector<HTMLElement>(
      '.jp-nsightLab-Widget-message'
    )!;
    expect(message.textContent).toBe('note: <b>cpu</b> backend');
    expect(message.querySelector('b')).toBeNull();
    cleanup();
  });

  it('links to the sidebar only when it is present', () => {
    const model = new FakeModel({ sidebar_link: '#nsight-lab/sessions/12' });
    const el = document.createElement('div');
    document.body.appendChild(el);
    let cleanup = render({ model, el });
    const link = () =>
      el.querySelector<HTMLAnchorElement>('.jp-nsightLab-Widget-sidebarLink')!;
    expect(link().hidden).toBe(true); // no lab extension (Colab, VS Code)
    cleanup();

    document.body.dataset.nsightLabSidebar = 'true';
    cleanup = render({ model, el });
    expect(link().hidden).toBe(false);
    const opened = jest.fn();
    document.body.addEventListener(OPEN_SESSION_EVENT, opened);
    link().click();
    expect(opened).toHaveBeenCalledTimes(1);
    const event = opened.mock.calls[0][0] as CustomEvent;
    expect(event.detail).toEqual({
      session_id: 12,
      link: '#nsight-lab/sessions/12'
    });
    document.body.removeEventListener(OPEN_SESSION_EVENT, opened);
    cleanup();
    el.remove();
  });

  it('cleans up: charts disposed, listeners removed, element emptied', () => {
    const model = new FakeModel({
      figures: { duration: figure(1), clocks: figure(1) }
    });
    const el = document.createElement('div');
    const cleanup = render({ model, el });
    expect(model.listenerCount()).toBeGreaterThan(0);

    cleanup();

    for (const result of mount.mock.results) {
      expect((result.value as IChartHandle).dispose).toHaveBeenCalled();
    }
    expect(model.listenerCount()).toBe(0);
    expect(el.childElementCount).toBe(0);
    model.set({ progress: progress({ fraction: 0.5 }) }); // no error, nothing drawn
    expect(el.childElementCount).toBe(0);
  });

  it('re-renders the final state from traits alone (reopened notebook)', () => {
    const model = new FakeModel({
      status: 'completed',
      progress: progress({ status: 'completed', fraction: 1 }),
      figures: {
        duration: figure(10),
        clocks: figure(10),
        roofline: figure(2),
        traffic: figure(2)
      },
      summary: [{ Annotation: 'fused', AvgValue: 1 }]
    });
    const el = document.createElement('div');
    const cleanup = render({ model, el });
    expect(chartNames(el)).toEqual([
      'duration',
      'clocks',
      'roofline',
      'traffic'
    ]);
    expect(el.querySelectorAll('tbody tr')).toHaveLength(1);
    expect(
      el.querySelector('[role="progressbar"]')!.getAttribute('aria-valuenow')
    ).toBe('100');
    cleanup();
  });
});
