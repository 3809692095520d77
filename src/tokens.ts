/**
 * Identifiers shared by the nsight-lab frontend (plugin, command and widget ids) and
 * the interface the views hold the model by.
 */

import { IDisposable } from '@lumino/disposable';
import { ISignal } from '@lumino/signaling';

import type { ConnectionState } from './events';
import type { IDownload } from './request';
import type {
  ICompareResponse,
  IRunRecord,
  ISessionFigures,
  ISessionFilters,
  ISessionSummary,
  ISidebarSettings,
  IStatusResponse
} from './types';

/** The id of the main nsight-lab plugin. */
export const PLUGIN_ID = 'nsight-lab:plugin';

/** The settings of the sidebar live under this id (schema/sidebar.json). */
export const SIDEBAR_SETTINGS_ID = 'nsight-lab:sidebar';

/** The DOM id of the sidebar widget, also its layout-restorer key. */
export const SIDEBAR_ID = 'nsight-lab-sidebar';

/** The URL namespace of the server extension, below the server's base URL. */
export const API_NAMESPACE = 'nsight-lab/api';

/** The message shown when the server extension does not answer. */
export const SERVER_EXTENSION_MISSING_MSG =
  'nsight-lab server extension is not enabled; pip install nsight-lab and restart JupyterLab';

/**
 * Command ids, `nsight-lab:<verb>-<noun>`.
 */
export namespace CommandIDs {
  export const openSidebar = 'nsight-lab:open-sidebar';
}

/**
 * The live profile: the session of the current notebook (or the newest running one)
 * and its runs as they arrive.
 */
export interface ILiveState {
  session: ISessionSummary | null;
  /** The runs read so far, at most `maxPoints`, in store order. */
  runs: IRunRecord[];
  figures: ISessionFigures;
  /** The id of the newest run read; the next read asks for runs after it. */
  lastRunId: number;
  /**
   * `performance.now()` when the `runs-changed` event that this update answers
   * arrived; `null` when the update was not caused by an event.
   */
  eventAt: number | null;
  /** `performance.now()` of this update. */
  updatedAt: number | null;
}

/** One selected session, read in full. */
export interface ISessionDetail {
  session: ISessionSummary;
  runs: IRunRecord[];
  figures: ISessionFigures;
  lastRunId: number;
}

/** The selection of the history list: none, one session, or two to compare. */
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
  readonly selection: ISelectionState;
  settings: ISidebarSettings;
  /** Read the status, the list and the live session; open the websocket. */
  start(): Promise<void>;
  setFilters(filters: ISessionFilters): void;
  sessionAt(index: number): ISessionSummary | undefined;
  ensureRange(start: number, end: number): void;
  select(id: number, mode?: 'single' | 'add'): Promise<void>;
  clearSelection(): void;
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
