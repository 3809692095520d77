/**
 * The interface the views hold the model by (`IRunsModel`) and the states it
 * exposes. The ids live in `constants.ts` and are re-exported here; the transport
 * types come from the leaf `transport.ts`, so this module imports neither
 * `request.ts` nor `events.ts`.
 */

import { IDisposable } from '@lumino/disposable';
import { ISignal } from '@lumino/signaling';

import type { ConnectionState, IDownload } from './transport';
import type {
  ICheck,
  ICompareResponse,
  ICounterTable,
  IFinding,
  IKernelRow,
  IRunRecord,
  ISessionFigures,
  ISessionFilters,
  ISessionSummary,
  ISidebarSettings,
  IStatusResponse,
  ISummaryRow,
  IVerdictTable,
  IViewChartChange
} from './types';

export {
  API_NAMESPACE,
  CommandIDs,
  PLUGIN_ID,
  SERVER_EXTENSION_MISSING_MSG,
  SIDEBAR_ID,
  SIDEBAR_SETTINGS_ID
} from './constants';
export type { ConnectionState, IDownload } from './transport';

/**
 * The live profile: the session of the current notebook (or the newest running one)
 * and its runs as they arrive.
 */
export interface ILiveState {
  session: ISessionSummary | null;
  /** The runs read so far, at most `maxPoints`, in store order. */
  runs: IRunRecord[];
  figures: ISessionFigures;
  /** The order to show the charts in, as served (`chart_order`); null until read. */
  chartOrder: string[] | null;
  /** The id of the newest run read; the next read asks for runs after it. */
  lastRunId: number;
  /**
   * The version of the view held (`view_version`); the next read asks for what
   * changed since it. Null: read the whole view (none yet, or an old server).
   */
  viewVersion?: string | null;
  /**
   * How this update's figures came from the previous update's (`from`): the
   * delta's chart changes, which a view drawing `from` can append instead of
   * drawing again; null when the view was read whole.
   */
  changes?: ILiveChanges | null;
  /**
   * `performance.now()` when the `runs-changed` event that this update answers
   * arrived; `null` when the update was not caused by an event.
   */
  eventAt: number | null;
  /** `performance.now()` of this update. */
  updatedAt: number | null;
}

/** What changed from one live update's figures to the next (a view delta). */
export interface ILiveChanges {
  /** The figures the changes apply to (the previous update's). */
  from: ISessionFigures;
  /** Chart name -> its change (`null`: gone). */
  charts: Record<string, IViewChartChange | null>;
}

/** One selected session, read in full. */
export interface ISessionDetail {
  session: ISessionSummary;
  figures: ISessionFigures;
  /** The order to show the charts in, as served (`chart_order`); null until read. */
  chartOrder: string[] | null;
  /** The summary table's rows, computed on the server over every run. */
  summary: ISummaryRow[];
  /** The counter table (all-zero rows flagged), computed on the server. */
  counters?: ICounterTable | null;
  /** What cannot be true of a region, and launch-bound notes (served). */
  checks?: ICheck[];
  /** Why its regions are slow and what would help, ranked (served). */
  findings?: IFinding[];
  /** Each region's kernels, as served (per-kernel backends; else empty). */
  kernels?: IKernelRow[];
  /** The verdict table against the session's baseline (served); null: none. */
  verdicts?: IVerdictTable | null;
  /** The version of the view held; the next read asks what changed since it. */
  viewVersion?: string | null;
  /** How these figures came from the previous read's (a delta), else null. */
  changes?: ILiveChanges | null;
}

/** What a session panel or a comparison panel shows: one session, or two compared. */
export interface ISelectionState {
  /** Selected session ids, in the order they were selected (at most two). */
  ids: number[];
  /** The session, when one is selected and read. */
  detail: ISessionDetail | null;
  /** The comparison, when two are selected and read. */
  comparison: ICompareResponse | null;
  loading: boolean;
  error: string | null;
}

/**
 * One session (one id) or a comparison (two ids) read on its own and read again as
 * its sessions get new runs: what a main-area panel shows. Dispose it with the panel.
 */
export interface ISelectionSource extends IDisposable {
  /** Emitted when what was read changes (loading, read, failed). */
  readonly changed: ISignal<ISelectionSource, void>;
  readonly state: ISelectionState;
}

/**
 * What the views read from the model and may ask of it.
 */
export interface IRunsModel extends IDisposable {
  readonly sessionsChanged: ISignal<IRunsModel, void>;
  readonly selectionChanged: ISignal<IRunsModel, void>;
  readonly liveChanged: ISignal<IRunsModel, void>;
  readonly statusChanged: ISignal<IRunsModel, void>;
  readonly connectionChanged: ISignal<IRunsModel, ConnectionState>;
  readonly connection: ConnectionState;
  readonly status: IStatusResponse | null;
  readonly statusError: string | null;
  readonly filters: ISessionFilters;
  /** Sessions matching the filters; `null` until the first page is read. */
  readonly total: number | null;
  readonly listLoading: boolean;
  readonly listError: string | null;
  readonly live: ILiveState;
  /**
   * The sessions picked in the history list, in the order picked (at most two:
   * the second is compared with the first).
   */
  readonly selectedIds: readonly number[];
  /** Emitted with its id when a session was deleted from the store. */
  readonly sessionDeleted: ISignal<IRunsModel, number>;
  settings: ISidebarSettings;
  /** Read the status, the list and the live session; open the websocket. */
  start(): Promise<void>;
  setFilters(filters: ISessionFilters): void;
  sessionAt(index: number): ISessionSummary | undefined;
  ensureRange(start: number, end: number): void;
  /**
   * Pick a session in the history list: `single` picks it alone; `add` adds it as
   * the second one, or un-picks it when picked. Returns the ids picked now.
   */
  select(id: number, mode?: 'single' | 'add'): readonly number[];
  clearSelection(): void;
  /**
   * Read session `ids[0]`, or compare `ids[0]` (a) with `ids[1]` (b), on its own; it
   * is read again as the sessions get new runs until it is disposed.
   */
  openSelection(ids: readonly number[]): ISelectionSource;
  /** @throws {NsightLabResponseError} When the server refuses. */
  deleteSession(id: number): Promise<void>;
  /** @throws {NsightLabResponseError} When the server refuses. */
  exportSession(
    id: number,
    format: 'csv' | 'parquet',
    what: 'runs' | 'results'
  ): Promise<IDownload>;
  /** @throws {NsightLabResponseError} When the session has no report. */
  downloadReport(id: number): Promise<IDownload>;
  setCurrentNotebook(path: string | null): void;
}
