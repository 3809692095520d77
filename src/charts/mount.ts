/**
 * Mount a plotly figure built in Python (`nsight_lab/figures/`) into an element.
 *
 * This is the only module that imports plotly.js: the sidebar and the inline widget
 * both draw through `mountChart`, so one figure JSON looks the same everywhere.
 * Figures are drawn as they are (plotly renders trace names as SVG text); the only
 * changes are the host theme's colours (see `theme.ts`) and the legend, placed
 * below the plot in the rows it needs at the chart's width (see `legend.ts`).
 */
import Plotly from 'plotly.js-basic-dist-min';

import { appendToFigure, IChartAppend, IFigure, Trace } from './append';
import { decimateFigure, overPoints } from './decimate';
import { DEFAULT_CHART_HEIGHT, legendBelow, legendEntries } from './legend';
import { onThemeChange, readTheme, themeLayout } from './theme';
import type { Layout } from './theme';

export {
  appendToFigure,
  mergeLayout,
  type IChartAppend,
  type IExtend,
  type IFigure,
  type Trace
} from './append';

/** How a chart is mounted. */
export interface IMountOptions {
  /** Re-apply the theme when the host's theme changes (default true). */
  watchTheme?: boolean;
  /** Show plotly's mode bar: always, on hover (default) or never. */
  displayModeBar?: boolean | 'hover';
  /** A static picture: no zoom, pan or hover (default false). */
  staticPlot?: boolean;
  /**
   * Draw the figure's own title (default true). False in a compact view that names
   * the chart above it: the title's top margin goes to the plot.
   */
  title?: boolean;
  /**
   * At most this many points drawn per scatter trace (`decimate.ts`: each
   * bucket's lowest and highest kept); the figure keeps every point. A chart
   * drawn thinned is drawn again (`react` of the thinned copy) on an append,
   * not extended. Default: every point.
   */
  drawnPoints?: number;
  /**
   * With `drawnPoints`: a thinned chart's appends draw it at most once per this
   * many milliseconds (the latest figure, in a task of its own: the other
   * charts of the update draw in theirs). Default 0: at once.
   */
  drawEveryMs?: number;
}

/** The top margin of a chart drawn without its title: room for the mode bar. */
export const UNTITLED_TOP_MARGIN = 12;

/** `layout` without its title, its top margin shrunk to {@link UNTITLED_TOP_MARGIN}. */
export function withoutTitle(layout: Layout): Layout {
  const out: Layout = { ...layout };
  delete out.title;
  const margin =
    typeof out.margin === 'object' && out.margin !== null
      ? (out.margin as Layout)
      : {};
  out.margin = { ...margin, t: UNTITLED_TOP_MARGIN };
  return out;
}

/** A mounted chart. */
export interface IChartHandle {
  /** The element the chart is drawn in. */
  readonly element: HTMLElement;
  /** The figure last drawn. */
  readonly figure: IFigure;
  /** Draw `figure` in place (plotly diffs it against the current one). */
  update(figure: IFigure): void;
  /** Add new traces and points without redrawing the rest (`extendTraces`). */
  append(change: IChartAppend): void;
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
 * The height the page gives a chart's element, before a legend is added: its laid
 * out height, else its CSS `height` or `min-height` (an element not shown yet),
 * else {@link DEFAULT_CHART_HEIGHT}.
 */
export function elementHeight(el: HTMLElement): number {
  if (el.clientHeight > 0) {
    return el.clientHeight;
  }
  const style = getComputedStyle(el);
  for (const value of [style.height, style.minHeight]) {
    const px = parseFloat(value);
    if (Number.isFinite(px) && px > 0) {
      return px;
    }
  }
  return DEFAULT_CHART_HEIGHT;
}

/**
 * The height a figure asks for (`layout.height`, before its legend's rows are
 * added), or null when it leaves it to the element.
 */
export function figureHeight(figure: IFigure): number | null {
  const height = figure.layout?.height;
  return typeof height === 'number' && Number.isFinite(height) && height > 0
    ? height
    : null;
}

/**
 * The height of a row of the drawn legend: its entries' whole height (clipped or
 * not) over `rows`; null without a drawn legend (or outside a browser).
 */
export function measuredRowHeight(
  el: HTMLElement,
  rows: number
): number | null {
  const entries = el.querySelector('.legend .scrollbox');
  if (rows <= 0 || !entries || !('getBBox' in entries)) {
    return null;
  }
  const height = (entries as SVGGraphicsElement).getBBox().height;
  return height > 0 ? height / rows : null;
}

/** Apply `change` to the drawn chart with plotly's own append calls. */
async function appendToPlot(
  el: HTMLElement,
  change: IChartAppend
): Promise<void> {
  const traces = change.traces ?? [];
  const ops = change.extend ?? [];
  const plot = el as HTMLElement & { data?: Trace[] };
  if (ops.length > 1 && Array.isArray(plot.data)) {
    // Each extendTraces call draws the whole chart again (a view delta extends
    // the points and the band: two calls): the plot's own traces take every
    // change, and it is drawn once.
    appendToFigure({ data: plot.data }, { ...change, layout: undefined });
    await Plotly.redraw(el);
    return;
  }
  if (traces.length > 0) {
    await Plotly.addTraces(
      el,
      traces.map(trace => JSON.parse(JSON.stringify(trace)) as Trace)
    );
  }
  for (const op of ops) {
    await Plotly.extendTraces(
      el,
      op.data,
      op.indices,
      change.max_points ?? undefined
    );
  }
}

/**
 * Give the legend symbol of a text trace ("Aa": the traffic chart's printed GB/s)
 * the theme's font colour. Plotly styles it when it first draws the legend and
 * keeps that colour through `react`: after a theme change it read dark on dark.
 * The figures set no text colour of their own (the text takes the layout's font).
 */
export function legendTextIn(el: HTMLElement, color: string): void {
  if (!color) {
    return;
  }
  for (const text of Array.from(
    el.querySelectorAll<SVGElement>('.legend .pointtext text')
  )) {
    text.style.fill = color;
  }
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
  let owned = false; // whether `current` is our copy, safe to append to
  let disposed = false;
  // The element's own height, read once before the legend's rows are added to it.
  let baseHeight: number | null = null;
  let sizedDetached = false; // the last draw was out of the page
  let drawnWidth = -1; // the width the legend was placed for
  // A legend row's height as drawn, once measured taller than estimated.
  let rowHeight: number | undefined;
  // The legend (rows, width) last measured: measuring forces the page's layout
  // (getBBox), so a live chart drawn again with the same legend skips it.
  let measuredFor = '';
  let drawTimer: ReturnType<typeof setTimeout> | null = null;
  let drawnAt = -Infinity;
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
    drawnAt = Date.now();
    const most = options.drawnPoints;
    // Thinned before the copy: a copy of the points drawn, not of every point.
    const copy = copyFigure(most ? decimateFigure(current, most) : current);
    const theme = readTheme(el);
    let themed = themeLayout(copy.layout, theme);
    if (options.title === false) {
      themed = withoutTitle(themed);
    }
    // Keep the user's zoom and legend choices across live updates.
    themed.uirevision = themed.uirevision ?? 'nsight-lab';
    // A figure that says its height (one that grows with its regions: the
    // counters' panels, the traffic bars) gets it; others the element's.
    // An element not in the page yet (a cell output is drawn before the output
    // area is attached) has no height of its own: its draw takes the default and
    // keeps nothing, and the draw once it is laid out (the resize observer's)
    // reads the page's height (the final output's charts were 240 px, their
    // duration axis title running over the chart's title).
    const laidOut = el.isConnected;
    if (laidOut && baseHeight === null && sizedDetached) {
      el.style.height = ''; // the page's height, not the one set while detached
    }
    baseHeight =
      figureHeight(copy) ?? baseHeight ?? (laidOut ? elementHeight(el) : null);
    const height = baseHeight ?? elementHeight(el);
    sizedDetached = !laidOut;
    drawnWidth = el.clientWidth;
    const placed = legendBelow(
      themed,
      copy.data ?? [],
      drawnWidth,
      height,
      rowHeight
    );
    el.style.height = `${placed.height}px`;
    if (drawnWidth > 0) {
      // The width the legend was placed for (plotly's own autosize keeps the
      // width of its first draw, 700 px when the element was hidden then).
      placed.layout.width = drawnWidth;
    }
    Plotly.react(el, copy.data ?? [], placed.layout, config)
      .then(() => {
        legendTextIn(el, theme.fontColor);
        // Rows taller than estimated (the host's font): room for them, once.
        const legend = `${placed.rows}:${drawnWidth}:${placed.rowHeight}`;
        if (legend === measuredFor) {
          return;
        }
        measuredFor = legend;
        const measured = measuredRowHeight(el, placed.rows);
        if (measured !== null && measured > placed.rowHeight + 0.5) {
          rowHeight = Math.ceil(measured);
          draw();
        }
      })
      .catch((reason: unknown) => {
        console.error('[nsight-lab] a chart failed to draw:', reason);
      });
  };

  // A thinned chart's appends: drawn once per `drawEveryMs` at most.
  const drawSoon = (): void => {
    if (drawTimer !== null) {
      return; // the draw pending takes the latest figure
    }
    const wait = Math.max(0, drawnAt + (options.drawEveryMs ?? 0) - Date.now());
    drawTimer = setTimeout(() => {
      drawTimer = null;
      draw();
    }, wait);
  };

  draw();
  const stopTheme =
    options.watchTheme === false ? () => undefined : onThemeChange(draw);
  let resize: ResizeObserver | null = null;
  if (typeof ResizeObserver !== 'undefined') {
    resize = new ResizeObserver(() => {
      // The height is set here (with the legend's rows); only a new width calls
      // for a new layout: it may fit more or fewer legend entries per row.
      if (
        !disposed &&
        el.isConnected &&
        el.clientWidth > 0 &&
        el.clientWidth !== drawnWidth
      ) {
        draw();
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
      owned = false;
      draw();
    },
    append(change: IChartAppend): void {
      if (disposed) {
        return;
      }
      if (change.figure) {
        // A redrawn chart: its figure replaces the one shown, drawn in place.
        current = change.figure;
        owned = false;
        draw();
        return;
      }
      // Appended to a copy (once per figure): the caller's figure stays as it
      // was, and later redraws (theme, resize) keep the points.
      if (!owned) {
        current = copyFigure(current);
        owned = true;
      }
      appendToFigure(current, change);
      const most = options.drawnPoints;
      if (most !== undefined && overPoints(current, most)) {
        drawSoon();
        return;
      }
      if (
        change.layout ||
        legendEntries(change.traces ?? [], { showlegend: true }).length > 0
      ) {
        // New axes (plotly diffs them), or a new legend entry that may need a
        // new legend row: draw it all again.
        draw();
        return;
      }
      appendToPlot(el, change).catch((reason: unknown) => {
        console.error('[nsight-lab] a chart failed to update:', reason);
        draw();
      });
    },
    dispose(): void {
      if (disposed) {
        return;
      }
      disposed = true;
      if (drawTimer !== null) {
        clearTimeout(drawTimer);
        drawTimer = null;
      }
      stopTheme();
      resize?.disconnect();
      Plotly.purge(el);
    }
  };
}
