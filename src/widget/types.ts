/**
 * The inline widget's model, mirroring the synced traits of
 * `nsight_lab/views/widget.py::NsightWidget` (keys identical, snake_case).
 */
import type { IChartAppend, IFigure } from '../charts/mount';

/** Where a profile session stands. */
export type WidgetStatus = 'running' | 'completed' | 'failed' | 'interrupted';

/** One cell of the summary table. */
export type SummaryValue = string | number | boolean | null;

/** One row of the summary table: column name -> value. */
export interface ISummaryRow {
  [column: string]: SummaryValue;
}

/** New points for the live charts: append `seq` (1, 2, ...), chart name -> change. */
export interface IFigureAppend {
  seq: number;
  charts: Record<string, IChartAppend>;
}

/** The synced traits of `NsightWidget`. */
export interface IWidgetTraits {
  session_id: number;
  status: WidgetStatus;
  configs_total: number;
  config_index: number;
  runs_done: number;
  runs_target: number;
  elapsed_s: number;
  /** Seconds left, estimated; null while unknown. */
  eta_s: number | null;
  message: string;
  /** Chart name (`duration`, `clocks`, `roofline`, `traffic`) -> figure JSON. */
  figures: Record<string, IFigure>;
  /** How many live appends `figures` already holds. */
  figures_seq: number;
  /** The latest live append (empty before the first). */
  append: IFigureAppend | Record<string, never>;
  summary: ISummaryRow[];
  /** Set when the session can be opened in the nsight-lab sidebar. */
  sidebar_link: string;
}

/** The part of anywidget's model that the view uses (AFM `model`). */
export interface IWidgetModel {
  get<K extends keyof IWidgetTraits>(key: K): IWidgetTraits[K];
  on(event: string, callback: () => void): void;
  off(event?: string | null, callback?: (() => void) | null): void;
}

/** The argument of AFM's `render`. */
export interface IRenderProps {
  model: IWidgetModel;
  el: HTMLElement;
}
