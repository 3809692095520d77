import {
  decimateFigure,
  decimateTrace,
  keptIndices,
  LIVE_DRAWN_POINTS,
  overPoints
} from '../../charts/decimate';

describe('decimate (issue 32: the compact live charts draw fewer points)', () => {
  const n = 2000;
  const x = [...Array(n).keys()];
  const y = x.map(i => 1 + (i % 7) / 100);
  y[1234] = 50; // an outlier
  y[777] = -3;
  const trace = {
    type: 'scatter',
    mode: 'lines+markers',
    x,
    y,
    customdata: x.map(i => [`r${i}`, '']),
    marker: {
      size: x.map(() => 7),
      symbol: x.map(() => 'circle'),
      color: 'red'
    },
    name: 'region'
  };

  it('keeps about the points asked, the first, the last and the extremes', () => {
    const kept = keptIndices(y, n, LIVE_DRAWN_POINTS);
    expect(kept.length).toBeLessThanOrEqual(LIVE_DRAWN_POINTS);
    expect(kept.length).toBeGreaterThan(LIVE_DRAWN_POINTS / 2);
    expect(kept[0]).toBe(0);
    expect(kept[kept.length - 1]).toBe(n - 1);
    expect(kept).toContain(1234);
    expect(kept).toContain(777);
    expect([...kept].sort((a, b) => a - b)).toEqual(kept); // in order
    expect(new Set(kept).size).toBe(kept.length);
  });

  it('thins every per-point list of a trace alike, the rest as it is', () => {
    const thin = decimateTrace(trace, 200);
    const xs = thin.x as number[];
    expect(xs.length).toBeLessThanOrEqual(200);
    expect(thin.y).toEqual(xs.map(i => y[i]));
    expect(thin.customdata).toEqual(xs.map(i => [`r${i}`, '']));
    const marker = thin.marker as Record<string, unknown>;
    expect((marker.size as number[]).length).toBe(xs.length);
    expect((marker.symbol as string[]).length).toBe(xs.length);
    expect(marker.color).toBe('red');
    expect(thin.name).toBe('region');
    expect(trace.x.length).toBe(n); // the figure keeps every point
  });

  it('leaves small traces, other types and small figures as they are', () => {
    const small = { x: [1, 2, 3], y: [1, 2, 3] };
    expect(decimateTrace(small, 200)).toBe(small);
    const bars = { ...trace, type: 'bar' };
    expect(decimateTrace(bars, 200)).toBe(bars);
    const figure = { data: [small], layout: {} };
    expect(overPoints(figure, 200)).toBe(false);
    expect(decimateFigure(figure, 200)).toBe(figure);
    const big = { data: [small, trace], layout: { height: 3 } };
    const thin = decimateFigure(big, 200);
    expect(thin.data[0]).toBe(small);
    expect((thin.data[1].x as number[]).length).toBeLessThanOrEqual(200);
    expect(thin.layout).toBe(big.layout);
  });
});
