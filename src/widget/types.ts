/**
 * The inline widget's model, mirroring the synced traits of
 * `nsight_lab/views/widget.py::NsightWidget` (keys identical, snake_case).
 */
import type { AnyModel, RenderProps } from '@anywidget/types';

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

/** The part of anywidget's model (`@anywidget/types` `AnyModel`) that the view uses. */
export interface IWidgetModel extends Pick<
  AnyModel<IWidgetTraits>,
  'get' | 'off'
> {
  /** The view listens to change events only (`change`, `change:<trait>`). */
  on(eventName: string, callback: () => void): void;
}

/** The part of AFM's `render` argument (`RenderProps`) that the view uses. */
export type IRenderProps = Pick<RenderProps<IWidgetTraits>, 'el'> & {
  model: IWidgetModel;
};
