/**
 * The `events` websocket of the server extension: it tells which session changed; the
 * model then re-reads that session over REST. Reconnects with backoff when dropped.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { API_NAMESPACE } from './tokens';
import { EventMessage } from './types';

/**
 * Where the connection stands: `connecting` before the first open, `open`, then
 * `reconnecting` after a drop until it is open again; `closed` once disposed.
 */
export type ConnectionState = 'connecting' | 'open' | 'reconnecting' | 'closed';

/** The least and the most time to wait before reconnecting, in milliseconds. */
export const RECONNECT_MIN_MS = 250;
export const RECONNECT_MAX_MS = 10000;

/**
 * The wait before reconnect attempt `attempt` (0-based): doubling from `minMs`, at
 * most `maxMs`.
 */
export function backoffDelay(
  attempt: number,
  minMs: number = RECONNECT_MIN_MS,
  maxMs: number = RECONNECT_MAX_MS
): number {
  const exponent = Math.max(0, Math.min(attempt, 30));
  return Math.min(maxMs, minMs * 2 ** exponent);
}

/**
 * Parse one websocket message; `null` for anything that is not a known event.
 */
export function parseEventMessage(data: unknown): EventMessage | null {
  if (typeof data !== 'string') {
    return null;
  }
  let body: unknown;
  try {
    body = JSON.parse(data);
  } catch {
    return null;
  }
  if (typeof body !== 'object' || body === null) {
    return null;
  }
  const record = body as Record<string, unknown>;
  if (
    record.type === 'runs-changed' &&
    typeof record.session_id === 'number' &&
    typeof record.last_run_id === 'number'
  ) {
    return {
      type: 'runs-changed',
      session_id: record.session_id,
      last_run_id: record.last_run_id
    };
  }
  if (record.type === 'sessions-changed') {
    const latest = record.latest_session_id;
    return {
      type: 'sessions-changed',
      latest_session_id: typeof latest === 'number' ? latest : null
    };
  }
  return null;
}

/**
 * The URL of the events socket, with the token where the settings ask for it.
 */
export function eventsUrl(serverSettings: ServerConnection.ISettings): string {
  let url = URLExt.join(serverSettings.wsUrl, API_NAMESPACE, 'events');
  if (serverSettings.appendToken && serverSettings.token !== '') {
    url += `?token=${encodeURIComponent(serverSettings.token)}`;
  }
  return url;
}

/**
 * One reconnecting websocket to `/nsight-lab/api/events`.
 */
export class EventsConnection implements IDisposable {
  constructor(options: EventsConnection.IOptions) {
    this._serverSettings = options.serverSettings;
    this._minMs = options.reconnectMinMs ?? RECONNECT_MIN_MS;
    this._maxMs = options.reconnectMaxMs ?? RECONNECT_MAX_MS;
  }

  /** Emitted for every event message, with the time it arrived (`performance.now()`). */
  get messageReceived(): ISignal<this, IEventNotice> {
    return this._messageReceived;
  }

  /** Emitted when the connection state changes. */
  get stateChanged(): ISignal<this, ConnectionState> {
    return this._stateChanged;
  }

  get state(): ConnectionState {
    return this._state;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Open the socket; a no-op when it is already open or opening. */
  connect(): void {
    if (this._isDisposed || this._socket) {
      return;
    }
    let socket: WebSocket;
    try {
      const Ctor = this._serverSettings.WebSocket;
      socket = new Ctor(eventsUrl(this._serverSettings));
    } catch (error) {
      console.error('[nsight-lab] cannot open the events websocket', error);
      this._scheduleReconnect();
      return;
    }
    this._socket = socket;
    socket.onopen = () => {
      this._attempt = 0;
      this._setState('open');
    };
    socket.onmessage = (event: MessageEvent) => {
      const message = parseEventMessage(event.data);
      if (message) {
        this._messageReceived.emit({
          message,
          receivedAt: performance.now()
        });
      }
    };
    socket.onclose = () => {
      if (this._socket === socket) {
        this._socket = null;
        this._scheduleReconnect();
      }
    };
    socket.onerror = () => {
      // onclose follows and reconnects.
    };
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
    const socket = this._socket;
    this._socket = null;
    if (socket) {
      socket.onopen = null;
      socket.onmessage = null;
      socket.onclose = null;
      socket.onerror = null;
      socket.close();
    }
    this._setState('closed');
    Signal.clearData(this);
  }

  private _scheduleReconnect(): void {
    if (this._isDisposed || this._timer !== null) {
      return;
    }
    this._setState('reconnecting');
    const delay = backoffDelay(this._attempt, this._minMs, this._maxMs);
    this._attempt += 1;
    this._timer = setTimeout(() => {
      this._timer = null;
      this.connect();
    }, delay);
  }

  private _setState(state: ConnectionState): void {
    if (this._state !== state) {
      this._state = state;
      this._stateChanged.emit(state);
    }
  }

  private _serverSettings: ServerConnection.ISettings;
  private _minMs: number;
  private _maxMs: number;
  private _socket: WebSocket | null = null;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _attempt = 0;
  private _state: ConnectionState = 'connecting';
  private _isDisposed = false;
  private _messageReceived = new Signal<this, IEventNotice>(this);
  private _stateChanged = new Signal<this, ConnectionState>(this);
}

/** An event message with the time it arrived. */
export interface IEventNotice {
  message: EventMessage;
  /** `performance.now()` when the message arrived. */
  receivedAt: number;
}

/**
 * The EventsConnection statics.
 */
export namespace EventsConnection {
  export interface IOptions {
    serverSettings: ServerConnection.ISettings;
    /** First reconnect wait, in milliseconds. */
    reconnectMinMs?: number;
    /** Longest reconnect wait, in milliseconds. */
    reconnectMaxMs?: number;
  }
}
