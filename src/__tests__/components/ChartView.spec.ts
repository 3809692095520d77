/**
 * ChartView: mounts once, updates in place, says in words what a chart needs, and
 * disposes of its chart.
 */

import { CHART_MISSING, ChartView } from '../../components/ChartView';
import { mountChart } from '../../charts/mount';

jest.mock('../../charts/mount', () => ({ mountChart: jest.fn() }));

const mocked = mountChart as jest.MockedFunction<typeof mountChart>;

describe('ChartView', () => {
  it('mounts a figure once, updates it in place and disposes of it', () => {
    const handle = {
      element: document.createElement('div'),
      figure: { data: [] },
      update: jest.fn(),
      append: jest.fn(),
      dispose: jest.fn(),
      isDisposed: false
    };
    mocked.mockReturnValue(handle);
    const chart = new ChartView('duration');
    const figure = { data: [{ type: 'scatter' }], layout: {} };

    chart.setFigure(figure);
    chart.setFigure(figure);

    expect(mocked).toHaveBeenCalledTimes(1);
    expect(handle.update).toHaveBeenCalledWith(figure);
    expect(chart.node.dataset.state).toBe('drawn');
    chart.dispose();
    expect(handle.dispose).toHaveBeenCalled();
  });

  it('says what the roofline needs when the server sent no figure', () => {
    const chart = new ChartView('roofline');

    chart.setFigure(null);

    expect(chart.node.textContent).toContain(
      'roofline needs FLOP/byte counts: run with --derive tflops or --backend ncu'
    );
    expect(CHART_MISSING.roofline).toContain('--backend ncu');
    expect(chart.node.dataset.state).toBe('missing');
  });
});
