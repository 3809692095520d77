/**
 * LiveModel: which session is live, runs appended as events arrive, and the poll
 * that reads a running session while the events socket is down.
 */

import {
  LIVE_POLL_MIN_MS,
  LiveModel,
  chooseLiveSession,
  notebookMatches
} from '../../model/live';
import { requestAPI } from '../../request';
import { ISessionResponse, ISidebarSettings } from '../../types';
import { run, session, sessionResponse } from '../fixtures';
import { serve, settings, settle, sidebarSettings } from './server';

jest.mock('../../request', () => ({
  ...jest.requireActual('../../request'),
  requestAPI: jest.fn(),
  requestDownload: jest.fn()
}));

function makeLive(
  current: () => ISidebarSettings = () => sidebarSettings
): LiveModel {
  return new LiveModel({ serverSettings: settings, settings: current });
}

beforeEach(() => {
  jest.spyOn(console, 'error').mockImplementation(() => undefined);
});

afterEach(() => {
  (requestAPI as jest.Mock).mockReset();
  jest.restoreAllMocks();
  jest.useRealTimers();
});

describe('notebookMatches and chooseLiveSession', () => {
  it('matches the kernel’s absolute path with the frontend’s relative one', () => {
    expect(notebookMatches('/home/u/work/a/nb.ipynb', 'a/nb.ipynb')).toBe(true);
    expect(notebookMatches('/home/u/work/a/nb.ipynb', 'nb.ipynb')).toBe(true);
    expect(notebookMatches('/home/u/work/a/xnb.ipynb', 'nb.ipynb')).toBe(false);
    expect(notebookMatches(null, 'nb.ipynb')).toBe(false);
  });

  it('prefers the current notebook, then a running session, then the one shown', () => {
    const newest = [
      session(5, { notebook: '/w/other.ipynb', status: 'completed' }),
      session(4, { notebook: '/w/run.ipynb', status: 'running' }),
      session(3, { notebook: '/w/mine.ipynb', status: 'completed' })
    ];
    expect(chooseLiveSession(newest, 'mine.ipynb', null)?.id).toBe(3);
    expect(chooseLiveSession(newest, 'none.ipynb', null)?.id).toBe(4);
    const idle = newest.map(s => ({ ...s, status: 'completed' as const }));
    expect(chooseLiveSession(idle, null, 5)?.id).toBe(5);
    expect(chooseLiveSession(idle, null, null)).toBeNull();
  });
});

describe('LiveModel', () => {
  it('follows the notebook in front and appends the runs an event announces', async () => {
    let stored = [run(1, 8)];
    const live8 = session(8, { status: 'running', notebook: '/w/live.ipynb' });
    serve({
      sessions: () => ({
        schema_version: 1,
        total: 2,
        sessions: [session(9), live8]
      }),
      'sessions/8': url => {
        const after = Number(url.searchParams.get('after_id'));
        return sessionResponse(
          { ...live8, run_count: stored.length },
          stored.filter(r => r.id > after)
        );
      }
    });
    const live = makeLive();
    live.socketOpen = true;

    live.setCurrentNotebook('live.ipynb');
    await settle();
    expect(live.state.session?.id).toBe(8);
    expect(live.state.runs.map(r => r.id)).toEqual([1]);

    stored = [1, 2, 3].map(id => run(id, 8));
    expect(live.runsChanged(9, 3, 1)).toBe(false);
    expect(live.runsChanged(8, 3, 42)).toBe(true);
    await settle();

    expect(live.state.runs.map(r => r.id)).toEqual([1, 2, 3]);
    expect(live.state.eventAt).toBe(42);
    expect(live.polling).toBe(false);

    live.forget(8);
    expect(live.state.session).toBeNull();
    live.dispose();
  });

  it('keeps at most maxPoints runs when the setting shrinks', async () => {
    const live8 = session(8, { status: 'running', run_count: 5 });
    serve({
      sessions: () => ({ schema_version: 1, total: 1, sessions: [live8] }),
      'sessions/8': () =>
        sessionResponse(
          live8,
          [1, 2, 3, 4, 5].map(id => run(id, 8))
        )
    });
    let current = sidebarSettings;
    const live = makeLive(() => current);
    live.socketOpen = true;
    await live.find();
    await settle();
    expect(live.state.runs.length).toBe(5);

    current = { ...sidebarSettings, maxPoints: 2 };
    live.applySettings();

    expect(live.state.runs.map(r => r.id)).toEqual([4, 5]);
    live.dispose();
  });

  it('polls a running session while the socket is down, and stops once it is open', async () => {
    jest.useFakeTimers();
    const live8 = session(8, { status: 'running', run_count: 1 });
    let reads = 0;
    serve({
      sessions: () => ({ schema_version: 1, total: 1, sessions: [live8] }),
      'sessions/8': () => {
        reads += 1;
        return sessionResponse(live8, []);
      }
    });
    const live = makeLive();
    live.socketOpen = false;
    await live.find();
    await jest.advanceTimersByTimeAsync(10);
    expect(live.polling).toBe(true);
    const before = reads;

    await jest.advanceTimersByTimeAsync(LIVE_POLL_MIN_MS * 3 + 10);
    expect(reads - before).toBe(3);

    live.socketOpen = true;
    expect(live.polling).toBe(false);
    await jest.advanceTimersByTimeAsync(LIVE_POLL_MIN_MS * 3);
    expect(reads - before).toBe(3);
    live.dispose();
  });
});

/** The directory of this spec (jest's CommonJS wrapper defines it). */
declare const __dirname: string;

interface IStreamed {
  first: ISessionResponse;
  answers: ISessionResponse[];
  last: ISessionResponse;
}

/** A streamed session's first view, each refresh's delta and its fresh view. */
function streamed(): IStreamed {
  const fs = jest.requireActual<{
    readFileSync(path: string, encoding: 'utf-8'): string;
  }>('fs');
  const text = fs.readFileSync(
    `${__dirname}/../../../tests/fixtures/wire.json`,
    'utf-8'
  );
  return (JSON.parse(text) as { live_deltas: IStreamed }).live_deltas;
}

describe('LiveModel reads deltas', () => {
  it('asks for what changed since the view it holds and applies it', async () => {
    const wire = streamed();
    const live8 = { ...wire.first.session, id: 8, status: 'running' as const };
    const asked: (string | null)[] = [];
    let step = 0;
    serve({
      sessions: () => ({ schema_version: 1, total: 1, sessions: [live8] }),
      'sessions/8': url => {
        asked.push(url.searchParams.get('since'));
        const answer = step === 0 ? wire.first : wire.answers[step - 1];
        step = Math.min(step + 1, wire.answers.length);
        return { ...answer, session: live8 };
      }
    });
    const live = makeLive();
    live.socketOpen = true;
    await live.find();
    await settle();
    expect(live.state.viewVersion).toBe(wire.first.view_version);
    expect(live.state.changes).toBeNull();

    for (let i = 0; i < wire.answers.length; i++) {
      const before = live.state.figures;
      live.runsChanged(8, 100 + i, 1);
      await settle();
      expect(live.state.changes?.from).toBe(before);
    }

    // Each refresh asked since the version the one before answered.
    expect(asked).toEqual([
      null,
      wire.first.view_version,
      ...wire.answers.slice(0, -1).map(a => a.view_version)
    ]);
    expect(live.state.figures).toEqual(wire.last.figures);
    expect(live.state.chartOrder).toEqual(wire.last.chart_order);
    live.dispose();
  });

  it('reads the whole view again after a delta that does not fit', async () => {
    const wire = streamed();
    const live8 = { ...wire.first.session, id: 8, status: 'running' as const };
    const asked: (string | null)[] = [];
    const answers = [
      wire.first,
      // A delta that extends a chart the view lacks: from some other view.
      {
        ...wire.answers[0],
        delta: {
          charts: {
            ranks: { extend: [{ indices: [0], data: { x: [[1]] } }] }
          }
        }
      },
      wire.last
    ];
    serve({
      sessions: () => ({ schema_version: 1, total: 1, sessions: [live8] }),
      'sessions/8': url => {
        asked.push(url.searchParams.get('since'));
        return { ...(answers.shift() ?? wire.last), session: live8 };
      }
    });
    const live = makeLive();
    live.socketOpen = true;
    await live.find();
    await settle();
    live.runsChanged(8, 100, 1);
    await settle();

    expect(asked).toEqual([null, wire.first.view_version, null]);
    expect(live.state.figures).toEqual(wire.last.figures);
    expect(live.state.viewVersion).toBe(wire.last.view_version);
    live.dispose();
  });
});
