/**
 * The live session: the newest profile of the notebook in front (else the newest
 * running one), its newest runs appended as `runs-changed` events arrive, and a
 * `Poll` that reads it while the events socket is down. Each read after the first
 * asks for what changed in the view since the version held (`since`), and applies
 * it (`model/view.ts`); the server sends the whole view when it cannot tell.
 */

import { IDisposable } from '@lumino/disposable';
import { IPoll, Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import { RefreshGate } from '../refresh';
import { requestAPI, withQuery } from '../request';
import { ILiveState } from '../tokens';
import { ISessionSummary, ISessionsResponse } from '../types';
import { IModelContext } from './context';
import { fetchLiveView, keepLast } from './runs';
import { IServedView, nextView, ViewDeltaError } from './view';

/** How many of the newest sessions are looked at to find the live one. */
export const LIVE_CANDIDATES = 20;

/** The least time between two reads while polling (socket down), in milliseconds. */
export const LIVE_POLL_MIN_MS = 1000;

/** No live session. */
export const EMPTY_LIVE: ILiveState = {
  session: null,
  runs: [],
  figures: {},
  chartOrder: null,
  lastRunId: 0,
  viewVersion: null,
  changes: null,
  eventAt: null,
  updatedAt: null
};

/**
 * Whether a session's notebook path (absolute, from the kernel) is the notebook at
 * `currentPath` (relative to the server root, from the frontend).
 */
export function notebookMatches(
  sessionNotebook: string | null,
  currentPath: string | null
): boolean {
  if (!sessionNotebook || !currentPath) {
    return false;
  }
  const a = sessionNotebook.replace(/\\/g, '/');
  const b = currentPath.replace(/\\/g, '/').replace(/^\/+/, '');
  return a === b || a.endsWith(`/${b}`);
}

/**
 * Pick the live session among the newest ones (newest first): the newest of the
 * current notebook, else the newest running one, else the one shown so far while it
 * is still listed, else none.
 */
export function chooseLiveSession(
  newest: ISessionSummary[],
  currentNotebook: string | null,
  previousId: number | null
): ISessionSummary | null {
  const ofNotebook = newest.find(s =>
    notebookMatches(s.notebook, currentNotebook)
  );
  if (ofNotebook) {
    return ofNotebook;
  }
  const running = newest.find(s => s.status === 'running');
  if (running) {
    return running;
  }
  return newest.find(s => s.id === previousId) ?? null;
}

/**
 * The live session and its newest runs (at most `maxPoints`).
 */
export class LiveModel implements IDisposable {
  constructor(context: IModelContext) {
    this._context = context;
    this._gate = new RefreshGate(
      () => this._fetch(),
      context.settings().refreshInterval
    );
    this._poll = new Poll<void, Error>({
      auto: false,
      factory: async () => this._gate.request(),
      name: 'nsight-lab:live-poll',
      standby: 'when-hidden'
    });
    this._poll.frequency = this._pollFrequency();
  }

  /** Emitted when the live session or its runs change. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }
  get isDisposed(): boolean {
    return this._isDisposed;
  }
  get state(): ILiveState {
    return this._state;
  }
  get currentNotebook(): string | null {
    return this._currentNotebook;
  }
  /** Whether the live session is read on a timer (the socket is down). */
  get polling(): boolean {
    return this._polling;
  }

  /**
   * Whether the events socket is open; while it is not and the live session runs,
   * the session is read every `max(refreshInterval, 1 s)` (standing by while the
   * page is hidden).
   */
  set socketOpen(value: boolean) {
    this._socketOpen = value;
    this._updatePolling();
  }

  /** The settings changed: re-read intervals, and keep at most `maxPoints` runs. */
  applySettings(): void {
    const settings = this._context.settings();
    this._gate.intervalMs = settings.refreshInterval;
    this._poll.frequency = this._pollFrequency();
    if (this._state.runs.length > settings.maxPoints) {
      this._state = {
        ...this._state,
        runs: keepLast(this._state.runs, settings.maxPoints)
      };
      this._changed.emit();
    }
  }

  /** The path of the notebook in front (relative to the server root), or null. */
  setCurrentNotebook(path: string | null): void {
    if (path === this._currentNotebook) {
      return;
    }
    this._currentNotebook = path;
    void this.find();
  }

  /**
   * Runs were added to session `id` (a `runs-changed` event that arrived at
   * `receivedAt`): read them when it is the live session.
   *
   * @returns Whether `id` is the live session.
   */
  runsChanged(id: number, lastRunId: number, receivedAt: number): boolean {
    if (id !== this._state.session?.id) {
      return false;
    }
    if (lastRunId > this._state.lastRunId && this._pendingEventAt === null) {
      this._pendingEventAt = receivedAt;
    }
    this._gate.request();
    return true;
  }

  /** Session `id` is gone: stop showing it. */
  forget(id: number): void {
    if (this._state.session?.id === id) {
      this._state = EMPTY_LIVE;
      this._view = null;
      this._changed.emit();
    }
  }

  /** Look among the newest sessions for the live one; read it when it changed. */
  async find(): Promise<void> {
    let newest: ISessionsResponse;
    try {
      newest = await requestAPI<ISessionsResponse>(
        withQuery('sessions', { limit: LIVE_CANDIDATES }),
        this._context.serverSettings
      );
    } catch (error) {
      console.error('[nsight-lab] live session lookup failed', error);
      return;
    }
    if (this._isDisposed) {
      return;
    }
    const previous = this._state.session;
    const chosen = chooseLiveSession(
      newest.sessions,
      this._currentNotebook,
      previous?.id ?? null
    );
    if (chosen?.id !== previous?.id) {
      this._state = chosen ? { ...EMPTY_LIVE, session: chosen } : EMPTY_LIVE;
      this._view = null;
      this._pendingEventAt = null;
      this._changed.emit();
      if (chosen) {
        this._gate.request();
      }
    } else if (
      chosen &&
      previous &&
      (chosen.status !== previous.status ||
        chosen.run_count !== previous.run_count)
    ) {
      this._gate.request();
    }
    this._updatePolling();
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._gate.dispose();
    this._poll.dispose();
    Signal.clearData(this);
  }

  private _pollFrequency(): IPoll.Frequency {
    const every = Math.max(
      this._context.settings().refreshInterval,
      LIVE_POLL_MIN_MS
    );
    return { interval: every, backoff: false, max: every };
  }

  private _updatePolling(): void {
    if (this._isDisposed) {
      return;
    }
    const wanted =
      !this._socketOpen && this._state.session?.status === 'running';
    if (wanted && !this._polling) {
      this._polling = true;
      void this._poll.schedule({
        interval: this._poll.frequency.interval,
        phase: 'started'
      });
    } else if (!wanted && this._polling) {
      this._polling = false;
      void this._poll.stop();
    }
  }

  /**
   * Read the live session's newest run and what changed in its view since the
   * version held (the whole view the first time, or when the server cannot say):
   * a refresh carries the points appended since, not the figures (issue 32).
   */
  private async _fetch(): Promise<void> {
    const live = this._state;
    const session = live.session;
    if (!session) {
      return;
    }
    const eventAt = this._pendingEventAt;
    this._pendingEventAt = null;
    const maxPoints = this._context.settings().maxPoints;
    const held = this._view ? (live.viewVersion ?? null) : null;
    const read = await fetchLiveView(
      this._context.serverSettings,
      session.id,
      live.lastRunId,
      held
    );
    const response = read.response;
    if (this._isDisposed || this._state.session?.id !== session.id) {
      return;
    }
    let view: IServedView;
    try {
      view = nextView(this._view, response);
    } catch (error) {
      if (!(error instanceof ViewDeltaError)) {
        throw error;
      }
      // A delta that does not fit the view held: read it whole next time.
      this._view = null;
      this._state = { ...this._state, viewVersion: null };
      this._gate.request();
      return;
    }
    const from = this._view?.figures ?? null;
    this._view = view;
    this._state = {
      session: response.session,
      runs: keepLast([...this._state.runs, ...read.runs], maxPoints),
      figures: view.figures,
      chartOrder: view.chart_order ?? this._state.chartOrder,
      lastRunId: Math.max(read.lastRunId, this._state.lastRunId),
      viewVersion: response.view_version ?? null,
      changes:
        response.delta && from ? { from, charts: response.delta.charts } : null,
      eventAt,
      updatedAt: performance.now()
    };
    this._changed.emit();
    this._updatePolling();
  }

  private _context: IModelContext;
  private _gate: RefreshGate;
  private _poll: Poll<void, Error>;
  private _polling = false;
  private _socketOpen = false;
  private _isDisposed = false;
  private _state: ILiveState = EMPTY_LIVE;
  /** The whole view held (the figures and what else it was served with). */
  private _view: IServedView | null = null;
  private _pendingEventAt: number | null = null;
  private _currentNotebook: string | null = null;
  private _changed = new Signal<this, void>(this);
}
