/**
 * A session's view as served (`GET sessions/{id}?figures=1`) and the deltas that
 * bring it up to date (issue 32: `since=<view_version>` answers what changed).
 *
 * `applyViewDelta` is `nsight_lab/viewmodel/delta.py`'s `apply_delta`: applied to
 * the view of `since`, a delta gives the view of its `view_version`, equal to a
 * fresh full view. Figures it does not change keep their identity (the charts
 * drawing them skip them); those it changes are new objects.
 */

import { appendedCopy, IChartAppend, IFigure } from '../charts/append';
import { ISessionFigures, ISessionResponse, IViewDelta } from '../types';

/** The keys of a session response that are its page of runs, not its view. */
const PAGE_KEYS = [
  'schema_version',
  'session',
  'runs',
  'last_run_id',
  'next_after_id',
  'has_more',
  'view_version',
  'delta'
] as const;

/**
 * The view's parts, as `ISessionResponse` carries them with `figures=1`, and any
 * key the server adds to the view (a delta sends it whole when it changes).
 */
export type IServedView = Omit<
  ISessionResponse,
  (typeof PAGE_KEYS)[number] | 'figures'
> & { figures: ISessionFigures };

/** A delta that does not fit the view it is applied to (a missed refresh). */
export class ViewDeltaError extends Error {}

/** The view parts of a full response (every key but its page's). */
export function servedView(response: ISessionResponse): IServedView {
  const out: Record<string, unknown> = { ...response };
  for (const key of PAGE_KEYS) {
    delete out[key];
  }
  return { ...out, figures: response.figures ?? {} } as IServedView;
}

/**
 * The view `delta` leads to from `view` (a new object; `view` is unchanged).
 *
 * @throws {ViewDeltaError} When the delta extends a chart the view lacks: it was
 * not made from this view; read the full view again.
 */
export function applyViewDelta(
  view: IServedView,
  delta: IViewDelta
): IServedView {
  const figures: Record<string, IFigure | null | undefined> = {
    ...(view.figures as Record<string, IFigure | null | undefined>)
  };
  for (const [name, change] of Object.entries(delta.charts ?? {})) {
    if (change === null) {
      delete figures[name];
      continue;
    }
    const before = figures[name];
    if (!change.figure && !before) {
      throw new ViewDeltaError(
        `a delta extends chart ${name}, not in the view`
      );
    }
    figures[name] = appendedCopy(
      before ?? { data: [] },
      change as IChartAppend
    );
  }
  let summary = view.summary;
  if (delta.summary) {
    const { length, rows } = delta.summary;
    const next = (view.summary ?? []).slice(0, length);
    while (next.length < length) {
      next.push({});
    }
    for (const [index, row] of Object.entries(rows)) {
      next[Number(index)] = row;
    }
    summary = next;
  }
  return {
    ...view,
    figures: figures as ISessionFigures,
    summary,
    ...(delta.tables ?? {})
  };
}

/**
 * The view after `response`: its delta applied to `previous`, or its full view.
 *
 * @throws {ViewDeltaError} When its delta does not fit `previous`.
 */
export function nextView(
  previous: IServedView | null,
  response: ISessionResponse
): IServedView {
  if (response.delta) {
    if (!previous) {
      throw new ViewDeltaError('a delta came for no view');
    }
    return applyViewDelta(previous, response.delta);
  }
  return servedView(response);
}
