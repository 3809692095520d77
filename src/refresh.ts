/**
 * A gate for re-fetches: at most one request in flight and at least `intervalMs`
 * between two starts; requests that arrive meanwhile are folded into one more run.
 */

import { IDisposable } from '@lumino/disposable';

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
  }

  /** Least time between two starts, in milliseconds; may change at any time. */
  intervalMs: number;

  get isDisposed(): boolean {
    return this._isDisposed;
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
    if (this._isDisposed) {
      return;
    }
    this._pending = true;
    if (this._running || this._timer !== null) {
      return;
    }
    const wait = this._lastStart + this.intervalMs - this._now();
    if (this._lastStart < 0 || wait <= 0) {
      void this._run();
    } else {
      this._timer = setTimeout(() => {
        this._timer = null;
        void this._run();
      }, wait);
    }
  }

  dispose(): void {
    this._isDisposed = true;
    this._pending = false;
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
  }

  private async _run(): Promise<void> {
    if (this._isDisposed || !this._pending) {
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
  private _lastStart = -1;
  private _pending = false;
  private _running = false;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _isDisposed = false;
}
