/**
 * RunsModel: what the sidebar shows, and the only caller of request.ts and events.ts.
 *
 * It keeps the session list (paged, filtered), the selected session(s) and the live
 * session of the current notebook, and tells the views through signals. The server
 * only says *what* changed (websocket); the model re-reads it over REST.
 */

import { ServerConnection } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

import { ConnectionState, EventsConnection, IEventNotice } from './events';
import { RefreshGate } from './refresh';
import {
  IDownload,
  describeError,
  requestAPI,
  requestDownload,
  withQuery
} from './request';
import { ILiveState, IRunsModel, ISelectionState } from './tokens';
import {
  DEFAULT_SIDEBAR_SETTINGS,
  EMPTY_FILTERS,
  ICompareResponse,
  IRunRecord,
  ISessionFilters,
  ISessionResponse,
  ISessionSummary,
  ISessionsResponse,
  ISidebarSettings,
  IStatusResponse
} from './types';

/** Sessions per page of the list endpoint. */
export const PAGE_SIZE = 50;

/** How many of the newest sessions are looked at to find the live one. */
export const LIVE_CANDIDATES = 20;

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

/**
 * Read the runs of a session stored after `afterId`, page by page, keeping only the
 * newest `keep`; the figures (built on the server from every run) come with the
 * last page when `figures` is set.
 *
 * From the start of a session (`afterId` 0), only its last `keep` runs are asked
 * for (`tail`): a 200,000-run session is not sent whole to show 2,000 of them.
 * After that, pages of {@link RUN_PAGE_SIZE} are read while the server says
 * `has_more` (at most {@link MAX_RUN_PAGES} per call).
 */
export async function fetchSessionRuns(
  serverSettings: ServerConnection.ISettings,
  sessionId: number,
  afterId: number,
  keep: number,
  figures: boolean
): Promise<IRunsRead> {
  const path = `sessions/${sessionId}`;
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
        figures: figures && page === 0 ? 1 : undefined
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
      withQuery(path, { after_id: after, limit: 0, figures: 1 }),
      serverSettings
    );
    return { response: withFigures, runs, lastRunId: after };
  }
}

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

/** The query of one list page. */
export function sessionsQuery(
  filters: ISessionFilters,
  page: number,
  pageSize: number = PAGE_SIZE
): string {
  return withQuery('sessions', {
    ...filters,
    limit: pageSize,
    offset: page * pageSize
  });
}

/** Keep the last `max` items. */
function keepLast<T>(items: T[], max: number): T[] {
  return items.length > max ? items.slice(items.length - max) : items;
}

interface IPage {
  generation: number;
  rows: ISessionSummary[];
}

const EMPTY_LIVE: ILiveState = {
  session: null,
  runs: [],
  figures: {},
  lastRunId: 0,
  eventAt: null,
  updatedAt: null
};

const EMPTY_SELECTION: ISelectionState = {
  ids: [],
  detail: null,
  comparison: null,
  loading: false,
  error: null
};

/**
 * The sidebar's state.
 */
export class RunsModel implements IRunsModel {
  constructor(options: RunsModel.IOptions) {
    this._serverSettings = options.serverSettings;
    this._settings = options.settings ?? DEFAULT_SIDEBAR_SETTINGS;
    this._events =
      options.events ??
      new EventsConnection({ serverSettings: options.serverSettings });
    this._events.messageReceived.connect(this._onEvent, this);
    this._events.stateChanged.connect(this._onConnection, this);
    const interval = this._settings.refreshInterval;
    this._liveGate = new RefreshGate(() => this._fetchLive(), interval);
    this._selectionGate = new RefreshGate(
      () => this._fetchSelection(true),
      interval
    );
    this._listGate = new RefreshGate(() => this._reloadList(), interval);
  }

  get sessionsChanged(): ISignal<this, void> {
    return this._sessionsChanged;
  }
  get selectionChanged(): ISignal<this, void> {
    return this._selectionChanged;
  }
  get liveChanged(): ISignal<this, void> {
    return this._liveChanged;
  }
  get statusChanged(): ISignal<this, void> {
    return this._statusChanged;
  }
  get connectionChanged(): ISignal<this, ConnectionState> {
    return this._connectionChanged;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }
  get connection(): ConnectionState {
    return this._events.state;
  }
  get status(): IStatusResponse | null {
    return this._status;
  }
  get statusError(): string | null {
    return this._statusError;
  }
  get filters(): ISessionFilters {
    return this._filters;
  }
  get total(): number | null {
    return this._total;
  }
  get listLoading(): boolean {
    return this._listLoading;
  }
  get listError(): string | null {
    return this._listError;
  }
  get live(): ILiveState {
    return this._live;
  }
  get selection(): ISelectionState {
    return this._selection;
  }
  get currentNotebook(): string | null {
    return this._currentNotebook;
  }
  get settings(): ISidebarSettings {
    return this._settings;
  }

  set settings(value: ISidebarSettings) {
    this._settings = value;
    for (const gate of [this._liveGate, this._selectionGate, this._listGate]) {
      gate.intervalMs = value.refreshInterval;
    }
    if (this._live.runs.length > value.maxPoints) {
      this._live = {
        ...this._live,
        runs: keepLast(this._live.runs, value.maxPoints)
      };
      this._liveChanged.emit();
    }
  }

  /** Read the status, the first page and the live session; open the websocket. */
  async start(): Promise<void> {
    this._events.connect();
    await Promise.all([
      this.refreshStatus(),
      this._reloadList(),
      this._refreshLive()
    ]);
  }

  /** Re-read `GET status` (store location, version). */
  async refreshStatus(): Promise<void> {
    try {
      this._status = await requestAPI<IStatusResponse>(
        'status',
        this._serverSettings
      );
      this._statusError = null;
    } catch (error) {
      console.error('[nsight-lab] status request failed', error);
      this._statusError = describeError(error);
    }
    this._statusChanged.emit();
  }

  // -- the session list --------------------------------------------------------------

  /** Apply new filters: the list starts again from its first page. */
  setFilters(filters: ISessionFilters): void {
    this._filters = { ...filters };
    this._pages.clear();
    this._total = null;
    void this._reloadList();
  }

  /** The session at list position `index`, when its page has been read. */
  sessionAt(index: number): ISessionSummary | undefined {
    const page = this._pages.get(Math.floor(index / PAGE_SIZE));
    return page?.rows[index % PAGE_SIZE];
  }

  /** Read the pages that hold list positions `[start, end)` unless already read. */
  ensureRange(start: number, end: number): void {
    if (end <= start) {
      return;
    }
    const first = Math.floor(start / PAGE_SIZE);
    const last = Math.floor((end - 1) / PAGE_SIZE);
    for (let page = first; page <= last; page++) {
      const known = this._pages.get(page);
      if (known?.generation === this._generation) {
        continue;
      }
      void this._fetchPage(page);
    }
  }

  // -- selection ---------------------------------------------------------------------

  /**
   * Select a session. `single` selects it alone; `add` adds it as the second one
   * (the comparison), or removes it when already selected.
   */
  async select(id: number, mode: 'single' | 'add' = 'single'): Promise<void> {
    let ids: number[];
    const current = this._selection.ids;
    if (mode === 'add' && current.includes(id)) {
      ids = current.filter(x => x !== id);
    } else if (mode === 'add' && current.length > 0) {
      ids = [current[current.length - 1], id];
    } else {
      ids = [id];
    }
    this._selection = { ...EMPTY_SELECTION, ids, loading: ids.length > 0 };
    this._selectionChanged.emit();
    await this._fetchSelection(false);
  }

  clearSelection(): void {
    this._selection = EMPTY_SELECTION;
    this._selectionChanged.emit();
  }

  /** Delete a session from the store; the list, the selection and live follow. */
  async deleteSession(id: number): Promise<void> {
    await requestAPI<null>(`sessions/${id}`, this._serverSettings, {
      method: 'DELETE'
    });
    if (this._selection.ids.includes(id)) {
      const ids = this._selection.ids.filter(x => x !== id);
      if (ids.length > 0) {
        await this.select(ids[0]);
      } else {
        this.clearSelection();
      }
    }
    if (this._live.session?.id === id) {
      this._live = EMPTY_LIVE;
      this._liveChanged.emit();
    }
    await Promise.all([this._reloadList(), this._refreshLive()]);
  }

  /** Fetch an export of a session (CSV or Parquet; runs or results). */
  exportSession(
    id: number,
    format: 'csv' | 'parquet',
    what: 'runs' | 'results'
  ): Promise<IDownload> {
    return requestDownload(
      withQuery(`sessions/${id}/export`, { format, what }),
      this._serverSettings,
      `nsight-lab-session-${id}-${what}.${format}`
    );
  }

  /** Fetch the kept `.ncu-rep` of a session. */
  downloadReport(id: number): Promise<IDownload> {
    return requestDownload(
      `sessions/${id}/report`,
      this._serverSettings,
      `nsight-lab-session-${id}.ncu-rep`
    );
  }

  // -- live --------------------------------------------------------------------------

  /** The path of the notebook in front (relative to the server root), or null. */
  setCurrentNotebook(path: string | null): void {
    if (path === this._currentNotebook) {
      return;
    }
    this._currentNotebook = path;
    void this._refreshLive();
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._liveGate.dispose();
    this._selectionGate.dispose();
    this._listGate.dispose();
    if (this._pollTimer !== null) {
      clearInterval(this._pollTimer);
    }
    this._events.dispose();
    Signal.clearData(this);
  }

  // -- private -----------------------------------------------------------------------

  private _onEvent(_: EventsConnection, notice: IEventNotice): void {
    const { message, receivedAt } = notice;
    if (message.type === 'sessions-changed') {
      if (!this._status?.store_exists) {
        void this.refreshStatus();
      }
      this._listGate.request();
      void this._refreshLive();
      return;
    }
    const id = message.session_id;
    if (id === this._live.session?.id) {
      if (
        message.last_run_id > this._live.lastRunId &&
        this._pendingEventAt === null
      ) {
        this._pendingEventAt = receivedAt;
      }
      this._liveGate.request();
    } else {
      // A session we do not show live yet: maybe the new live one.
      void this._refreshLive();
    }
    if (this._selection.ids.includes(id)) {
      this._selectionGate.request();
    }
    // Run counts in the list.
    this._listGate.request();
  }

  /** The websocket's previous state: an open after 'reconnecting' is a reconnect. */
  private _lastConnection: ConnectionState | null = null;

  private _onConnection(_: EventsConnection, state: ConnectionState): void {
    if (state === 'open' && this._lastConnection === 'reconnecting') {
      // Whatever happened while disconnected: read it again. (On the first open,
      // start() is reading everything already.)
      this._listGate.request();
      void this._refreshLive();
    }
    this._lastConnection = state;
    this._updatePolling();
    this._connectionChanged.emit(state);
  }

  /** Poll the live session while the websocket is down. */
  private _updatePolling(): void {
    const wanted =
      this._events.state !== 'open' && this._live.session?.status === 'running';
    if (wanted && this._pollTimer === null) {
      const every = Math.max(this._settings.refreshInterval, 1000);
      this._pollTimer = setInterval(() => this._liveGate.request(), every);
    } else if (!wanted && this._pollTimer !== null) {
      clearInterval(this._pollTimer);
      this._pollTimer = null;
    }
  }

  private async _reloadList(): Promise<void> {
    this._generation += 1;
    await this._fetchPage(0);
    // Pages the view showed before are read again when it asks for them.
    this._sessionsChanged.emit();
  }

  private async _fetchPage(page: number): Promise<void> {
    const generation = this._generation;
    const key = `${generation}:${page}`;
    if (this._inFlight.has(key)) {
      return;
    }
    this._inFlight.add(key);
    this._listLoading = true;
    try {
      const response = await requestAPI<ISessionsResponse>(
        sessionsQuery(this._filters, page),
        this._serverSettings
      );
      if (generation !== this._generation) {
        return;
      }
      this._pages.set(page, { generation, rows: response.sessions });
      this._total = response.total;
      this._listError = null;
    } catch (error) {
      if (generation !== this._generation) {
        return;
      }
      console.error('[nsight-lab] session list request failed', error);
      this._listError = describeError(error);
    } finally {
      this._inFlight.delete(key);
      this._listLoading = this._inFlight.size > 0;
    }
    this._sessionsChanged.emit();
  }

  private async _refreshLive(): Promise<void> {
    let newest: ISessionsResponse;
    try {
      newest = await requestAPI<ISessionsResponse>(
        withQuery('sessions', { limit: LIVE_CANDIDATES }),
        this._serverSettings
      );
    } catch (error) {
      console.error('[nsight-lab] live session lookup failed', error);
      return;
    }
    const previous = this._live.session;
    const chosen = chooseLiveSession(
      newest.sessions,
      this._currentNotebook,
      previous?.id ?? null
    );
    if (chosen?.id !== previous?.id) {
      this._live = chosen ? { ...EMPTY_LIVE, session: chosen } : EMPTY_LIVE;
      this._pendingEventAt = null;
      this._liveChanged.emit();
      if (chosen) {
        this._liveGate.request();
      }
    } else if (
      chosen &&
      previous &&
      (chosen.status !== previous.status ||
        chosen.run_count !== previous.run_count)
    ) {
      this._liveGate.request();
    }
    this._updatePolling();
  }

  private async _fetchLive(): Promise<void> {
    const live = this._live;
    const session = live.session;
    if (!session) {
      return;
    }
    const eventAt = this._pendingEventAt;
    this._pendingEventAt = null;
    const read = await fetchSessionRuns(
      this._serverSettings,
      session.id,
      live.lastRunId,
      this._settings.maxPoints,
      true
    );
    const response = read.response;
    if (this._live.session?.id !== session.id) {
      return;
    }
    const runs = keepLast(
      [...this._live.runs, ...read.runs],
      this._settings.maxPoints
    );
    this._live = {
      session: response.session,
      runs,
      figures: response.figures ?? this._live.figures,
      lastRunId: Math.max(read.lastRunId, this._live.lastRunId),
      eventAt,
      updatedAt: performance.now()
    };
    this._liveChanged.emit();
    this._updatePolling();
  }

  private async _fetchSelection(incremental: boolean): Promise<void> {
    const ids = this._selection.ids;
    if (ids.length === 0) {
      return;
    }
    try {
      if (ids.length === 1) {
        const id = ids[0];
        const previous = this._selection.detail;
        const after =
          incremental && previous?.session.id === id ? previous.lastRunId : 0;
        const read = await fetchSessionRuns(
          this._serverSettings,
          id,
          after,
          this._settings.maxPoints,
          true
        );
        const response = read.response;
        if (!sameIds(this._selection.ids, ids)) {
          return;
        }
        const runs = keepLast(
          after > 0 && previous ? [...previous.runs, ...read.runs] : read.runs,
          this._settings.maxPoints
        );
        this._selection = {
          ...this._selection,
          loading: false,
          error: null,
          detail: {
            session: response.session,
            runs,
            figures: response.figures ?? previous?.figures ?? {},
            lastRunId: Math.max(read.lastRunId, after)
          }
        };
      } else {
        const response = await requestAPI<ICompareResponse>(
          withQuery('compare', { a: ids[0], b: ids[1] }),
          this._serverSettings
        );
        if (!sameIds(this._selection.ids, ids)) {
          return;
        }
        this._selection = {
          ...this._selection,
          loading: false,
          error: null,
          comparison: response
        };
      }
    } catch (error) {
      if (!sameIds(this._selection.ids, ids)) {
        return;
      }
      console.error('[nsight-lab] session request failed', error);
      this._selection = {
        ...this._selection,
        loading: false,
        error: describeError(error)
      };
    }
    this._selectionChanged.emit();
  }

  private _serverSettings: ServerConnection.ISettings;
  private _settings: ISidebarSettings;
  private _events: EventsConnection;
  private _liveGate: RefreshGate;
  private _selectionGate: RefreshGate;
  private _listGate: RefreshGate;
  private _pollTimer: ReturnType<typeof setInterval> | null = null;
  private _isDisposed = false;
  private _status: IStatusResponse | null = null;
  private _statusError: string | null = null;
  private _filters: ISessionFilters = EMPTY_FILTERS;
  private _pages = new Map<number, IPage>();
  private _inFlight = new Set<string>();
  private _generation = 0;
  private _total: number | null = null;
  private _listLoading = false;
  private _listError: string | null = null;
  private _live: ILiveState = EMPTY_LIVE;
  private _pendingEventAt: number | null = null;
  private _selection: ISelectionState = EMPTY_SELECTION;
  private _currentNotebook: string | null = null;
  private _sessionsChanged = new Signal<this, void>(this);
  private _selectionChanged = new Signal<this, void>(this);
  private _liveChanged = new Signal<this, void>(this);
  private _statusChanged = new Signal<this, void>(this);
  private _connectionChanged = new Signal<this, ConnectionState>(this);
}

function lastId(runs: IRunRecord[], fallback: number): number {
  return runs.reduce((max, r) => Math.max(max, r.id), fallback);
}

function sameIds(a: number[], b: number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * The RunsModel statics.
 */
export namespace RunsModel {
  export interface IOptions {
    serverSettings: ServerConnection.ISettings;
    settings?: ISidebarSettings;
    /** The events socket; made from `serverSettings` when not given (tests pass one). */
    events?: EventsConnection;
  }
}
