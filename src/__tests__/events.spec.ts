/**
 * The events websocket: message parsing, the URL, and reconnecting with backoff.
 */

import { ServerConnection } from '@jupyterlab/services';

import {
  ConnectionState,
  EventsConnection,
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

describe('EventsConnection', () => {
  const serverSettings = ServerConnection.makeSettings({
    baseUrl: 'http://h/base/',
    wsUrl: 'ws://h/base/',
    WebSocket: FakeSocket as unknown as typeof WebSocket
  });

  beforeEach(() => {
    jest.useFakeTimers();
    FakeSocket.all = [];
  });
  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('connects to /nsight-lab/api/events, forwards messages and reconnects', async () => {
    // The poll draws each wait between the interval and its ceiling: take the ceiling.
    jest.spyOn(Math, 'random').mockReturnValue(0.9999);
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
    await jest.advanceTimersByTimeAsync(99);
    expect(FakeSocket.all.length).toBe(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(FakeSocket.all.length).toBe(2);
    // It keeps trying with longer waits while the server is away.
    FakeSocket.all[1].onclose?.();
    await jest.advanceTimersByTimeAsync(199);
    expect(FakeSocket.all.length).toBe(2);
    await jest.advanceTimersByTimeAsync(1);
    expect(FakeSocket.all.length).toBe(3);
    FakeSocket.all[2].onclose?.();
    await jest.advanceTimersByTimeAsync(399);
    expect(FakeSocket.all.length).toBe(3);
    await jest.advanceTimersByTimeAsync(1);
    expect(FakeSocket.all.length).toBe(4);
    // Never longer than the maximum.
    FakeSocket.all[3].onclose?.();
    await jest.advanceTimersByTimeAsync(400);
    expect(FakeSocket.all.length).toBe(5);
    expect(states).toEqual(['open', 'reconnecting']);
    FakeSocket.all[4].onopen?.();
    expect(connection.state).toBe('open');
    // Once open, nothing more is tried until the next drop, which starts short again.
    await jest.advanceTimersByTimeAsync(5000);
    expect(FakeSocket.all.length).toBe(5);
    FakeSocket.all[4].onclose?.();
    await jest.advanceTimersByTimeAsync(100);
    expect(FakeSocket.all.length).toBe(6);
    FakeSocket.all[5].onopen?.();

    connection.dispose();
    expect(FakeSocket.all[5].close).toHaveBeenCalled();
    expect(connection.state).toBe('closed');
    await jest.advanceTimersByTimeAsync(1000);
    expect(FakeSocket.all.length).toBe(6);
  });

  it('stands by while the page is hidden and tries again once shown', async () => {
    let hidden = false;
    const connection = new EventsConnection({
      serverSettings,
      reconnectMinMs: 100,
      reconnectMaxMs: 400,
      // What 'when-hidden' reads from the document, told by the test.
      standby: () => hidden
    });
    connection.connect();
    FakeSocket.all[0].onopen?.();
    hidden = true;
    FakeSocket.all[0].onclose?.();

    await jest.advanceTimersByTimeAsync(1000);
    expect(FakeSocket.all.length).toBe(1);
    expect(connection.state).toBe('reconnecting');

    hidden = false;
    await jest.advanceTimersByTimeAsync(100);
    expect(FakeSocket.all.length).toBe(2);
    connection.dispose();
  });
});
