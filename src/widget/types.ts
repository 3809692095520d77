/**
 * The inline widget's model, mirroring the synced traits of
 * `nsight_lab/views/widget.py::NsightWidget` (keys identical, snake_case).
 */
import type { AnyModel, RenderProps } from '@anywidget/types';

import type { IChartAppend, IFigure } from '../charts/mount';
import type {
  ICheck,
  IFinding,
  IProgress,
  ISummaryRow,
  SessionStatus,
  SummaryValue
} from '../types';

export type { IProgress, ISummaryRow, SummaryValue };

/** Where a profile session stands. */
export type WidgetStatus = SessionStatus;

/** New points for the live charts: append `seq` (1, 2, ...), chart name -> change. */
export interface IFigureAppend {
  seq: number;
  charts: Record<string, IChartAppend>;
}

/** The synced traits of `NsightWidget`. */
export interface IWidgetTraits {
  session_id: number;
  status: WidgetStatus;
  /**
   * Where the profile stands, computed in Python (contract/progress.py); empty before
   * the first update. Rendered as it is: `text` and `fraction`.
   */
  progress: IProgress | Record<string, never>;
  message: string;
  /** Chart name (`duration`, `clocks`, `roofline`, `traffic`) -> figure JSON. */
  figures: Record<string, IFigure>;
  /** The order to draw the charts in (nsight_lab/figures `CHART_ORDER`). */
  chart_order: string[];
  /** How many live appends `figures` already holds. */
  figures_seq: number;
  /** The latest live append (empty before the first). */
  append: IFigureAppend | Record<string, never>;
  /** The summary table's rows (nsight_lab/results.py `summary_rows`). */
  summary: ISummaryRow[];
  /** Set when the session can be opened in the nsight-lab sidebar. */
  sidebar_link: string;
  /**
   * A final output's quality headline ('' when no region is flagged) and its
   * checks (flags with cause and action, notes), said before the table; the live
   * widget has none.
   */
  headline?: string;
  checks?: ICheck[];
  /**
   * A final output's findings (why its regions are slow, ranked; `top` marks the
   * three shown first, the rest folded), under the checks; the live widget has
   * none.
   */
  findings?: IFinding[];
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
