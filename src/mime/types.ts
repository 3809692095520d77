/**
 * The final output of a `%%nsight` cell, as nsight_lab/views/bundle.py writes it
 * under {@link SESSION_MIME_TYPE}: keys exactly as Python sends them (snake_case),
 * the same as the inline widget's traits of the same names.
 */
import type { IFigure } from '../charts/mount';
import type {
  ICheck,
  IFinding,
  IProgress,
  ISummaryRow,
  IVerdictTable,
  SessionStatus
} from '../types';

/** nsight-lab's session JSON (nsight_lab/views/bundle.py `MIME_TYPE`). */
export const SESSION_MIME_TYPE = 'application/vnd.nsight-lab.session+json';

/** The newest shape this renderer reads (bundle.py `BUNDLE_VERSION`). */
export const BUNDLE_VERSION = 1;

/** The session of one cell's final output (bundle.py `session_json`). */
export interface ISessionBundle {
  /** The shape's version; a newer one than {@link BUNDLE_VERSION} is refused. */
  version: number;
  session_id: number;
  status: SessionStatus;
  /** Where the profile ended (nsight_lab/contract/progress.py); empty if it never started. */
  progress: IProgress | Record<string, never>;
  /** The header (backend, device, notes) and why the session ended so. */
  message: string;
  /** The order to draw the charts in (nsight_lab/figures `CHART_ORDER`). */
  chart_order: string[];
  /** Chart name -> figure JSON (nsight_lab/figures `figures_to_json`), floats rounded. */
  figures: Record<string, IFigure>;
  /** The summary table's rows (nsight_lab/results.py `summary_rows`). */
  summary: ISummaryRow[];
  /**
   * The summary's columns in order: a saved notebook's JSON has its keys sorted,
   * so the rows' own key order is lost on reopening.
   */
  summary_columns: string[];
  /** The session's link in the sidebar ('' for none). */
  sidebar_link: string;
  /**
   * The verdict table against `--baseline NAME`, drawn under the summary; null
   * without one (absent in outputs saved before baselines existed).
   */
  verdicts?: IVerdictTable | null;
  /**
   * The quality headline ('' when no region is flagged) and the checks (flags
   * with cause and action, notes): said first, before the table (absent in
   * outputs saved before they were kept).
   */
  headline?: string;
  checks?: ICheck[];
  /**
   * Why its regions are slow and what would help, ranked (`top`: the three shown
   * first, the rest folded): under the checks, before the table (absent in
   * outputs saved before findings existed).
   */
  findings?: IFinding[];
}
