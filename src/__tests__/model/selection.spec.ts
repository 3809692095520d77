/**
 * SelectionModel: which ids a click selects, one session read with its figures,
 * two compared, only new runs read on refresh, a deleted one forgotten.
 */

import { SelectionModel, nextSelection } from '../../model/selection';
import { requestAPI } from '../../request';
import { ISessionResponse } from '../../types';
import { compareResponse, run, session, sessionResponse } from '../fixtures';
import { serve, settings, settle, sidebarSettings } from './server';

jest.mock('../../request', () => ({
  ...jest.requireActual('../../request'),
  requestAPI: jest.fn(),
  requestDownload: jest.fn()
}));

function makeSelection(): SelectionModel {
  return new SelectionModel({
    serverSettings: settings,
    settings: () => sidebarSettings
  });
}

beforeEach(() => {
  jest.spyOn(console, 'error').mockImplementation(() => undefined);
});

afterEach(() => {
  (requestAPI as jest.Mock).mockReset();
  jest.restoreAllMocks();
});

describe('nextSelection', () => {
  it('selects one, adds a second, replaces the older of two, removes a re-added one', () => {
    expect(nextSelection([], 3, 'single')).toEqual([3]);
    expect(nextSelection([1, 2], 3, 'single')).toEqual([3]);
    expect(nextSelection([], 3, 'add')).toEqual([3]);
    expect(nextSelection([1], 3, 'add')).toEqual([1, 3]);
    expect(nextSelection([1, 2], 3, 'add')).toEqual([2, 3]);
    expect(nextSelection([1, 2], 2, 'add')).toEqual([1]);
  });
});

describe('SelectionModel', () => {
  it('reads the view of a session, then again as it changes, never its runs', async () => {
    let stored = [run(1, 4), run(2, 4)];
    const calls = serve({
      'sessions/4': url => {
        const after = Number(url.searchParams.get('after_id'));
        return sessionResponse(
          session(4, { run_count: stored.length }),
          stored.filter(r => r.id > after)
        );
      }
    });
    const selection = makeSelection();
    const states: boolean[] = [];
    selection.changed.connect(() => states.push(selection.state.loading));

    await selection.select(4);

    expect(states).toEqual([true, false]);
    expect(calls).toEqual(['GET sessions/4?tail=0&figures=1']);
    expect(selection.state.detail?.figures.duration?.data[0].y).toHaveLength(2);

    stored = [1, 2, 3, 4, 5, 6].map(id => run(id, 4));
    selection.requestRefresh();
    await settle();

    expect(calls).toEqual([
      'GET sessions/4?tail=0&figures=1',
      'GET sessions/4?tail=0&figures=1'
    ]);
    expect(selection.state.detail?.figures.duration?.data[0].y).toHaveLength(6);
    selection.dispose();
  });

  it('compares two sessions on the server', async () => {
    const calls = serve({
      'sessions/*': () => sessionResponse(session(2), []),
      compare: url =>
        compareResponse(
          Number(url.searchParams.get('a')),
          Number(url.searchParams.get('b'))
        )
    });
    const selection = makeSelection();

    await selection.select(2);
    await selection.select(7, 'add');

    expect(calls).toContain('GET compare?a=2&b=7');
    expect(selection.state.comparison?.a.id).toBe(2);
    expect(selection.state.comparison?.b.id).toBe(7);
    expect(selection.state.detail).toBeNull();
    selection.dispose();
  });

  it('drops an answer that arrives after the selection changed', async () => {
    let release: () => void = () => undefined;
    serve({
      'sessions/1': () =>
        new Promise(resolve => {
          release = () => resolve(sessionResponse(session(1), [run(1, 1)]));
        }),
      'sessions/2': () => sessionResponse(session(2), [run(5, 2)])
    });
    const selection = makeSelection();

    const first = selection.select(1);
    await selection.select(2);
    release();
    await first;

    expect(selection.state.ids).toEqual([2]);
    expect(selection.state.detail?.session.id).toBe(2);
    selection.dispose();
  });

  it('forgets a deleted session: the other one stays selected', async () => {
    serve({
      'sessions/*': url =>
        sessionResponse(session(Number(url.pathname.split('/')[2])), []),
      compare: url =>
        compareResponse(
          Number(url.searchParams.get('a')),
          Number(url.searchParams.get('b'))
        )
    });
    const selection = makeSelection();
    await selection.select(2);
    await selection.select(7, 'add');

    await selection.forget(2);

    expect(selection.state.ids).toEqual([7]);
    expect(selection.state.detail?.session.id).toBe(7);
    await selection.forget(7);
    expect(selection.state.ids).toEqual([]);
    selection.dispose();
  });
});

/** The directory of this spec (jest's CommonJS wrapper defines it). */
declare const __dirname: string;

describe('SelectionModel reads deltas of a running session', () => {
  it('asks what changed since the view it holds, and applies it', async () => {
    const fs = jest.requireActual<{
      readFileSync(path: string, encoding: 'utf-8'): string;
    }>('fs');
    const wire = (
      JSON.parse(
        fs.readFileSync(
          `${__dirname}/../../../tests/fixtures/wire.json`,
          'utf-8'
        )
      ) as {
        live_deltas: {
          first: ISessionResponse;
          answers: ISessionResponse[];
          last: ISessionResponse;
        };
      }
    ).live_deltas;
    const running = {
      ...wire.first.session,
      id: 6,
      status: 'running' as const
    };
    const asked: (string | null)[] = [];
    let step = 0;
    serve({
      'sessions/6': url => {
        asked.push(url.searchParams.get('since'));
        const answer = step === 0 ? wire.first : wire.answers[step - 1];
        step += 1;
        return { ...answer, session: running };
      }
    });
    const selection = makeSelection();
    await selection.select(6);
    for (let i = 0; i < wire.answers.length; i++) {
      const before = selection.state.detail!.figures;
      selection.requestRefresh();
      await settle();
      expect(selection.state.detail!.changes?.from).toBe(before);
    }
    expect(asked).toEqual([
      null,
      wire.first.view_version,
      ...wire.answers.slice(0, -1).map(a => a.view_version)
    ]);
    const detail = selection.state.detail!;
    expect(detail.figures).toEqual(wire.last.figures);
    expect(detail.summary).toEqual(wire.last.summary);
    expect(detail.counters).toEqual(wire.last.counters);
    selection.dispose();
  });
});
