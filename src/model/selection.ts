/**
 * A selection of sessions read from the server: none, one session read in full, or
 * two sessions compared (`GET compare`, computed on the server). Each main-area
 * panel reads its own (`RunsModel.openSelection`); `nextSelection` is also the rule
 * of the history list's picks. A session that changes is read again as what
 * changed in its view since the one held (`since`). Its runs are not read: the
 * panel shows the view the server builds from every run.
 */

import { ISignal, Signal } from '@lumino/signaling';

import { RefreshGate } from '../refresh';
import { describeError, requestAPI, withQuery } from '../request';
import { ISelectionSource, ISelectionState } from '../tokens';
import { ICompareResponse, ISessionResponse } from '../types';
import { IModelContext } from './context';
import { IServedView, nextView, ViewDeltaError } from './view';

/** Nothing selected. */
export const EMPTY_SELECTION: ISelectionState = {
  ids: [],
  detail: null,
  comparison: null,
  loading: false,
  error: null
};

/**
 * The ids selected after clicking `id`: `single` selects it alone; `add` adds it
 * as the second one (the comparison, dropping the older of two), or removes it
 * when already selected.
 */
export function nextSelection(
  current: number[],
  id: number,
  mode: 'single' | 'add'
): number[] {
  if (mode === 'add' && current.includes(id)) {
    return current.filter(x => x !== id);
  }
  if (mode === 'add' && current.length > 0) {
    return [current[current.length - 1], id];
  }
  return [id];
}

function sameIds(a: number[], b: number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * The selected session(s), read again (what changed in the view) while they change.
 */
export class SelectionModel implements ISelectionSource {
  constructor(context: IModelContext) {
    this._context = context;
    this._gate = new RefreshGate(
      () => this._fetch(true),
      context.settings().refreshInterval
    );
  }

  /** Emitted when the selection or what was read of it changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }
  get isDisposed(): boolean {
    return this._isDisposed;
  }
  get state(): ISelectionState {
    return this._state;
  }

  /** Least time between two re-reads asked for by {@link requestRefresh}. */
  set intervalMs(value: number) {
    this._gate.intervalMs = value;
  }

  /** Whether session `id` is selected. */
  includes(id: number): boolean {
    return this._state.ids.includes(id);
  }

  /** Select a session (see {@link nextSelection}) and read it. */
  async select(id: number, mode: 'single' | 'add' = 'single'): Promise<void> {
    await this.show(nextSelection(this._state.ids, id, mode));
  }

  /** Read session `ids[0]`, or the comparison of `ids[0]` with `ids[1]`. */
  async show(ids: readonly number[]): Promise<void> {
    this._state = {
      ...EMPTY_SELECTION,
      ids: [...ids],
      loading: ids.length > 0
    };
    this._changed.emit();
    await this._fetch(false);
  }

  clear(): void {
    this._state = EMPTY_SELECTION;
    this._changed.emit();
  }

  /** Session `id` is gone: keep the other one selected, or clear. */
  async forget(id: number): Promise<void> {
    if (!this.includes(id)) {
      return;
    }
    const ids = this._state.ids.filter(x => x !== id);
    if (ids.length > 0) {
      await this.select(ids[0]);
    } else {
      this.clear();
    }
  }

  /** Read the selection again, folded and at most one per interval. */
  requestRefresh(): void {
    this._gate.request();
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._gate.dispose();
    Signal.clearData(this);
  }

  private async _fetch(incremental: boolean): Promise<void> {
    const ids = this._state.ids;
    if (ids.length === 0) {
      return;
    }
    const { serverSettings } = this._context;
    try {
      if (ids.length === 1) {
        const id = ids[0];
        const previous = this._state.detail;
        const since =
          incremental && previous?.session.id === id && this._view
            ? (previous.viewVersion ?? null)
            : null;
        // The view only (`tail=0`: no runs), or what changed in it since.
        const read = await requestAPI<ISessionResponse>(
          withQuery(`sessions/${id}`, {
            tail: 0,
            figures: 1,
            since: since ?? undefined
          }),
          serverSettings
        );
        if (!sameIds(this._state.ids, ids)) {
          return;
        }
        const from = since ? (this._view?.figures ?? null) : null;
        const view = this._nextView(since ? this._view : null, read);
        if (view === null) {
          return;
        }
        // The answer, with the view it brought (whole, or its delta applied).
        const response = { ...read, ...view };
        this._state = {
          ...this._state,
          loading: false,
          error: null,
          detail: {
            session: response.session,
            figures: response.figures ?? previous?.figures ?? {},
            chartOrder: response.chart_order ?? previous?.chartOrder ?? null,
            summary: response.summary ?? previous?.summary ?? [],
            counters: response.counters ?? previous?.counters ?? null,
            checks: response.checks ?? previous?.checks ?? [],
            findings: response.findings ?? previous?.findings ?? [],
            kernels: response.kernels ?? previous?.kernels ?? [],
            verdicts: response.verdicts ?? previous?.verdicts ?? null,
            viewVersion: read.view_version ?? null,
            changes:
              read.delta && from ? { from, charts: read.delta.charts } : null
          }
        };
      } else {
        const response = await requestAPI<ICompareResponse>(
          withQuery('compare', { a: ids[0], b: ids[1] }),
          serverSettings
        );
        if (!sameIds(this._state.ids, ids)) {
          return;
        }
        this._state = {
          ...this._state,
          loading: false,
          error: null,
          comparison: response
        };
      }
    } catch (error) {
      if (!sameIds(this._state.ids, ids)) {
        return;
      }
      console.error('[nsight-lab] session request failed', error);
      this._state = {
        ...this._state,
        loading: false,
        error: describeError(error)
      };
    }
    this._changed.emit();
  }

  /**
   * The view after `response` (its delta applied to `held`), kept for the next
   * read; null when the delta did not fit (the next read asks for the whole view).
   */
  private _nextView(
    held: IServedView | null,
    response: ISessionResponse
  ): IServedView | null {
    try {
      this._view = nextView(held, response);
      return this._view;
    } catch (error) {
      if (!(error instanceof ViewDeltaError)) {
        throw error;
      }
      this._view = null;
      this._gate.request();
      return null;
    }
  }

  private _context: IModelContext;
  private _gate: RefreshGate;
  private _isDisposed = false;
  private _state: ISelectionState = EMPTY_SELECTION;
  /** The whole view of the session read (what the next delta applies to). */
  private _view: IServedView | null = null;
  private _changed = new Signal<this, void>(this);
}
