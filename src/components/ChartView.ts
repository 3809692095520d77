/**
 * One chart of the sidebar: a titled box that mounts a server-built figure through
 * `mountChart`, or says in words why there is nothing to draw.
 */

import { Widget } from '@lumino/widgets';

import { hasData } from '../charts/grid';
import { IChartHandle, mountChart } from '../charts/mount';
import { ChartKind, IPlotlyFigure } from '../types';
import { h } from './dom';

/** The chart titles. */
export const CHART_TITLES: Record<ChartKind, string> = {
  duration: 'Duration per run',
  clocks: 'SM clock and temperature per run',
  roofline: 'Roofline',
  traffic: 'DRAM byte traffic'
};

/** What a chart needs when the server sent no figure (or one without data). */
export const CHART_MISSING: Record<ChartKind, string> = {
  duration: 'no runs stored yet',
  clocks:
    'clocks and temperature need NVML telemetry: run on an NVIDIA GPU with nvidia-ml-py installed (the cpu backend reads none)',
  roofline:
    'roofline needs FLOP/byte counts: run with --derive tflops or --backend ncu',
  traffic:
    'byte traffic needs DRAM byte counts: run with --backend ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum, or profile torch ops whose bytes can be modelled'
};

export { hasData } from '../charts/grid';

/**
 * A chart box. `setFigure` draws (or redraws in place) or shows the missing words.
 */
export class ChartView extends Widget {
  constructor(kind: ChartKind) {
    super();
    this.kind = kind;
    this.addClass('jp-nsightLab-ChartView');
    this.node.dataset.chart = kind;
    this.node.appendChild(
      h('div', 'jp-nsightLab-ChartView-title', CHART_TITLES[kind])
    );
    this._message = h('div', 'jp-nsightLab-ChartView-missing');
    this._plot = h('div', 'jp-nsightLab-ChartView-plot');
    this.node.append(this._message, this._plot);
  }

  readonly kind: ChartKind;

  /** Whether a figure is mounted. */
  get mounted(): boolean {
    return this._handle !== null;
  }

  /**
   * Draw `figure`, or show why there is none.
   *
   * @param figure The server's figure for this chart, `null`/absent when none.
   * @param missing The words to show when there is nothing to draw.
   */
  setFigure(
    figure: IPlotlyFigure | null | undefined,
    missing: string = CHART_MISSING[this.kind]
  ): void {
    if (!hasData(figure) || !figure) {
      this._message.textContent = missing;
      this._message.hidden = false;
      this._plot.hidden = true;
      this._unmount();
      this.node.dataset.state = 'missing';
      return;
    }
    this._message.textContent = '';
    this._message.hidden = true;
    this._plot.hidden = false;
    if (this._handle) {
      this._handle.update(figure);
    } else {
      this._handle = mountChart(this._plot, figure);
    }
    this.node.dataset.state = 'drawn';
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._unmount();
    super.dispose();
  }

  private _unmount(): void {
    if (this._handle) {
      this._handle.dispose();
      this._handle = null;
    }
  }

  private _handle: IChartHandle | null = null;
  private _message: HTMLDivElement;
  private _plot: HTMLDivElement;
}
