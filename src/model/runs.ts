/**
 * Reading a live session's view (`GET sessions/{id}`) for the live model; the
 * selection model reads a session's view in `selection.ts`.
 */

import { ServerConnection } from '@jupyterlab/services';

import { requestAPI, withQuery } from '../request';
import { IRunRecord, ISessionResponse } from '../types';

/** What {@link fetchLiveView} read: the newest runs and the server's view. */
export interface IRunsRead {
  response: ISessionResponse;
  /** The runs read (the newest), in store order. */
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
