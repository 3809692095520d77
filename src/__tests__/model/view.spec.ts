/**
 * Live view deltas (issue 32): the server's view of a streamed session
 * (`tests/fixtures/wire.json` `live_deltas`, made by the Python code paths) and each
 * refresh's delta; applied in turn to the first view, they give the fresh full view.
 */

import { appendedCopy, IFigure } from '../../charts/append';
import {
  applyViewDelta,
  IServedView,
  nextView,
  servedView,
  ViewDeltaError
} from '../../model/view';
import { ISessionResponse } from '../../types';

/** The directory of this spec (jest's CommonJS wrapper defines it). */
declare const __dirname: string;

interface IFs {
  readFileSync(path: string, encoding: 'utf-8'): string;
}

interface ILiveDeltas {
  first: ISessionResponse;
  answers: ISessionResponse[];
  last: ISessionResponse;
}

const STREAMED = (
  JSON.parse(
    jest
      .requireActual<IFs>('fs')
      .readFileSync(`${__dirname}/../../../tests/fixtures/wire.json`, 'utf-8')
  ) as { live_deltas: ILiveDeltas }
).live_deltas;

describe('applyViewDelta', () => {
  it('applies every delta of a streamed session to its first view: the fresh view', () => {
    let view: IServedView = servedView(STREAMED.first);
    for (const answer of STREAMED.answers) {
      expect(answer.delta).toBeDefined();
      expect(answer.figures).toBeUndefined(); // only what changed
      view = nextView(view, answer);
    }
    expect(view).toEqual(servedView(STREAMED.last));
    // The deltas carried new points and summary rows, not the figures again.
    const sizes = STREAMED.answers.map(a => JSON.stringify(a.delta).length);
    expect(Math.max(...sizes)).toBeLessThan(
      JSON.stringify(STREAMED.last.figures).length
    );
  });

  it('leaves the view it is given as it was; unchanged figures keep their identity', () => {
    const first = servedView(STREAMED.first);
    const frozen = JSON.stringify(first);
    const withRoofline: IServedView = {
      ...first,
      figures: { ...first.figures, roofline: { data: [{}], layout: {} } }
    };
    const next = applyViewDelta(withRoofline, STREAMED.answers[0].delta!);
    expect(JSON.stringify(first)).toBe(frozen);
    expect(next.figures.roofline).toBe(withRoofline.figures.roofline);
    expect(next.figures.duration).not.toBe(first.figures.duration);
  });

  it('refuses a delta that extends a chart the view lacks', () => {
    const view: IServedView = { figures: {} };
    expect(() =>
      applyViewDelta(view, {
        charts: { duration: { extend: [{ indices: [0], data: { x: [[1]] } }] } }
      })
    ).toThrow(ViewDeltaError);
    expect(() => nextView(null, STREAMED.answers[0])).toThrow(ViewDeltaError);
  });

  it('removes a chart gone, draws a whole one, and replaces rows and tables', () => {
    const view: IServedView = {
      figures: { duration: { data: [], layout: {} }, clocks: null },
      summary: [{ Region: 'a' }, { Region: 'b' }],
      counters: { rows: [] } as unknown as IServedView['counters']
    };
    const next = applyViewDelta(view, {
      charts: {
        duration: null,
        traffic: { figure: { data: [{}], layout: {} } }
      },
      summary: { length: 1, rows: { '0': { Region: 'c' } } },
      tables: { chart_order: ['traffic'] }
    });
    expect(Object.keys(next.figures).sort()).toEqual(['clocks', 'traffic']);
    expect(next.summary).toEqual([{ Region: 'c' }]);
    expect(next.chart_order).toEqual(['traffic']);
    expect(next.counters).toBe(view.counters);
  });
});

describe('appendedCopy', () => {
  it('copies the traces and arrays it extends, trimmed to max_points', () => {
    const figure: IFigure = {
      data: [{ x: [1, 2], marker: { size: [7, 7] } }, { x: [5] }],
      layout: { a: { b: 1 } }
    };
    const out = appendedCopy(figure, {
      extend: [{ indices: [0], data: { x: [[3]], 'marker.size': [[9]] } }],
      max_points: 2,
      layout: { a: { c: 2 } }
    });
    expect(out.data[0]).toEqual({ x: [2, 3], marker: { size: [7, 9] } });
    expect(out.data[1]).toBe(figure.data[1]);
    expect(out.layout).toEqual({ a: { b: 1, c: 2 } });
    expect(figure.data[0]).toEqual({ x: [1, 2], marker: { size: [7, 7] } });
  });
});
