/**
 * Live appends (`figures.LiveFigures.add` in Python): applied to the figure a chart
 * keeps, and to the drawn chart through plotly's addTraces/extendTraces.
 */
import Plotly from 'plotly.js-basic-dist-min';

import {
  appendToFigure,
  IChartAppend,
  IFigure,
  mountChart
} from '../../charts/mount';

jest.mock('plotly.js-basic-dist-min', () => ({
  __esModule: true,
  default: {
    react: jest.fn(() => Promise.resolve()),
    addTraces: jest.fn(() => Promise.resolve()),
    extendTraces: jest.fn(() => Promise.resolve()),
    redraw: jest.fn(() => Promise.resolve()),
    purge: jest.fn(),
    Plots: { resize: jest.fn() }
  }
}));

const react = Plotly.react as jest.Mock;
const addTraces = Plotly.addTraces as jest.Mock;
const extendTraces = Plotly.extendTraces as jest.Mock;
const redraw = Plotly.redraw as jest.Mock;

function figure(): IFigure {
  return {
    data: [
      { type: 'scatter', x: [0], y: [1], marker: { size: [6], color: '#000' } }
    ],
    layout: {}
  };
}

const CHANGE: IChartAppend = {
  traces: [{ type: 'scatter', name: 'new', x: [], y: [] }],
  extend: [
    {
      indices: [0, 1],
      data: {
        x: [[1, 2], [0]],
        y: [[2, 3], [7]],
        'marker.size': [[6, 10], [6]]
      }
    }
  ],
  max_points: 2
};

function flush(): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, 0));
}

describe('appendToFigure', () => {
  it('adds traces, then appends points, keeping the latest max_points', () => {
    const fig = figure();
    appendToFigure(fig, CHANGE);
    expect(fig.data).toHaveLength(2);
    expect(fig.data[0].x).toEqual([1, 2]);
    expect(fig.data[0].y).toEqual([2, 3]);
    expect(fig.data[0].marker).toEqual({ size: [6, 10], color: '#000' });
    expect(fig.data[1]).toEqual({
      type: 'scatter',
      name: 'new',
      x: [0],
      y: [7],
      marker: { size: [6] }
    });
    expect(CHANGE.traces![0].x).toEqual([]); // the change itself is left as it was
  });

  it('replaces a redrawn chart whole (Counters over time)', () => {
    const fig = figure();
    const whole: IFigure = {
      data: [{ type: 'scatter', name: 'dram (GB/s)', x: [0, 20], y: [3, 4] }],
      layout: { title: { text: 'Counters over time' } }
    };
    appendToFigure(fig, { figure: whole });
    expect(fig.data).toEqual(whole.data);
    expect(fig.layout).toEqual(whole.layout);
    fig.data[0].y = [];
    expect(whole.data[0].y).toEqual([3, 4]); // a copy: the change is left as it was
  });
});

describe('a live append with axes', () => {
  it('floors the axes as the finished chart does (no autoscale while streaming)', async () => {
    const el = document.createElement('div');
    const fig: IFigure = {
      data: [{ type: 'scatter', x: [0], y: [1980] }],
      layout: { yaxis: { title: { text: 'SM clock (MHz)' }, nticks: 4 } }
    };
    const handle = mountChart(el, fig, { watchTheme: false });
    react.mockClear();
    const change: IChartAppend = {
      extend: [{ indices: [0], data: { x: [[1]], y: [[1980]] } }],
      layout: { yaxis: { range: [1940.4, 2019.6], autorange: false } }
    };
    handle.append(change);
    await flush();
    const yaxis = {
      title: { text: 'SM clock (MHz)' },
      nticks: 4,
      range: [1940.4, 2019.6],
      autorange: false
    };
    expect(handle.figure.layout?.yaxis).toEqual(yaxis);
    expect(handle.figure.data[0].x).toEqual([0, 1]);
    // Drawn with the axes: plotly keeps the range while the points come in.
    expect(react).toHaveBeenCalledTimes(1);
    expect(react.mock.calls[0][2].yaxis).toMatchObject({
      range: [1940.4, 2019.6],
      autorange: false
    });
    expect(fig.layout?.yaxis).toEqual({
      title: { text: 'SM clock (MHz)' },
      nticks: 4
    }); // the caller's figure is left as it was
    handle.dispose();
  });
});

describe('mountChart append', () => {
  beforeEach(() => {
    react.mockClear();
    addTraces.mockClear();
    extendTraces.mockClear();
  });

  it('extends the drawn chart and keeps the points in its figure', async () => {
    const el = document.createElement('div');
    const original = figure();
    const handle = mountChart(el, original, { watchTheme: false });
    // A trace without a legend entry (a band edge) is added in place.
    const change: IChartAppend = {
      ...CHANGE,
      traces: [{ ...CHANGE.traces![0], showlegend: false }]
    };
    handle.append(change);
    await flush();
    expect(addTraces).toHaveBeenCalledTimes(1);
    expect(addTraces.mock.calls[0][1]).toEqual(change.traces);
    expect(extendTraces).toHaveBeenCalledWith(
      el,
      CHANGE.extend![0].data,
      [0, 1],
      2
    );
    expect(react).toHaveBeenCalledTimes(1); // no redraw of what was there
    expect(handle.figure.data[0].x).toEqual([1, 2]);
    expect(original.data[0].x).toEqual([0]); // the model's figure is not changed
    handle.update(figure()); // a new figure: appends start from it
    expect(handle.figure.data).toHaveLength(1);
    handle.dispose();
    handle.append(CHANGE); // disposed: nothing
    await flush();
    expect(addTraces).toHaveBeenCalledTimes(1);
  });

  it('draws once for a change of several extends (a view delta)', async () => {
    const el = document.createElement('div') as HTMLDivElement & {
      data?: Record<string, unknown>[];
    };
    const handle = mountChart(el, figure(), { watchTheme: false });
    // What plotly keeps on the element once it drew.
    el.data = [{ x: [0], y: [1] }];
    redraw.mockClear();
    handle.append({
      extend: [
        { indices: [0], data: { x: [[1]], y: [[2]] } },
        { indices: [0], data: { x: [[2]], y: [[3]] } }
      ],
      max_points: 2
    });
    await flush();
    expect(extendTraces).not.toHaveBeenCalled();
    expect(redraw).toHaveBeenCalledTimes(1);
    expect(el.data[0]).toEqual({ x: [1, 2], y: [2, 3] });
    expect(handle.figure.data[0].x).toEqual([1, 2]);
    handle.dispose();
  });

  it('draws a whole figure in place of the one shown, without appending', async () => {
    const el = document.createElement('div');
    const handle = mountChart(el, figure(), { watchTheme: false });
    const whole: IFigure = {
      data: [{ type: 'scatter', name: 'newest run', x: [0, 20], y: [3, 4] }],
      layout: {}
    };
    handle.append({ figure: whole });
    await flush();
    expect(addTraces).not.toHaveBeenCalled();
    expect(extendTraces).not.toHaveBeenCalled();
    expect(react).toHaveBeenCalledTimes(2);
    expect(react.mock.calls[1][1][0].name).toBe('newest run');
    expect(handle.figure).toBe(whole);
    handle.dispose();
  });

  it('draws again when a new trace adds a legend entry (room for its row)', async () => {
    const el = document.createElement('div');
    const handle = mountChart(
      el,
      {
        data: [{ type: 'scatter', name: 'first', x: [0], y: [1] }],
        layout: {}
      },
      { watchTheme: false }
    );
    expect(react).toHaveBeenCalledTimes(1);

    handle.append(CHANGE);
    await flush();

    expect(addTraces).not.toHaveBeenCalled();
    expect(react).toHaveBeenCalledTimes(2);
    const [, data, layout] = react.mock.calls[1];
    expect(data.map((trace: { name: string }) => trace.name)).toEqual([
      'first',
      'new'
    ]);
    // Two entries now: a legend below the plot, the chart taller by its row.
    expect(layout.legend).toMatchObject({
      orientation: 'h',
      yanchor: 'bottom'
    });
    expect(parseFloat(el.style.height)).toBeGreaterThan(240);
    expect(handle.figure.data[1].x).toEqual([0]);
    handle.dispose();
  });
});
