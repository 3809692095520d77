/**
 * RunsModel (the facade) against canned server answers: list paging and filters,
 * selection and comparison, the live session, and what websocket events trigger.
 */

import { ConnectionState } from '../../events';
import { PAGE_SIZE, RunsModel } from '../../model';
import { NsightLabResponseError, requestAPI } from '../../request';
import { SERVER_EXTENSION_MISSING_MSG } from '../../tokens';
import { EMPTY_FILTERS } from '../../types';
import {
  compareResponse,
  run,
  session,
  sessionResponse,
  sessionsPage
} from '../fixtures';
import {
  FakeEvents,
  serve,
  settings,
  settle,
  sidebarSettings,
  status
} from './server';

jest.mock('../../request', () => ({
  ...jest.requireActual('../../request'),
  requestAPI: jest.fn(),
  requestDownload: jest.fn()
}));

jest.mock('../../events', () => ({
  ...jest.requireActual('../../events'),
  EventsConnection: jest.fn(() => new FakeEvents())
}));

const mockedRequest = requestAPI as jest.MockedFunction<typeof requestAPI>;

function makeModel(): { model: RunsModel; events: FakeEvents } {
  const model = new RunsModel({
    serverSettings: settings,
    settings: sidebarSettings
  });
  return { model, events: FakeEvents.last as FakeEvents };
}

beforeEach(() => {
  jest.spyOn(console, 'error').mockImplementation(() => undefined);
});

afterEach(() => {
  (requestAPI as jest.Mock).mockReset();
  jest.restoreAllMocks();
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

describe('RunsModel picks and panel sources', () => {
  it('picks in the history list without reading: a second one to compare', () => {
    const calls = serve({});
    const { model } = makeModel();
    let changes = 0;
    model.selectionChanged.connect(() => (changes += 1));

    expect(model.select(2)).toEqual([2]);
    expect(model.select(7, 'add')).toEqual([2, 7]);
    // A third one replaces the older of the two; re-adding one removes it.
    expect(model.select(9, 'add')).toEqual([7, 9]);
    expect(model.select(9, 'add')).toEqual([7]);
    expect(model.selectedIds).toEqual([7]);
    expect(changes).toBe(4);
    // Picking reads nothing: the panels read what they show.
    expect(calls).toEqual([]);
    model.clearSelection();
    expect(model.selectedIds).toEqual([]);
    model.dispose();
  });

  it('opens a source of one session with its figures, or of a comparison', async () => {
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

    const one = model.openSelection([2]);
    expect(one.state.loading).toBe(true);
    await settle();

    expect(one.state.ids).toEqual([2]);
    expect(one.state.detail?.session.id).toBe(2);
    expect(one.state.detail?.figures.duration?.data.length).toBe(1);
    expect(calls).toContain('GET sessions/2?tail=0&figures=1');

    const two = model.openSelection([2, 7]);
    await settle();

    expect(two.state.comparison?.rows[0].ratio).toBe(1.5);
    expect(calls).toContain('GET compare?a=2&b=7');
    // Each source is its own: the first still shows its session.
    expect(one.state.detail?.session.id).toBe(2);
    model.dispose();
    expect(one.isDisposed).toBe(true);
    expect(two.isDisposed).toBe(true);
  });

  it('reads an open source again on runs-changed of its session, not once disposed', async () => {
    let reads = 0;
    serve({
      'sessions/4': () => {
        reads += 1;
        return sessionResponse(session(4, { status: 'running' }), [
          run(reads, 4)
        ]);
      },
      sessions: () => sessionsPage(1, 0, PAGE_SIZE)
    });
    const { model, events } = makeModel();
    const source = model.openSelection([4]);
    await settle();
    expect(reads).toBe(1);

    events.emit({ type: 'runs-changed', session_id: 4, last_run_id: 2 });
    await settle();
    expect(reads).toBe(2);
    expect(source.state.detail?.session.id).toBe(4);

    events.emit({ type: 'runs-changed', session_id: 5, last_run_id: 9 });
    await settle();
    expect(reads).toBe(2); // another session's runs

    source.dispose();
    events.emit({ type: 'runs-changed', session_id: 4, last_run_id: 3 });
    await settle();
    expect(reads).toBe(2);
    model.dispose();
  });

  it('keeps the error of a failed read in words', async () => {
    serve({});
    const { model } = makeModel();

    const source = model.openSelection([3]);
    await settle();

    expect(source.state.error).toBe('no sessions/3');
    expect(source.state.loading).toBe(false);
    model.dispose();
  });

  it('deletes a session: the picks drop it and the panels are told', async () => {
    const calls = serve({
      'sessions/*': (_url, init) =>
        init?.method === 'DELETE'
          ? null
          : sessionResponse(session(4), [run(1, 4)]),
      sessions: () => sessionsPage(3, 0, PAGE_SIZE)
    });
    const { model } = makeModel();
    const deleted: number[] = [];
    model.sessionDeleted.connect((_, id) => deleted.push(id));
    model.select(4);
    model.select(2, 'add');

    await model.deleteSession(4);

    expect(calls).toContain('DELETE sessions/4');
    expect(model.selectedIds).toEqual([2]);
    expect(deleted).toEqual([4]);
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
    // The live view reads its view and the newest run only (the server's view model
    // costs the runs stored since the last refresh).
    expect(calls).toContain('GET sessions/8?after_id=1&tail=1&figures=1');

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
      defaultChart: 'duration',
      findingsShown: 3
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
