/**
 * fetchSessionRuns: a session's runs read in pages (tail from the start, after_id
 * pages while has_more), the newest kept, the figures once.
 */

import {
  MAX_RUN_PAGES,
  RUN_PAGE_SIZE,
  fetchSessionRuns,
  keepLast
} from '../../model/runs';
import { requestAPI } from '../../request';
import { run, session, sessionResponse } from '../fixtures';
import { serve, settings } from './server';

jest.mock('../../request', () => ({
  ...jest.requireActual('../../request'),
  requestAPI: jest.fn(),
  requestDownload: jest.fn()
}));

beforeEach(() => {
  jest.spyOn(console, 'error').mockImplementation(() => undefined);
});

afterEach(() => {
  (requestAPI as jest.Mock).mockReset();
  jest.restoreAllMocks();
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

describe('keepLast', () => {
  it('keeps the last items only', () => {
    expect(keepLast([1, 2, 3], 2)).toEqual([2, 3]);
    expect(keepLast([1], 2)).toEqual([1]);
  });
});
