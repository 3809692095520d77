/**
 * ChartGrid: charts laid out in the order given, drawn once and updated in place,
 * missing ones said in words or left out, removed ones disposed of.
 */

import {
  ChartGrid,
  hasData,
  sameFigure,
  servedOrder,
  withFirst
} from '../../charts/grid';
import { IChartHandle, IFigure, mountChart } from '../../charts/mount';

jest.mock('../../charts/mount', () => ({ mountChart: jest.fn() }));

const mocked = mountChart as jest.MockedFunction<typeof mountChart>;

function fakeHandle(el: HTMLElement, figure: IFigure): IChartHandle {
  let current = figure;
  return {
    element: el,
    get figure(): IFigure {
      return current;
    },
    update: jest.fn((next: IFigure) => {
      current = next;
    }),
    append: jest.fn(),
    dispose: jest.fn(),
    isDisposed: false
  };
}

const fig = (y: number[]): IFigure => ({ data: [{ type: 'scatter', y }] });

beforeEach(() => {
  mocked.mockReset();
  mocked.mockImplementation((el, figure) => fakeHandle(el, figure));
});

function boxes(host: HTMLElement): string[] {
  return Array.from(host.children).map(
    node =>
      `${(node as HTMLElement).dataset.chart}:${(node as HTMLElement).dataset.state}`
  );
}

describe('servedOrder and withFirst', () => {
  it('keeps the server’s order, or the figures’ own key order', () => {
    const figures = { traffic: fig([1]), duration: fig([2]) };
    expect(servedOrder(figures)).toEqual(['traffic', 'duration']);
    expect(servedOrder(figures, ['duration', 'traffic'])).toEqual([
      'duration',
      'traffic'
    ]);
    // A figure the order does not name comes after it, in the order sent.
    expect(
      servedOrder({ ...figures, extra: fig([3]) }, ['traffic', 'roofline'])
    ).toEqual(['traffic', 'roofline', 'duration', 'extra']);
  });

  it('tells an equal figure from a changed one', () => {
    expect(sameFigure(fig([1]), fig([1]))).toBe(true);
    expect(sameFigure(fig([1]), fig([1, 2]))).toBe(false);
  });

  it('moves a chosen chart to the front only when it is there', () => {
    expect(withFirst(['a', 'b', 'c'], 'c')).toEqual(['c', 'a', 'b']);
    expect(withFirst(['a', 'b'], 'x')).toEqual(['a', 'b']);
    expect(withFirst(['a', 'b'], null)).toEqual(['a', 'b']);
  });

  it('tells a figure with data from an empty one', () => {
    expect(hasData(fig([1]))).toBe(true);
    expect(hasData({ data: [] })).toBe(false);
    expect(hasData(null)).toBe(false);
  });
});

describe('ChartGrid', () => {
  it('lays out and draws the charts in the order given, with titles', () => {
    const host = document.createElement('div');
    const grid = new ChartGrid(host, {
      className: 'box',
      title: name => `Title ${name}`,
      missing: name => `no ${name}`
    });
    const duration = fig([1, 2]);

    grid.update(['clocks', 'duration'], { duration, clocks: null });

    expect(boxes(host)).toEqual(['clocks:missing', 'duration:drawn']);
    expect(grid.names).toEqual(['clocks', 'duration']);
    expect(
      host.querySelector('[data-chart="clocks"] .box-missing')?.textContent
    ).toBe('no clocks');
    expect(
      host.querySelector('[data-chart="duration"] .box-title')?.textContent
    ).toBe('Title duration');
    expect(mocked).toHaveBeenCalledTimes(1);
    expect(mocked.mock.calls[0][0]).toBe(
      host.querySelector('[data-chart="duration"] .box-plot')
    );
    expect(mocked.mock.calls[0][1]).toBe(duration);
  });

  it('reorders in place, updates changed figures only, and removes charts not named', () => {
    const host = document.createElement('div');
    const grid = new ChartGrid(host, { className: 'box' });
    const a = fig([1]);
    const b = fig([2]);
    grid.update(['a', 'b'], { a, b });
    const boxA = grid.box('a');
    const handleA = grid.handle('a') as IChartHandle;
    const handleB = grid.handle('b') as IChartHandle;

    const b2 = fig([2, 3]);
    grid.update(['b', 'a'], { a, b: b2 });

    expect(boxes(host)).toEqual(['b:drawn', 'a:drawn']);
    expect(grid.box('a')).toBe(boxA);
    expect(mocked).toHaveBeenCalledTimes(2);
    expect(handleA.update).not.toHaveBeenCalled();
    expect(handleB.update).toHaveBeenCalledWith(b2);

    // An equal figure re-sent (a new object) is not drawn again.
    grid.update(['b', 'a'], { a: fig([1]), b: b2 });
    expect(handleA.update).not.toHaveBeenCalled();
    expect(handleB.update).toHaveBeenCalledTimes(1);

    // Without `missing`, a chart with no data is left out (and its chart disposed).
    grid.update(['b', 'a'], { a, b: { data: [] } });
    expect(boxes(host)).toEqual(['a:drawn']);
    expect(handleB.dispose).toHaveBeenCalled();
  });

  it('passes live points to the charts drawn, and disposes of them all', () => {
    const host = document.createElement('div');
    const grid = new ChartGrid(host, { className: 'box' });
    grid.update(['a'], { a: fig([1]) });
    const handle = grid.handle('a') as IChartHandle;
    const change = { traces: [], extend: [], max_points: null };

    grid.append({ a: change, unknown: change });
    grid.dispose();

    expect(handle.append).toHaveBeenCalledWith(change);
    expect(handle.dispose).toHaveBeenCalled();
    expect(host.children.length).toBe(0);
    expect(grid.names).toEqual([]);
  });
});

describe('ChartGrid.appendChanges (a view delta)', () => {
  it('appends to the charts drawing its "from" figures, and does not redraw them', () => {
    const host = document.createElement('div');
    const grid = new ChartGrid(host, { className: 'c' });
    const from = { duration: fig([1]), roofline: fig([2]) };
    grid.update(['duration', 'roofline'], from);
    const duration = grid.handle('duration')!;
    const roofline = grid.handle('roofline')!;
    const change = { extend: [{ indices: [0], data: { y: [[3]] } }] };
    const to = { duration: fig([1, 3]), roofline: fig([4]) };

    grid.appendChanges(from, to, {
      duration: change,
      roofline: { figure: to.roofline }
    });
    grid.update(['duration', 'roofline'], to);

    expect(duration.append).toHaveBeenCalledWith(change);
    expect(duration.update).not.toHaveBeenCalled(); // extended, not drawn again
    expect(roofline.append).not.toHaveBeenCalled(); // drawn whole
    expect(roofline.update).toHaveBeenCalledWith(to.roofline);
    // Changes from figures the grid does not draw are left to update().
    grid.appendChanges(from, { duration: fig([9]) }, { duration: change });
    expect(duration.append).toHaveBeenCalledTimes(1);
  });
});
