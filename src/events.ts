/**
 * The `events` websocket of the server extension: it tells which session changed; the
 * model then re-reads that session over REST.
 *
 * Reconnecting is a `Poll` (@lumino/polling): after a drop it waits
 * {@link RECONNECT_MIN_MS}, then backs off while attempts fail (each wait at most
 * twice the one before, at most {@link RECONNECT_MAX_MS}), and stands by while the
 * page is hidden.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import { API_NAMESPACE } from './constants';
import type { ConnectionState } from './transport';
import { EventMessage } from './types';

export type { ConnectionState } from './transport';

/** The least and the most time to wait before reconnecting, in milliseconds. */
export const RECONNECT_MIN_MS = 250;
export const RECONNECT_MAX_MS = 10000;

/** How much the longest wait grows per failed attempt (the Poll's `backoff`). */
export const RECONNECT_BACKOFF = 2;

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
    const minMs = options.reconnectMinMs ?? RECONNECT_MIN_MS;
    this._minMs = minMs;
    this._reconnect = new Poll<void, Error, 'dropped'>({
      auto: false,
      factory: () => this._open(),
      name: 'nsight-lab:events-reconnect',
      standby: options.standby ?? 'when-hidden'
    });
    // Set after construction: the constructor raises `max` to at least 30 s.
    this._reconnect.frequency = {
      interval: minMs,
      backoff: RECONNECT_BACKOFF,
      max: Math.max(minMs, options.reconnectMaxMs ?? RECONNECT_MAX_MS)
    };
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

  /** Open the socket now; a no-op when it is open, opening or reconnecting. */
  connect(): void {
    if (
      this._isDisposed ||
      this._socket ||
      this._state === 'reconnecting' ||
      this._state === 'open'
    ) {
      return;
    }
    this._open().catch(() => this._dropped());
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._reconnect.dispose();
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

  /**
   * One attempt: open a socket. Resolves once it is open; rejects when it closes
   * before (the reconnect poll then backs off). A drop after the open is
   * {@link _dropped}.
   */
  private _open(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this._isDisposed) {
        reject(new Error('the events connection is disposed'));
        return;
      }
      let socket: WebSocket;
      try {
        const Ctor = this._serverSettings.WebSocket;
        socket = new Ctor(eventsUrl(this._serverSettings));
      } catch (error) {
        console.error('[nsight-lab] cannot open the events websocket', error);
        reject(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      let opened = false;
      this._socket = socket;
      socket.onopen = () => {
        opened = true;
        // Stop reconnecting; the tick this attempt belongs to is left behind.
        void this._reconnect.stop();
        this._setState('open');
        resolve();
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
        if (this._socket !== socket) {
          return;
        }
        this._socket = null;
        if (opened) {
          this._dropped();
        } else {
          reject(new Error('the events websocket closed before it opened'));
        }
      };
      socket.onerror = () => {
        // onclose follows and reconnects.
      };
    });
  }

  /** The socket is gone: try again after the shortest wait, then back off. */
  private _dropped(): void {
    if (this._isDisposed) {
      return;
    }
    this._setState('reconnecting');
    void this._reconnect.schedule({ interval: this._minMs, phase: 'dropped' });
  }

  private _setState(state: ConnectionState): void {
    if (this._state !== state) {
      this._state = state;
      this._stateChanged.emit(state);
    }
  }

  private _serverSettings: ServerConnection.ISettings;
  private _minMs: number;
  private _reconnect: Poll<void, Error, 'dropped'>;
  private _socket: WebSocket | null = null;
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
    /** When reconnecting stands by (default: while the page is hidden). */
    standby?: Poll.Standby | (() => boolean | Poll.Standby);
  }
}
