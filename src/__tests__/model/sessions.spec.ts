/**
 * SessionListModel: the query of a page, pages read once per generation, filters
 * starting the list again, errors in words, reloads folded by the gate.
 */

import {
  PAGE_SIZE,
  SessionListModel,
  sessionsQuery
} from '../../model/sessions';
import { requestAPI } from '../../request';
import { EMPTY_FILTERS } from '../../types';
import { sessionsPage } from '../fixtures';
import { serve, settings, settle, sidebarSettings } from './server';

jest.mock('../../request', () => ({
  ...jest.requireActual('../../request'),
  requestAPI: jest.fn(),
  requestDownload: jest.fn()
}));

function makeList(refreshInterval = 1): SessionListModel {
  return new SessionListModel({
    serverSettings: settings,
    settings: () => ({ ...sidebarSettings, refreshInterval })
  });
}

beforeEach(() => {
  jest.spyOn(console, 'error').mockImplementation(() => undefined);
});

afterEach(() => {
  (requestAPI as jest.Mock).mockReset();
  jest.restoreAllMocks();
});

describe('sessionsQuery', () => {
  it('sends the filters that are set, the page size and the offset', () => {
    expect(sessionsQuery(EMPTY_FILTERS, 2, 10)).toBe(
      'sessions?limit=10&offset=20'
    );
    expect(
      sessionsQuery(
        { ...EMPTY_FILTERS, status: 'failed', since: '2026-01-01' },
        0
      )
    ).toBe(
      `sessions?status=failed&since=2026-01-01&limit=${PAGE_SIZE}&offset=0`
    );
  });
});

describe('SessionListModel', () => {
  it('reads the first page, then only the pages asked for, once each', async () => {
    const calls = serve({
      sessions: url =>
        sessionsPage(
          120,
          Number(url.searchParams.get('offset') ?? 0),
          Number(url.searchParams.get('limit'))
        )
    });
    const list = makeList();
    let changes = 0;
    list.changed.connect(() => (changes += 1));

    await list.reload();
    list.ensureRange(60, 70);
    list.ensureRange(60, 70);
    await settle();

    expect(list.total).toBe(120);
    expect(list.sessionAt(0)?.id).toBe(120);
    expect(list.sessionAt(60)?.id).toBe(60);
    expect(list.sessionAt(100)).toBeUndefined();
    expect(calls).toEqual([
      `GET sessions?limit=${PAGE_SIZE}&offset=0`,
      `GET sessions?limit=${PAGE_SIZE}&offset=${PAGE_SIZE}`
    ]);
    expect(changes).toBeGreaterThanOrEqual(2);
    expect(list.loading).toBe(false);
    list.dispose();
  });

  it('keeps the error of a failed read in words', async () => {
    serve({});
    const list = makeList();

    await list.reload();

    expect(list.error).toBe('no sessions');
    expect(list.total).toBeNull();
    list.dispose();
  });

  it('folds reloads asked for within the interval into one more read', async () => {
    const calls = serve({ sessions: () => sessionsPage(1, 0, PAGE_SIZE) });
    const list = makeList(50);

    for (let i = 0; i < 10; i++) {
      list.requestReload();
    }
    await settle(30);

    expect(calls.length).toBe(2);
    list.dispose();
  });
});
