/**
 * The session list of the history section: filtered, read page by page as the
 * virtual list scrolls, read again (rate-limited) when sessions change.
 */

import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { RefreshGate } from '../refresh';
import { describeError, requestAPI, withQuery } from '../request';
import {
  EMPTY_FILTERS,
  ISessionFilters,
  ISessionSummary,
  ISessionsResponse
} from '../types';
import { IModelContext } from './context';

/** Sessions per page of the list endpoint. */
export const PAGE_SIZE = 50;

/** The query of one list page. */
export function sessionsQuery(
  filters: ISessionFilters,
  page: number,
  pageSize: number = PAGE_SIZE
): string {
  return withQuery('sessions', {
    ...filters,
    limit: pageSize,
    offset: page * pageSize
  });
}

interface IPage {
  generation: number;
  rows: ISessionSummary[];
}

/**
 * The session list: pages keyed by their index, dropped when the filters change.
 */
export class SessionListModel implements IDisposable {
  constructor(context: IModelContext) {
    this._context = context;
    this._gate = new RefreshGate(
      () => this.reload(),
      context.settings().refreshInterval
    );
  }

  /** Emitted when a page, the total, the loading state or the error changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }
  get isDisposed(): boolean {
    return this._isDisposed;
  }
  get filters(): ISessionFilters {
    return this._filters;
  }
  /** Sessions matching the filters; `null` until the first page is read. */
  get total(): number | null {
    return this._total;
  }
  get loading(): boolean {
    return this._loading;
  }
  get error(): string | null {
    return this._error;
  }

  /** Least time between two re-reads asked for by {@link requestReload}. */
  set intervalMs(value: number) {
    this._gate.intervalMs = value;
  }

  /** Apply new filters: the list starts again from its first page. */
  setFilters(filters: ISessionFilters): void {
    this._filters = { ...filters };
    this._pages.clear();
    this._total = null;
    void this.reload();
  }

  /** The session at list position `index`, when its page has been read. */
  sessionAt(index: number): ISessionSummary | undefined {
    const page = this._pages.get(Math.floor(index / PAGE_SIZE));
    return page?.rows[index % PAGE_SIZE];
  }

  /** Read the pages that hold list positions `[start, end)` unless already read. */
  ensureRange(start: number, end: number): void {
    if (end <= start) {
      return;
    }
    const first = Math.floor(start / PAGE_SIZE);
    const last = Math.floor((end - 1) / PAGE_SIZE);
    for (let page = first; page <= last; page++) {
      const known = this._pages.get(page);
      if (known?.generation === this._generation) {
        continue;
      }
      void this._fetchPage(page);
    }
  }

  /** Read the first page again; pages shown before are read again when asked for. */
  async reload(): Promise<void> {
    this._generation += 1;
    await this._fetchPage(0);
    this._changed.emit();
  }

  /** Ask for a reload, folded with others and at most one per interval. */
  requestReload(): void {
    this._gate.request();
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._gate.dispose();
    Signal.clearData(this);
  }

  private async _fetchPage(page: number): Promise<void> {
    const generation = this._generation;
    const key = `${generation}:${page}`;
    if (this._inFlight.has(key)) {
      return;
    }
    this._inFlight.add(key);
    this._loading = true;
    try {
      const response = await requestAPI<ISessionsResponse>(
        sessionsQuery(this._filters, page),
        this._context.serverSettings
      );
      if (generation !== this._generation) {
        return;
      }
      this._pages.set(page, { generation, rows: response.sessions });
      this._total = response.total;
      this._error = null;
    } catch (error) {
      if (generation !== this._generation) {
        return;
      }
      console.error('[nsight-lab] session list request failed', error);
      this._error = describeError(error);
    } finally {
      this._inFlight.delete(key);
      this._loading = this._inFlight.size > 0;
    }
    this._changed.emit();
  }

  private _context: IModelContext;
  private _gate: RefreshGate;
  private _isDisposed = false;
  private _filters: ISessionFilters = EMPTY_FILTERS;
  private _pages = new Map<number, IPage>();
  private _inFlight = new Set<string>();
  private _generation = 0;
  private _total: number | null = null;
  private _loading = false;
  private _error: string | null = null;
  private _changed = new Signal<this, void>(this);
}
