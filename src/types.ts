/**
 * Wire types: keys exactly as the Python server sends them (snake_case).
 */

/** The chart a session opens on (schema/sidebar.json `defaultChart`). */
export type ChartKind = 'duration' | 'clocks' | 'roofline' | 'traffic';

/**
 * `GET /nsight-lab/api/status` (nsight_lab/server/handlers.py `StatusHandler`).
 */
export interface IStatusResponse {
  /** The installed nsight_lab version. */
  version: string;
  /** Absolute path of the SQLite run store on the server's machine. */
  store_path: string;
  /** Whether the store file exists yet (it is created by the first profile). */
  store_exists: boolean;
  /** The record schema version of nsight_lab.records. */
  schema_version: number;
}

/** The JSON body of an error answered by an nsight-lab handler. */
export interface IErrorBody {
  message: string;
  error: string;
}

/** The sidebar settings (schema/sidebar.json). */
export interface ISidebarSettings {
  /** Refresh interval in milliseconds (>= 100). */
  refreshInterval: number;
  /** Maximum number of points per chart. */
  maxPoints: number;
  /** The chart shown first. */
  defaultChart: ChartKind;
}

/** Defaults of schema/sidebar.json, used until the settings registry answers. */
export const DEFAULT_SIDEBAR_SETTINGS: ISidebarSettings = {
  refreshInterval: 1000,
  maxPoints: 2000,
  defaultChart: 'duration'
};
