/**
 * RunsModel: what the sidebar and the main-area panels show, and the only user of
 * request.ts and events.ts.
 *
 * A facade over three parts, one per concern: the session list (`sessions.ts`,
 * with the ids picked in it), the sessions and comparisons the panels show
 * (`selection.ts`, one per panel) and the live session (`live.ts`). It owns the
 * events socket and routes its messages: the server only says *what* changed; the
 * part that shows it re-reads it over REST.
 */

import { ServerConnection } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

import { EventsConnection, IEventNotice } from '../events';
import {
  describeError,
  requestAPI,
  requestDownload,
  withQuery
} from '../request';
import {
  ConnectionState,
  IDownload,
  ILiveState,
  IRunsModel,
  ISelectionSource
} from '../tokens';
import {
  DEFAULT_SIDEBAR_SETTINGS,
  ISessionFilters,
  ISessionSummary,
  ISidebarSettings,
  IStatusResponse
} from '../types';
import { IModelContext } from './context';
import { LiveModel } from './live';
import { SelectionModel, nextSelection } from './selection';
import { SessionListModel } from './sessions';

export {
  EMPTY_LIVE,
  LIVE_CANDIDATES,
  LIVE_POLL_MIN_MS,
  LiveModel,
  chooseLiveSession,
  notebookMatches
} from './live';
export { EMPTY_SELECTION, SelectionModel, nextSelection } from './selection';
export { PAGE_SIZE, SessionListModel, sessionsQuery } from './sessions';
export type { IModelContext } from './context';

/**
 * The sidebar's state.
 */
export class RunsModel implements IRunsModel {
  constructor(options: RunsModel.IOptions) {
    this._serverSettings = options.serverSettings;
    this._settings = options.settings ?? DEFAULT_SIDEBAR_SETTINGS;
    const context: IModelContext = (this._context = {
      serverSettings: options.serverSettings,
      settings: () => this._settings
    });
    this._list = new SessionListModel(context);
    this._live = new LiveModel(context);
    this._list.changed.connect(() => this._sessionsChanged.emit(), this);
    this._live.changed.connect(() => this._liveChanged.emit(), this);

    this._events =
      options.events ??
      new EventsConnection({ serverSettings: options.serverSettings });
    this._events.messageReceived.connect(this._onEvent, this);
    this._events.stateChanged.connect(this._onConnection, this);
    this._live.socketOpen = this._events.state === 'open';
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
  get sessionDeleted(): ISignal<this, number> {
    return this._sessionDeleted;
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
    return this._list.filters;
  }
  get total(): number | null {
    return this._list.total;
  }
  get listLoading(): boolean {
    return this._list.loading;
  }
  get listError(): string | null {
    return this._list.error;
  }
  get live(): ILiveState {
    return this._live.state;
  }
  get selectedIds(): readonly number[] {
    return this._selectedIds;
  }
  get currentNotebook(): string | null {
    return this._live.currentNotebook;
  }
  get settings(): ISidebarSettings {
    return this._settings;
  }

  set settings(value: ISidebarSettings) {
    this._settings = value;
    this._list.intervalMs = value.refreshInterval;
    for (const source of this._openSources()) {
      source.intervalMs = value.refreshInterval;
    }
    this._live.applySettings();
  }

  /** Read the status, the first page and the live session; open the websocket. */
  async start(): Promise<void> {
    this._events.connect();
    await Promise.all([
      this.refreshStatus(),
      this._list.reload(),
      this._live.find()
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

  /** Apply new filters: the list starts again from its first page. */
  setFilters(filters: ISessionFilters): void {
    this._list.setFilters(filters);
  }

  /** The session at list position `index`, when its page has been read. */
  sessionAt(index: number): ISessionSummary | undefined {
    return this._list.sessionAt(index);
  }

  /** Read the pages that hold list positions `[start, end)` unless already read. */
  ensureRange(start: number, end: number): void {
    this._list.ensureRange(start, end);
  }

  /**
   * Pick a session in the history list. `single` picks it alone; `add` adds it as
   * the second one (the comparison), or un-picks it when picked.
   */
  select(id: number, mode: 'single' | 'add' = 'single'): readonly number[] {
    this._selectedIds = nextSelection([...this._selectedIds], id, mode);
    this._selectionChanged.emit();
    return this._selectedIds;
  }

  clearSelection(): void {
    this._selectedIds = [];
    this._selectionChanged.emit();
  }

  /**
   * Read a session (one id) or a comparison (two) on its own, read again when its
   * sessions get new runs, until disposed.
   */
  openSelection(ids: readonly number[]): ISelectionSource {
    const source = new SelectionModel(this._context);
    this._opened.add(source);
    void source.show(ids);
    return source;
  }

  /**
   * Delete a session from the store; the list, the picks and live follow, and
   * `sessionDeleted` tells the panels.
   */
  async deleteSession(id: number): Promise<void> {
    await requestAPI<null>(`sessions/${id}`, this._serverSettings, {
      method: 'DELETE'
    });
    if (this._selectedIds.includes(id)) {
      this._selectedIds = this._selectedIds.filter(x => x !== id);
      this._selectionChanged.emit();
    }
    this._sessionDeleted.emit(id);
    this._live.forget(id);
    await Promise.all([this._list.reload(), this._live.find()]);
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

  /** The path of the notebook in front (relative to the server root), or null. */
  setCurrentNotebook(path: string | null): void {
    this._live.setCurrentNotebook(path);
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._list.dispose();
    for (const source of this._openSources()) {
      source.dispose();
    }
    this._live.dispose();
    this._events.dispose();
    Signal.clearData(this);
  }

  private _onEvent(_: EventsConnection, notice: IEventNotice): void {
    const { message, receivedAt } = notice;
    if (message.type === 'sessions-changed') {
      if (!this._status?.store_exists) {
        void this.refreshStatus();
      }
      this._list.requestReload();
      void this._live.find();
      return;
    }
    const id = message.session_id;
    if (!this._live.runsChanged(id, message.last_run_id, receivedAt)) {
      // A session not shown live yet: maybe the new live one.
      void this._live.find();
    }
    for (const source of this._openSources()) {
      if (source.includes(id)) {
        source.requestRefresh();
      }
    }
    // Run counts in the list.
    this._list.requestReload();
  }

  private _onConnection(_: EventsConnection, state: ConnectionState): void {
    if (state === 'open' && this._lastConnection === 'reconnecting') {
      // Whatever happened while disconnected: read it again. (On the first open,
      // start() is reading everything already.)
      this._list.requestReload();
      void this._live.find();
    }
    this._lastConnection = state;
    this._live.socketOpen = state === 'open';
    this._connectionChanged.emit(state);
  }

  /** The sources handed out and not yet disposed (those disposed are dropped). */
  private _openSources(): SelectionModel[] {
    for (const source of this._opened) {
      if (source.isDisposed) {
        this._opened.delete(source);
      }
    }
    return [...this._opened];
  }

  private _serverSettings: ServerConnection.ISettings;
  private _context: IModelContext;
  private _settings: ISidebarSettings;
  private _events: EventsConnection;
  private _list: SessionListModel;
  private _selectedIds: readonly number[] = [];
  private _opened = new Set<SelectionModel>();
  private _live: LiveModel;
  /** The websocket's previous state: an open after 'reconnecting' is a reconnect. */
  private _lastConnection: ConnectionState | null = null;
  private _isDisposed = false;
  private _status: IStatusResponse | null = null;
  private _statusError: string | null = null;
  private _sessionsChanged = new Signal<this, void>(this);
  private _selectionChanged = new Signal<this, void>(this);
  private _liveChanged = new Signal<this, void>(this);
  private _statusChanged = new Signal<this, void>(this);
  private _connectionChanged = new Signal<this, ConnectionState>(this);
  private _sessionDeleted = new Signal<this, number>(this);
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
