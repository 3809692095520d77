/**
 * The events websocket: message parsing, the URL, and reconnecting with backoff.
 */

import { ServerConnection } from '@jupyterlab/services';

import {
  ConnectionState,
  EventsConnection,
  backoffDelay,
  eventsUrl,
  parseEventMessage
} from '../events';

class FakeSocket {
  static all: FakeSocket[] = [];
  constructor(readonly url: string) {
    FakeSocket.all.push(this);
  }
  onopen: (() => void) | null = null;
  onmessage: ((event: { data: unknown }) => void) | null = null;
  onclose: (() => void) | null = null;
  onerror: (() => void) | null = null;
  close = jest.fn();
}

describe('parseEventMessage', () => {
  it('reads the two event types and drops anything else', () => {
    expect(
      parseEventMessage(
        '{"type": "runs-changed", "session_id": 3, "last_run_id": 40}'
      )
    ).toEqual({ type: 'runs-changed', session_id: 3, last_run_id: 40 });
    expect(
      parseEventMessage('{"type": "sessions-changed", "latest_session_id": 5}')
    ).toEqual({ type: 'sessions-changed', latest_session_id: 5 });
    expect(parseEventMessage('{"type": "runs-changed"}')).toBeNull();
    expect(parseEventMessage('not json')).toBeNull();
    expect(parseEventMessage(42)).toBeNull();
  });
});

describe('backoffDelay', () => {
  it('doubles from the minimum up to the maximum', () => {
    expect([0, 1, 2, 3].map(a => backoffDelay(a, 250, 1000))).toEqual([
      250, 500, 1000, 1000
    ]);
  });
});

describe('EventsConnection', () => {
  beforeEach(() => {
    jest.useFakeTimers();
    FakeSocket.all = [];
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('connects to /nsight-lab/api/events, forwards messages and reconnects', () => {
    const serverSettings = ServerConnection.makeSettings({
      baseUrl: 'http://h/base/',
      wsUrl: 'ws://h/base/',
      WebSocket: FakeSocket as unknown as typeof WebSocket
    });
    expect(eventsUrl(serverSettings)).toMatch(
      /^ws:\/\/h\/base\/nsight-lab\/api\/events/
    );
    const connection = new EventsConnection({
      serverSettings,
      reconnectMinMs: 100,
      reconnectMaxMs: 400
    });
    const states: ConnectionState[] = [];
    const messages: unknown[] = [];
    connection.stateChanged.connect((_, s) => states.push(s));
    connection.messageReceived.connect((_, n) => messages.push(n.message));

    connection.connect();
    FakeSocket.all[0].onopen?.();
    FakeSocket.all[0].onmessage?.({
      data: '{"type": "sessions-changed", "latest_session_id": 1}'
    });
    FakeSocket.all[0].onclose?.();

    expect(states).toEqual(['open', 'reconnecting']);
    expect(messages).toEqual([
      { type: 'sessions-changed', latest_session_id: 1 }
    ]);
    jest.advanceTimersByTime(99);
    expect(FakeSocket.all.length).toBe(1);
    jest.advanceTimersByTime(1);
    expect(FakeSocket.all.length).toBe(2);
    // It keeps trying with longer waits while the server is away.
    FakeSocket.all[1].onclose?.();
    jest.advanceTimersByTime(199);
    expect(FakeSocket.all.length).toBe(2);
    jest.advanceTimersByTime(1);
    expect(FakeSocket.all.length).toBe(3);
    FakeSocket.all[2].onopen?.();
    expect(connection.state).toBe('open');

    connection.dispose();
    expect(FakeSocket.all[2].close).toHaveBeenCalled();
    expect(connection.state).toBe('closed');
  });
});
