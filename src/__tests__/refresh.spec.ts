/**
 * RefreshGate: one refresh at a time, at most one per interval, none lost.
 */

import { RefreshGate } from '../refresh';

describe('RefreshGate', () => {
  it('runs at once, then folds requests within the interval into one more run', async () => {
    let now = 0;
    const resolvers: (() => void)[] = [];
    const task = jest.fn(
      () => new Promise<void>(resolve => resolvers.push(resolve))
    );
    jest.useFakeTimers();
    const gate = new RefreshGate(task, 100, () => now);

    gate.request();
    expect(task).toHaveBeenCalledTimes(1);
    gate.request();
    gate.request();
    expect(task).toHaveBeenCalledTimes(1);

    now = 30;
    resolvers[0]();
    await Promise.resolve();
    await Promise.resolve();
    // The folded request waits for the interval since the first start.
    expect(task).toHaveBeenCalledTimes(1);
    now = 100;
    jest.advanceTimersByTime(70);
    expect(task).toHaveBeenCalledTimes(2);

    resolvers[1]();
    await Promise.resolve();
    await Promise.resolve();
    jest.advanceTimersByTime(1000);
    expect(task).toHaveBeenCalledTimes(2);
    gate.dispose();
    jest.useRealTimers();
  });
});
