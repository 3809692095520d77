/**
 * Reading a session's runs in pages (`GET sessions/{id}`), shared by the live model
 * and the selection model.
 */

import { ServerConnection } from '@jupyterlab/services';

import { requestAPI, withQuery } from '../request';
import { IRunRecord, ISessionResponse } from '../types';

/** Runs asked for per page of `GET sessions/{id}` (the server allows 20,000). */
export const RUN_PAGE_SIZE = 5000;

/** Pages read in one refresh at most; the rest comes with the next refresh. */
export const MAX_RUN_PAGES = 20;

/** What {@link fetchSessionRuns} read: the newest runs and the server's figures. */
export interface IRunsRead {
  response: ISessionResponse;
  /** The runs read (at most `keep`, the newest), in store order. */
  runs: IRunRecord[];
  /** The largest run id read: where the next refresh starts. */
  lastRunId: number;
}

/** Keep the last `max` items. */
export function keepLast<T>(items: T[], max: number): T[] {
  return items.length > max ? items.slice(items.length - max) : items;
}

/** The largest run id of `runs`, or `fallback` when there is none larger. */
export function lastId(runs: IRunRecord[], fallback: number): number {
  return runs.reduce((max, r) => Math.max(max, r.id), fallback);
}

/**
 * Read the runs of a session stored after `afterId`, page by page, keeping only the
 * newest `keep`; the figures (built on the server from every run) come with the
 * last page when `figures` is set; with `since` (the `view_version` held) they
 * may come as a `delta` from that view (`nextView` applies it).
 *
 * From the start of a session (`afterId` 0), only its last `keep` runs are asked
 * for (`tail`): a 200,000-run session is not sent whole to show 2,000 of them.
 * After that, pages of {@link RUN_PAGE_SIZE} are read while the server says
 * `has_more` (at most {@link MAX_RUN_PAGES} per call).
 *
 * @throws {NsightLabResponseError} When the server refuses.
 */
export async function fetchSessionRuns(
  serverSettings: ServerConnection.ISettings,
  sessionId: number,
  afterId: number,
  keep: number,
  figures: boolean,
  since: string | null = null
): Promise<IRunsRead> {
  const path = `sessions/${sessionId}`;
  const held = since ?? undefined;
  if (afterId <= 0) {
    const response = await requestAPI<ISessionResponse>(
      withQuery(path, {
        after_id: 0,
        tail: Math.max(keep, 0),
        figures: figures ? 1 : undefined
      }),
      serverSettings
    );
    return {
      response,
      runs: keepLast(response.runs, keep),
      lastRunId: lastId(response.runs, 0)
    };
  }
  let runs: IRunRecord[] = [];
  let after = afterId;
  let figuresStale = false;
  for (let page = 0; ; page++) {
    const response = await requestAPI<ISessionResponse>(
      withQuery(path, {
        after_id: after,
        limit: RUN_PAGE_SIZE,
        figures: figures && page === 0 ? 1 : undefined,
        since: figures && page === 0 ? held : undefined
      }),
      serverSettings
    );
    runs = keepLast([...runs, ...response.runs], keep);
    after = Math.max(
      after,
      response.next_after_id ?? lastId(response.runs, after)
    );
    const done =
      !response.has_more ||
      page + 1 >= MAX_RUN_PAGES ||
      response.runs.length === 0;
    if (!done) {
      // The figures came with the first page: build them again once at the end.
      figuresStale = figures;
      continue;
    }
    if (!figuresStale) {
      return { response, runs, lastRunId: after };
    }
    const withFigures = await requestAPI<ISessionResponse>(
      withQuery(path, { after_id: after, limit: 0, figures: 1, since: held }),
      serverSettings
    );
    return { response: withFigures, runs, lastRunId: after };
  }
}

/**
 * Read a live session's view: its figures, summary and progress (built on the
 * server by the session's view model, from every run) and its newest run only
 * (`tail=1` after `afterId`: the live view shows the newest run's line, not a
 * table of runs), so a refresh costs the server the runs stored since the last.
 * With `since` (the `view_version` held), the answer may be a `delta` instead of
 * the view: what changed since (issue 32; `nextView` applies it).
 *
 * @throws {NsightLabResponseError} When the server refuses.
 */
export async function fetchLiveView(
  serverSettings: ServerConnection.ISettings,
  sessionId: number,
  afterId: number,
  since: string | null = null
): Promise<IRunsRead> {
  const response = await requestAPI<ISessionResponse>(
    withQuery(`sessions/${sessionId}`, {
      after_id: Math.max(afterId, 0),
      tail: 1,
      figures: 1,
      since: since ?? undefined
    }),
    serverSettings
  );
  return {
    response,
    runs: response.runs,
    lastRunId: Math.max(
      afterId,
      response.last_run_id ?? lastId(response.runs, afterId)
    )
  };
}
