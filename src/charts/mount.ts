/**
 * Mount a plotly figure built in Python (`nsight_lab/figures.py`) into an element.
 *
 * This is the only module that imports plotly.js: the sidebar and the inline widget
 * both draw through `mountChart`, so one figure JSON looks the same everywhere.
 * Figures are drawn as they are (plotly renders trace names as SVG text); the only
 * change is the host theme's colours (see `theme.ts`).
 */
import Plotly from 'plotly.js-basic-dist-min';

import { Layout, onThemeChange, readTheme, themeLayout } from './theme';

/** A plotly trace as JSON. */
export type Trace = Record<string, unknown>;

/** A plotly figure as JSON: what `fig.to_plotly_json()` gives in Python. */
export interface IFigure {
  data: Trace[];
  layout?: Layout;
}

/** How a chart is mounted. */
export interface IMountOptions {
  /** Re-apply the theme when the host's theme changes (default true). */
  watchTheme?: boolean;
  /** Show plotly's mode bar: always, on hover (default) or never. */
  displayModeBar?: boolean | 'hover';
  /** A static picture: no zoom, pan or hover (default false). */
  staticPlot?: boolean;
}

/** A mounted chart. */
export interface IChartHandle {
  /** The element the chart is drawn in. */
  readonly element: HTMLElement;
  /** The figure last drawn. */
  readonly figure: IFigure;
  /** Draw `figure` in place (plotly diffs it against the current one). */
  update(figure: IFigure): void;
  /** Remove the chart and stop watching the theme and the element's size. */
  dispose(): void;
  /** Whether `dispose` was called. */
  readonly isDisposed: boolean;
}

/** A deep copy: plotly writes into the objects it draws (ranges, uids). */
function copyFigure(figure: IFigure): IFigure {
  return JSON.parse(JSON.stringify(figure)) as IFigure;
}

/**
 * Draw `figure` into `el` and keep it in the host's theme.
 *
 * @returns A handle to update the figure in place and to dispose of the chart.
 */
export function mountChart(
  el: HTMLElement,
  figure: IFigure,
  options: IMountOptions = {}
): IChartHandle {
  let current = figure;
  let disposed = false;
  const config = {
    responsive: true,
    displaylogo: false,
    displayModeBar: options.displayModeBar ?? 'hover',
    staticPlot: options.staticPlot ?? false
  };

  const draw = (): void => {
    if (disposed) {
      return;
    }
    const copy = copyFigure(current);
    const layout = themeLayout(copy.layout, readTheme(el));
    // Keep the user's zoom and legend choices across live updates.
    layout.uirevision = layout.uirevision ?? 'nsight-lab';
    Plotly.react(el, copy.data ?? [], layout, config).catch(
      (reason: unknown) => {
        console.error('[nsight-lab] a chart failed to draw:', reason);
      }
    );
  };

  draw();
  const stopTheme =
    options.watchTheme === false ? () => undefined : onThemeChange(draw);
  let resize: ResizeObserver | null = null;
  if (typeof ResizeObserver !== 'undefined') {
    resize = new ResizeObserver(() => {
      if (!disposed && el.isConnected && el.clientWidth > 0) {
        // A chart hidden again before the resize ran rejects; nothing to do then.
        Promise.resolve(Plotly.Plots.resize(el)).catch(() => undefined);
      }
    });
    resize.observe(el);
  }

  return {
    element: el,
    get figure(): IFigure {
      return current;
    },
    get isDisposed(): boolean {
      return disposed;
    },
    update(next: IFigure): void {
      current = next;
      draw();
    },
    dispose(): void {
      if (disposed) {
        return;
      }
      disposed = true;
      stopTheme();
      resize?.disconnect();
      Plotly.purge(el);
    }
  };
}
