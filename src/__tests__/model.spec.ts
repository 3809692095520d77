/**
 * RunsModel state logic against canned server answers: list paging and filters,
 * selection and comparison, the live session, and what websocket events trigger.
 */

import { ServerConnection } from '@jupyterlab/services';
import { Signal } from '@lumino/signaling';

import { ConnectionState, IEventNotice } from '../events';
import {
  PAGE_SIZE,
  MAX_RUN_PAGES,
  RUN_PAGE_SIZE,
  RunsModel,
  chooseLiveSession,
  fetchSessionRuns,
  notebookMatches
} from '../model';
import { tableNote } from '../components/SessionView';
import { NsightLabResponseError, requestAPI } from '../request';
import { SERVER_EXTENSION_MISSING_MSG } from '../tokens';
import { EMPTY_FILTERS, EventMessage } from '../types';
import {
  compareResponse,
  run,
  session,
  sessionResponse,
  sessionsPage
} from './fixtures';

jest.mock('../request', () => ({
  ...jest.requireActual('../request'),
  requestAPI: jest.fn(),
  requestDownload: jest.fn()
}));

class FakeEvents {
  static last: FakeEvents | null = null;
  constructor() {
    FakeEvents.last = this;
  }
  messageReceived = new Signal<this, IEventNotice>(this);
  stateChanged = new Signal<this, ConnectionState>(this);
  state: ConnectionState = 'connecting';
  connect = jest.fn();
  dispose = jest.fn();
  emit(message: EventMessage): void {
    this.messageReceived.emit({ message, receivedAt: performance.now() });
  }
  setState(state: ConnectionState): void {
    this.state = state;
    this.stateChanged.emit(state);
  }
}

jest.mock('../events', () => ({
  ...jest.requireActual('../events'),
  EventsConnection: jest.fn(() => new FakeEvents())
}));

const mockedRequest = requestAPI as jest.MockedFunction<typeof requestAPI>;

type Route = (url: URL, init?: RequestInit) => unknown;

/** Answer requests from a table of handlers keyed by path. */
function serve(routes: Record<string, Route>): string[] {
  const calls: string[] = [];
  mockedRequest.mockImplementation((endPoint: string, _s, init) => {
    calls.push(`${init?.method ?? 'GET'} ${endPoint}`);
    const url = new URL(endPoint, 'http://x/');
    const path = url.pathname.slice(1);
    const key = Object.keys(routes).find(
      k => k === path || (k.endsWith('*') && path.startsWith(k.slice(0, -1)))
    );
    if (!key) {
      return Promise.reject(
        new NsightLabResponseError(404, `no ${path}`, 'NotFoundError')
      );
    }
    try {
      return Promise.resolve(routes[key](url, init)) as Promise<never>;
    } catch (error) {
      return Promise.reject(error);
    }
  });
  return calls;
}

const settings = ServerConnection.makeSettings({ baseUrl: 'http://x/' });

function makeModel(): { model: RunsModel; events: FakeEvents } {
  const model = new RunsModel({
    serverSettings: settings,
    settings: { refreshInterval: 1, maxPoints: 5, defaultChart: 'duration' }
  });
  return { model, events: FakeEvents.last as FakeEvents };
}

/** Let pending promises and short timers run. */
async function settle(ms = 10): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await new Promise(resolve => setTimeout(resolve, ms));
  }
}

const status = {
  version: '0.1.0',
  store_path: '/tmp/store.sqlite',
  store_exists: true,
  schema_version: 1
};

beforeEach(() => {
  jest.spyOn(console, 'error').mockImplementation(() => undefined);
});

afterEach(() => {
  mockedRequest.mockReset();
  jest.restoreAllMocks();
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

describe('RunsModel list', () => {
  it('reads the first page on start, then the pages a scroll asks for', async () => {
    const calls = serve({
      status: () => status,
      sessions: url =>
        sessionsPage(
          10000,
          Number(url.searchParams.get('offset') ?? 0),
          Number(url.searchParams.get('limit'))
        )
    });
    const { model, events } = makeModel();
    let changes = 0;
    model.sessionsChanged.connect(() => (changes += 1));

    await model.start();

    expect(events.connect).toHaveBeenCalled();
    expect(model.total).toBe(10000);
    expect(model.status?.store_path).toBe('/tmp/store.sqlite');
    expect(model.sessionAt(0)?.id).toBe(10000);
    expect(model.sessionAt(PAGE_SIZE)).toBeUndefined();
    expect(changes).toBeGreaterThan(0);

    model.ensureRange(5000, 5020);
    await settle();

    expect(model.sessionAt(5000)?.id).toBe(5000);
    expect(model.sessionAt(5019)?.id).toBe(4981);
    expect(calls).toContain(`GET sessions?limit=${PAGE_SIZE}&offset=5000`);
    // A page read once is not read again.
    const before = calls.length;
    model.ensureRange(5000, 5020);
    await settle();
    expect(calls.length).toBe(before);
    model.dispose();
  });

  it('sends the filters that are set and starts again from the first page', async () => {
    const calls = serve({
      sessions: () => ({ schema_version: 1, total: 0, sessions: [] })
    });
    const { model } = makeModel();

    model.setFilters({
      ...EMPTY_FILTERS,
      text: 'a b',
      backend: 'cpu',
      annotation: '<x>'
    });
    await settle();

    expect(calls).toContain(
      `GET sessions?text=a%20b&annotation=%3Cx%3E&backend=cpu&limit=${PAGE_SIZE}&offset=0`
    );
    expect(model.total).toBe(0);
    model.dispose();
  });

  it('says in words when the server extension is not enabled', async () => {
    mockedRequest.mockRejectedValue(
      new NsightLabResponseError(404, SERVER_EXTENSION_MISSING_MSG, null)
    );
    const { model } = makeModel();

    await model.start();

    expect(model.listError).toBe(SERVER_EXTENSION_MISSING_MSG);
    expect(model.statusError).toBe(SERVER_EXTENSION_MISSING_MSG);
    expect(model.total).toBeNull();
    model.dispose();
  });
});

describe('RunsModel selection', () => {
  it('reads one selected session with its figures; a second selection compares', async () => {
    const calls = serve({
      'sessions/*': url =>
        sessionResponse(session(Number(url.pathname.split('/')[2])), [
          run(1, 2),
          run(2, 2)
        ]),
      compare: url =>
        compareResponse(
          Number(url.searchParams.get('a')),
          Number(url.searchParams.get('b'))
        )
    });
    const { model } = makeModel();

    await model.select(2);

    expect(model.selection.ids).toEqual([2]);
    expect(model.selection.detail?.session.id).toBe(2);
    expect(model.selection.detail?.runs.length).toBe(2);
    expect(model.selection.detail?.figures.duration?.data.length).toBe(1);
    expect(calls).toContain('GET sessions/2?after_id=0&tail=5&figures=1');

    await model.select(7, 'add');

    expect(model.selection.ids).toEqual([2, 7]);
    expect(model.selection.comparison?.rows[0].ratio).toBe(1.5);
    expect(calls).toContain('GET compare?a=2&b=7');

    // A third one replaces the older of the two; re-adding one removes it.
    await model.select(9, 'add');
    expect(model.selection.ids).toEqual([7, 9]);
    await model.select(9, 'add');
    expect(model.selection.ids).toEqual([7]);
    model.dispose();
  });

  it('keeps the error of a failed read in words', async () => {
    serve({});
    const { model } = makeModel();

    await model.select(3);

    expect(model.selection.error).toBe('no sessions/3');
    expect(model.selection.loading).toBe(false);
    model.dispose();
  });

  it('deletes a selected session and clears the selection', async () => {
    const calls = serve({
      'sessions/*': (_url, init) =>
        init?.method === 'DELETE'
          ? null
          : sessionResponse(session(4), [run(1, 4)]),
      sessions: () => sessionsPage(3, 0, PAGE_SIZE)
    });
    const { model } = makeModel();
    await model.select(4);

    await model.deleteSession(4);

    expect(calls).toContain('DELETE sessions/4');
    expect(model.selection.ids).toEqual([]);
    model.dispose();
  });
});

describe('RunsModel live', () => {
  it('follows the current notebook and appends runs on runs-changed', async () => {
    let stored = [run(1, 8)];
    const live = session(8, {
      status: 'running',
      notebook: '/home/u/live.ipynb',
      run_count: 1
    });
    const calls = serve({
      status: () => status,
      sessions: () => ({
        schema_version: 1,
        total: 2,
        sessions: [session(9), live]
      }),
      'sessions/8': url => {
        const after = Number(url.searchParams.get('after_id'));
        return sessionResponse(
          { ...live, run_count: stored.length },
          stored.filter(r => r.id > after)
        );
      }
    });
    const { model, events } = makeModel();
    model.setCurrentNotebook('live.ipynb');
    await model.start();
    await settle();

    expect(model.live.session?.id).toBe(8);
    expect(model.live.runs.map(r => r.id)).toEqual([1]);
    expect(model.live.figures.duration).toBeTruthy();

    stored = [1, 2, 3].map(id => run(id, 8));
    let updates = 0;
    model.liveChanged.connect(() => (updates += 1));
    events.emit({ type: 'runs-changed', session_id: 8, last_run_id: 3 });
    await settle();

    expect(model.live.runs.map(r => r.id)).toEqual([1, 2, 3]);
    expect(model.live.lastRunId).toBe(3);
    expect(model.live.eventAt).not.toBeNull();
    expect(updates).toBeGreaterThan(0);
    expect(calls).toContain('GET sessions/8?after_id=1&limit=5000&figures=1');

    // At most maxPoints (5) runs are kept.
    stored = [1, 2, 3, 4, 5, 6, 7].map(id => run(id, 8));
    events.emit({ type: 'runs-changed', session_id: 8, last_run_id: 7 });
    await settle();
    expect(model.live.runs.map(r => r.id)).toEqual([3, 4, 5, 6, 7]);
    model.dispose();
  });

  it('folds a burst of runs-changed into few requests', async () => {
    const live = session(8, { status: 'running', run_count: 1 });
    let reads = 0;
    serve({
      sessions: () => ({ schema_version: 1, total: 1, sessions: [live] }),
      'sessions/8': () => {
        reads += 1;
        return sessionResponse(live, []);
      },
      status: () => status
    });
    const { model, events } = makeModel();
    model.settings = {
      refreshInterval: 50,
      maxPoints: 10,
      defaultChart: 'duration'
    };
    await model.start();
    await settle();
    const before = reads;

    for (let i = 2; i < 22; i++) {
      events.emit({ type: 'runs-changed', session_id: 8, last_run_id: i });
    }
    await settle(30);

    expect(reads - before).toBeGreaterThanOrEqual(1);
    expect(reads - before).toBeLessThanOrEqual(3);
    model.dispose();
  });

  it('does not read everything twice when the websocket first opens', async () => {
    const calls = serve({
      status: () => status,
      sessions: () => sessionsPage(2, 0, PAGE_SIZE)
    });
    const { model, events } = makeModel();
    await model.start();
    const before = calls.length;

    events.setState('connecting');
    events.setState('open');
    await settle();

    expect(calls.length).toBe(before);
    model.dispose();
  });

  it('tells the connection state and reads everything again on reconnect', async () => {
    const calls = serve({
      status: () => status,
      sessions: () => sessionsPage(2, 0, PAGE_SIZE)
    });
    const { model, events } = makeModel();
    const states: ConnectionState[] = [];
    model.connectionChanged.connect((_, s) => states.push(s));
    await model.start();
    const before = calls.length;

    events.setState('reconnecting');
    expect(model.connection).toBe('reconnecting');
    events.setState('open');
    await settle();

    expect(states).toEqual(['reconnecting', 'open']);
    expect(calls.length).toBeGreaterThan(before);
    model.dispose();
  });
});

describe('fetchSessionRuns', () => {
  /** A session of `total` runs served `perPage` at a time, whatever `limit` says. */
  function paged(total: number, perPage: number): string[] {
    const all = Array.from({ length: total }, (_, i) => run(i + 1, 4));
    return serve({
      'sessions/4': url => {
        const after = Number(url.searchParams.get('after_id'));
        const tail = url.searchParams.get('tail');
        const newer = all.filter(r => r.id > after);
        const runs =
          tail !== null
            ? newer.slice(Math.max(newer.length - Number(tail), 0))
            : newer.slice(
                0,
                Math.min(perPage, Number(url.searchParams.get('limit')))
              );
        return sessionResponse(session(4, { run_count: total }), runs, {
          after,
          hasMore: tail === null && newer.length > runs.length
        });
      }
    });
  }

  it('reads only the newest runs of a session from its start (tail)', async () => {
    const calls = paged(200_000, RUN_PAGE_SIZE);

    const read = await fetchSessionRuns(settings, 4, 0, 5, true);

    expect(calls).toEqual(['GET sessions/4?after_id=0&tail=5&figures=1']);
    expect(read.runs.map(r => r.id)).toEqual([
      199_996, 199_997, 199_998, 199_999, 200_000
    ]);
    expect(read.lastRunId).toBe(200_000);
    expect(read.response.figures?.duration).toBeTruthy();
  });

  it('pages with after_id until has_more is false, each run once', async () => {
    const calls = paged(23, 5);

    const read = await fetchSessionRuns(settings, 4, 2, 100, true);

    // Pages of 5 after run 2: 3-7, 8-12, 13-17, 18-22, 23; then the figures.
    expect(calls).toEqual([
      `GET sessions/4?after_id=2&limit=${RUN_PAGE_SIZE}&figures=1`,
      `GET sessions/4?after_id=7&limit=${RUN_PAGE_SIZE}`,
      `GET sessions/4?after_id=12&limit=${RUN_PAGE_SIZE}`,
      `GET sessions/4?after_id=17&limit=${RUN_PAGE_SIZE}`,
      `GET sessions/4?after_id=22&limit=${RUN_PAGE_SIZE}`,
      'GET sessions/4?after_id=23&limit=0&figures=1'
    ]);
    const ids = read.runs.map(r => r.id);
    expect(ids).toEqual(Array.from({ length: 21 }, (_, i) => i + 3));
    expect(read.lastRunId).toBe(23);
    expect(read.response.figures).toBeTruthy();
  });

  it('keeps the newest runs only and asks once when one page holds all', async () => {
    const calls = paged(9, 50);

    const read = await fetchSessionRuns(settings, 4, 1, 3, false);

    expect(calls).toEqual([`GET sessions/4?after_id=1&limit=${RUN_PAGE_SIZE}`]);
    expect(read.runs.map(r => r.id)).toEqual([7, 8, 9]);
    expect(read.lastRunId).toBe(9);
  });

  it('stops after MAX_RUN_PAGES pages; the next refresh goes on', async () => {
    const calls = paged(10 * MAX_RUN_PAGES, 1);

    const read = await fetchSessionRuns(settings, 4, 1, 5, false);

    expect(calls.length).toBe(MAX_RUN_PAGES);
    expect(read.lastRunId).toBe(1 + MAX_RUN_PAGES);
  });
});

describe('tableNote', () => {
  it('says when the table holds only the newest runs', () => {
    expect(tableNote(2000, 2000)).toBeNull();
    expect(tableNote(3, 2)).toBeNull();
    expect(tableNote(2000, 200_000)).toBe(
      'The table lists the newest 2000 of 200000 runs; the charts use every run.'
    );
  });
});
