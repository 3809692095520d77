/**
 * RefreshGate: one refresh at a time, at most one per interval, none lost.
 */

import { RefreshGate } from '../refresh';

describe('RefreshGate', () => {
  beforeEach(() => {
    jest.useFakeTimers();
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('runs at once, then folds requests within the interval into one more run', async () => {
    let now = 0;
    const resolvers: (() => void)[] = [];
    const task = jest.fn(
      () => new Promise<void>(resolve => resolvers.push(resolve))
    );
    const gate = new RefreshGate(task, 100, () => now);

    gate.request();
    expect(task).toHaveBeenCalledTimes(1);
    expect(gate.busy).toBe(true);
    gate.request();
    gate.request();
    expect(task).toHaveBeenCalledTimes(1);

    now = 30;
    resolvers[0]();
    await jest.advanceTimersByTimeAsync(0);
    // The folded request waits for the interval since the first start.
    expect(task).toHaveBeenCalledTimes(1);
    now = 99;
    await jest.advanceTimersByTimeAsync(69);
    expect(task).toHaveBeenCalledTimes(1);
    now = 100;
    await jest.advanceTimersByTimeAsync(1);
    expect(task).toHaveBeenCalledTimes(2);

    resolvers[1]();
    await jest.advanceTimersByTimeAsync(1000);
    expect(task).toHaveBeenCalledTimes(2);
    gate.dispose();
  });

  it('keeps going after a failed refresh', async () => {
    jest.spyOn(console, 'error').mockImplementation(() => undefined);
    let now = 0;
    const task = jest
      .fn<Promise<void>, []>()
      .mockRejectedValueOnce(new Error('boom'))
      .mockResolvedValue(undefined);
    const gate = new RefreshGate(task, 10, () => now);

    gate.request();
    await jest.advanceTimersByTimeAsync(0);
    expect(console.error).toHaveBeenCalled();
    now = 10;
    gate.request();
    expect(task).toHaveBeenCalledTimes(2);
    gate.dispose();
    jest.restoreAllMocks();
  });

  it('runs nothing scheduled once disposed', async () => {
    let now = 0;
    const task = jest.fn(() => Promise.resolve());
    const gate = new RefreshGate(task, 100, () => now);
    gate.request();
    await jest.advanceTimersByTimeAsync(0);
    now = 10;
    gate.request();

    gate.dispose();
    now = 500;
    await jest.advanceTimersByTimeAsync(500);

    expect(task).toHaveBeenCalledTimes(1);
    expect(gate.isDisposed).toBe(true);
    gate.request();
    expect(task).toHaveBeenCalledTimes(1);
  });
});
