/**
 * mount.ts: figures drawn with Plotly.react in the host theme, updated in place,
 * purged on dispose. plotly.js needs a real browser, so its module is replaced by
 * recorders here (the Galata test draws real charts).
 */
import Plotly from 'plotly.js-basic-dist-min';

import { IFigure, UNTITLED_TOP_MARGIN, mountChart } from '../../charts/mount';

jest.mock('plotly.js-basic-dist-min', () => ({
  __esModule: true,
  default: {
    react: jest.fn(() => Promise.resolve()),
    purge: jest.fn(),
    Plots: { resize: jest.fn() }
  }
}));

const react = Plotly.react as jest.Mock;
const purge = Plotly.purge as jest.Mock;

const FIGURE: IFigure = {
  data: [
    {
      type: 'scatter',
      name: 'unfused &lt;b&gt;',
      x: [0, 1],
      y: [3, 4]
    }
  ],
  layout: { title: { text: 'Duration per run' }, xaxis: { type: 'linear' } }
};

function flushMutations(): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, 0));
}

beforeEach(() => {
  react.mockClear();
  purge.mockClear();
  document.body.style.setProperty('--jp-ui-font-color1', 'rgb(10, 20, 30)');
  document.body.style.setProperty('--jp-border-color2', '#eee');
});

afterEach(() => {
  document.body.removeAttribute('style');
  document.body.removeAttribute('data-jp-theme-name');
});

describe('mountChart', () => {
  it('draws at most drawnPoints per trace, the figure keeping every point', () => {
    const el = document.createElement('div');
    const n = 1000;
    const x = [...Array(n).keys()];
    const figure: IFigure = {
      data: [{ type: 'scatter', x, y: x.map(i => i % 5) }],
      layout: {}
    };
    const handle = mountChart(el, figure, { drawnPoints: 100 });
    const drawn = react.mock.calls[0][1] as { x: number[] }[];
    expect(drawn[0].x.length).toBeLessThanOrEqual(100);
    expect(drawn[0].x[drawn[0].x.length - 1]).toBe(n - 1);

    // An append to a thinned chart draws the thinned copy again (no extend),
    // in a task of its own; appends meanwhile are drawn together.
    jest.useFakeTimers();
    react.mockClear();
    handle.append({
      extend: [{ indices: [0], data: { x: [[n]], y: [[7]] } }],
      max_points: null
    });
    handle.append({
      extend: [{ indices: [0], data: { x: [[n + 1]], y: [[8]] } }],
      max_points: null
    });
    expect(react).not.toHaveBeenCalled();
    jest.runAllTimers();
    jest.useRealTimers();
    expect(react).toHaveBeenCalledTimes(1);
    const again = react.mock.calls[0][1] as { x: number[] }[];
    expect(again[0].x.length).toBeLessThanOrEqual(100);
    expect(again[0].x[again[0].x.length - 1]).toBe(n + 1);
    expect((handle.figure.data[0].x as number[]).length).toBe(n + 2);
    expect(figure.data[0].x).toHaveLength(n); // the caller's figure as it was
    handle.dispose();
  });

  it('draws the figure with the theme applied, without touching the input', () => {
    const el = document.createElement('div');
    const frozen = JSON.stringify(FIGURE);

    const handle = mountChart(el, FIGURE);

    expect(react).toHaveBeenCalledTimes(1);
    const [root, data, layout, config] = react.mock.calls[0];
    expect(root).toBe(el);
    expect(data).toEqual(FIGURE.data);
    expect(data).not.toBe(FIGURE.data); // plotly writes into what it draws
    expect(layout.title).toEqual({ text: 'Duration per run' });
    expect(layout.font.color).toBe('rgb(10, 20, 30)');
    expect(layout.xaxis.gridcolor).toBe('#eee');
    expect(layout.paper_bgcolor).toBe('rgba(0,0,0,0)');
    expect(layout.uirevision).toBe('nsight-lab');
    expect(config).toMatchObject({ displaylogo: false, responsive: true });
    expect(JSON.stringify(FIGURE)).toBe(frozen);
    expect(handle.figure).toBe(FIGURE);
    // Names are handed to plotly as data: the element gets no markup from us.
    expect(el.innerHTML).toBe('');
    handle.dispose();
  });

  it('updates in place with Plotly.react', () => {
    const el = document.createElement('div');
    const handle = mountChart(el, FIGURE);
    const next: IFigure = {
      data: [{ type: 'scatter', x: [0, 1, 2], y: [3, 4, 5] }]
    };

    handle.update(next);

    expect(react).toHaveBeenCalledTimes(2);
    expect(react.mock.calls[1][0]).toBe(el);
    expect(react.mock.calls[1][1]).toEqual(next.data);
    expect(handle.figure).toBe(next);
    expect(purge).not.toHaveBeenCalled();
    handle.dispose();
  });

  it('redraws when the theme changes, and not after dispose', async () => {
    const el = document.createElement('div');
    const handle = mountChart(el, FIGURE);

    document.body.style.setProperty(
      '--jp-ui-font-color1',
      'rgb(200, 200, 200)'
    );
    document.body.setAttribute('data-jp-theme-name', 'JupyterLab Dark');
    await flushMutations();

    expect(react).toHaveBeenCalledTimes(2);
    expect(react.mock.calls[1][2].font.color).toBe('rgb(200, 200, 200)');

    handle.dispose();
    expect(purge).toHaveBeenCalledWith(el);
    expect(handle.isDisposed).toBe(true);
    document.body.setAttribute('data-jp-theme-name', 'JupyterLab Light');
    await flushMutations();
    handle.update(FIGURE);
    expect(react).toHaveBeenCalledTimes(2);
    handle.dispose();
    expect(purge).toHaveBeenCalledTimes(1);
  });

  it('draws a compact chart without its title, the top margin given to the plot', () => {
    const el = document.createElement('div');
    const figure: IFigure = {
      ...FIGURE,
      layout: { ...FIGURE.layout, margin: { l: 60, r: 60, t: 70, b: 40 } }
    };

    const handle = mountChart(el, figure, { title: false });

    const layout = react.mock.calls[0][2];
    expect(layout.title).toBeUndefined();
    expect(layout.margin).toMatchObject({ l: 60, t: UNTITLED_TOP_MARGIN });
    expect(figure.layout?.title).toEqual({ text: 'Duration per run' });
    handle.dispose();
  });

  it('sizes the element to the chart and its legend rows', () => {
    const el = document.createElement('div');
    const figure: IFigure = {
      data: ['a', 'b', 'c'].map(name => ({ type: 'scatter', name })),
      layout: { margin: { l: 60, r: 60, t: 70, b: 40 } }
    };

    const handle = mountChart(el, figure);

    // No width or CSS in jsdom: one entry per row below a 240 px chart.
    const layout = react.mock.calls[0][2];
    expect(layout.legend).toMatchObject({ orientation: 'h', y: 0 });
    expect(el.style.height).toBe(`${layout.height}px`);
    expect(layout.height).toBeGreaterThan(240 + 3 * 19);
    expect(layout.margin.b - 40).toBe(layout.height - 240);
    handle.dispose();
  });

  it('gives a figure that says its height that height, plus its legend rows', () => {
    const el = document.createElement('div');
    const figure: IFigure = {
      data: ['a', 'b'].map(name => ({ type: 'scatter', name })),
      layout: { height: 610, margin: { l: 60, r: 60, t: 70, b: 40 } }
    };

    const handle = mountChart(el, figure);

    // Not the 240 px of an element without CSS: 610 px and two legend rows.
    const layout = react.mock.calls[0][2];
    expect(layout.height).toBe(610 + layout.margin.b - 40);
    expect(layout.height).toBeGreaterThan(610 + 2 * 19);
    // A figure of another height, drawn in place, gets its own.
    handle.update({ ...figure, layout: { ...figure.layout, height: 300 } });
    expect(react.mock.calls[1][2].height).toBe(300 + layout.margin.b - 40);
    handle.dispose();
  });

  it('draws at the element width, for which the legend was placed', () => {
    const el = document.createElement('div');
    Object.defineProperty(el, 'clientWidth', { value: 410 });

    const handle = mountChart(el, FIGURE);

    expect(react.mock.calls[0][2].width).toBe(410);
    handle.dispose();
  });

  it('can ignore theme changes', async () => {
    const el = document.createElement('div');
    const handle = mountChart(el, FIGURE, { watchTheme: false });

    document.body.setAttribute('data-jp-theme-name', 'JupyterLab Dark');
    await flushMutations();

    expect(react).toHaveBeenCalledTimes(1);
    handle.dispose();
  });

  it('reports a failed draw on the console with the [nsight-lab] prefix', async () => {
    const error = jest.spyOn(console, 'error').mockImplementation(() => {});
    react.mockImplementationOnce(() => Promise.reject(new Error('bad trace')));

    const handle = mountChart(document.createElement('div'), FIGURE);
    await flushMutations();

    expect(error).toHaveBeenCalledWith(
      '[nsight-lab] a chart failed to draw:',
      expect.any(Error)
    );
    error.mockRestore();
    handle.dispose();
  });
});
