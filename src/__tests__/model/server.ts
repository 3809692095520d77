/**
 * A fake server for the model specs: canned answers to `requestAPI` by path, and a
 * fake events socket. Each spec must `jest.mock('../../request')` and
 * `jest.mock('../../events')` as below (mocks are per file):
 *
 *     jest.mock('../../request', () => ({
 *       ...jest.requireActual('../../request'),
 *       requestAPI: jest.fn(),
 *       requestDownload: jest.fn()
 *     }));
 */

import { ServerConnection } from '@jupyterlab/services';
import { Signal } from '@lumino/signaling';

import { ConnectionState, IEventNotice } from '../../events';
import { NsightLabResponseError, requestAPI } from '../../request';
import { EventMessage, ISidebarSettings } from '../../types';

export const settings = ServerConnection.makeSettings({
  baseUrl: 'http://x/'
});

export const sidebarSettings: ISidebarSettings = {
  refreshInterval: 1,
  maxPoints: 5,
  defaultChart: 'duration',
  findingsShown: 3
};

export const status = {
  version: '0.1.0',
  store_path: '/tmp/store.sqlite',
  store_exists: true,
  schema_version: 1
};

/** Stands in for `EventsConnection`. */
export class FakeEvents {
  static last: FakeEvents | null = null;
  constructor() {
    FakeEvents.last = this;
  }
  messageReceived = new Signal<this, IEventNotice>(this);
  stateChanged = new Signal<this, ConnectionState>(this);
  state: ConnectionState = 'connecting';
  connect = jest.fn();
  dispose = jest.fn();
  emit(message: EventMessage): void {
    this.messageReceived.emit({ message, receivedAt: performance.now() });
  }
  setState(state: ConnectionState): void {
    this.state = state;
    this.stateChanged.emit(state);
  }
}

export type Route = (url: URL, init?: RequestInit) => unknown;

/**
 * Answer requests from a table of handlers keyed by path (`x/*` matches below
 * `x/`); anything else is a 404. Returns the calls made, as `METHOD endpoint`.
 */
export function serve(routes: Record<string, Route>): string[] {
  const mocked = requestAPI as jest.MockedFunction<typeof requestAPI>;
  const calls: string[] = [];
  mocked.mockImplementation((endPoint: string, _s, init) => {
    calls.push(`${init?.method ?? 'GET'} ${endPoint}`);
    const url = new URL(endPoint, 'http://x/');
    const path = url.pathname.slice(1);
    const key = Object.keys(routes).find(
      k => k === path || (k.endsWith('*') && path.startsWith(k.slice(0, -1)))
    );
    if (!key) {
      return Promise.reject(
        new NsightLabResponseError(404, `no ${path}`, 'NotFoundError')
      );
    }
    try {
      return Promise.resolve(routes[key](url, init)) as Promise<never>;
    } catch (error) {
      return Promise.reject(error);
    }
  });
  return calls;
}

/** Let pending promises and short timers run. */
export async function settle(ms = 10): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await new Promise(resolve => setTimeout(resolve, ms));
  }
}
