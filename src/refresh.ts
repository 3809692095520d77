/**
 * A gate for re-fetches: at most one request in flight and at least `intervalMs`
 * between two starts; requests that arrive meanwhile are folded into one more run.
 *
 * A run that may start at once starts at once (synchronously); a later one is
 * scheduled on a `Poll` (@lumino/polling) that never ticks by itself.
 */

import { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';

export class RefreshGate implements IDisposable {
  /**
   * @param task The re-fetch; its promise settles when the refresh is done.
   * @param intervalMs Least time between two starts, in milliseconds.
   * @param now The clock (milliseconds), replaceable in tests.
   */
  constructor(
    task: () => Promise<void>,
    intervalMs: number,
    now: () => number = () => performance.now()
  ) {
    this._task = task;
    this.intervalMs = intervalMs;
    this._now = now;
    this._poll = new Poll<void, Error, 'requested'>({
      auto: false,
      factory: () => this._run(),
      frequency: { backoff: false, interval: Poll.NEVER, max: Poll.NEVER },
      name: 'nsight-lab:refresh',
      standby: 'never'
    });
  }

  /** Least time between two starts, in milliseconds; may change at any time. */
  intervalMs: number;

  get isDisposed(): boolean {
    return this._poll.isDisposed;
  }

  /** Whether a run is in flight. */
  get busy(): boolean {
    return this._running;
  }

  /**
   * Ask for a refresh: now when allowed, else once the interval has passed or the
   * running refresh has finished.
   */
  request(): void {
    if (this.isDisposed) {
      return;
    }
    this._pending = true;
    if (this._running || this._scheduled) {
      return;
    }
    const wait =
      this._lastStart < 0 ? 0 : this._lastStart + this.intervalMs - this._now();
    if (wait <= 0) {
      void this._run();
      return;
    }
    this._scheduled = true;
    void this._poll.schedule({ interval: wait, phase: 'requested' });
  }

  dispose(): void {
    this._pending = false;
    this._poll.dispose();
  }

  private async _run(): Promise<void> {
    this._scheduled = false;
    if (this.isDisposed || !this._pending || this._running) {
      return;
    }
    this._pending = false;
    this._running = true;
    this._lastStart = this._now();
    try {
      await this._task();
    } catch (error) {
      console.error('[nsight-lab] refresh failed', error);
    } finally {
      this._running = false;
    }
    if (this._pending) {
      this._pending = false;
      this.request();
    }
  }

  private _task: () => Promise<void>;
  private _now: () => number;
  private _poll: Poll<void, Error, 'requested'>;
  private _lastStart = -1;
  private _pending = false;
  private _running = false;
  private _scheduled = false;
}
