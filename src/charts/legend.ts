/**
 * Legend placement: every chart's legend goes below its plot, in as many rows as
 * its entries need at the chart's width, and the chart grows by those rows. The
 * plot area keeps its height, so a legend never covers the plot or the axis
 * titles, and never scrolls (at 250 px wide the six entries of a two-region,
 * three-config duration chart are six rows, all shown).
 *
 * Front-end layout only: the figures (their traces and names) come from Python
 * (`nsight_lab/figures/`) and are not changed; only `legend`, `margin.b` and
 * `height` of the layout are set here.
 *
 * The geometry is plotly.js's horizontal legend, measured in Chromium (3.x): an
 * entry is its text plus {@link ENTRY_EXTRA} px (symbol and gaps); entries wrap at
 * the plot area's width; a row is `max(19, font size + 7)` px; the box adds
 * {@link LEGEND_PADDING} px.
 */

import type { Layout } from './theme';

/** A plotly trace as JSON (as in mount.ts). */
type Trace = Record<string, unknown>;

/** The width a legend entry adds to its text: the symbol and the gaps. */
export const ENTRY_EXTRA = 45;

/** The legend box's padding, top and bottom together. */
export const LEGEND_PADDING = 10;

/** Space between the x axis title and the legend. */
export const LEGEND_GAP = 6;

/** Plotly's default margins, where a figure sets none. */
const DEFAULT_MARGIN = { l: 80, r: 80, t: 100, b: 80 };

/** Plotly's default font size. */
const DEFAULT_FONT_SIZE = 12;

/** The height of a chart box whose element gave none (hidden, no CSS). */
export const DEFAULT_CHART_HEIGHT = 240;

function asObject(value: unknown): Layout {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Layout)
    : {};
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

/**
 * The text of the legend entries plotly shows: the visible traces not hidden from
 * the legend, when the legend is shown. By plotly's default (its legend defaults,
 * for scatter and bar traces) it is shown when some trace has an entry and the
 * visible traces number two or more, counting hidden-from-legend ones (a duration
 * chart's band edges) and counting an explicit `showlegend: true` twice.
 */
export function legendEntries(
  data: readonly Trace[],
  layout: Layout | undefined
): string[] {
  const visible = data.filter(trace => trace.visible !== false);
  const names = visible
    .filter(trace => trace.showlegend !== false)
    .map(trace => (typeof trace.name === 'string' ? trace.name : ''));
  const count =
    visible.length + visible.filter(trace => trace.showlegend === true).length;
  const show = layout?.showlegend ?? (names.length > 0 && count > 1);
  return show === true ? names : [];
}

/**
 * The width of legend text in px, estimated without a canvas: markup tags take no
 * room, an entity (`&lt;`) is one character, a character about 0.6 em (a little
 * more than most fonts' average, so entries are given room rather than overlap).
 */
export function textWidth(text: string, fontSize: number): number {
  const shown = text.replace(/<[^>]*>/g, '').replace(/&[#\w]+;/g, '_');
  return Math.ceil(shown.length * 0.6 * fontSize);
}

/** Where a legend goes and what it adds to the chart's height. */
export interface ILegendPlacement {
  /** The layout with `legend`, `margin.b` and `height` set. */
  layout: Layout;
  /** The chart's height in px: the given height plus the legend's rows. */
  height: number;
  /** The legend's rows (0: no legend). */
  rows: number;
  /** Entries per row. */
  perRow: number;
  /** The height of a row the legend was given, in px. */
  rowHeight: number;
}

/** A legend row's height for a font size: plotly's, with a default font. */
export function legendRowHeight(fontSize: number): number {
  return Math.max(19, fontSize + 7);
}

/**
 * Put the legend of a figure below its plot area, in rows that fit `width`.
 *
 * @param layout - The figure's layout (already themed); not changed.
 * @param data - The figure's traces (only their names and legend flags are read).
 * @param width - The chart's width in px.
 * @param height - The chart's height without a legend, in px.
 * @param rowHeight - A legend row's height when known (measured on a drawn
 *   legend: fonts differ); by default {@link legendRowHeight}.
 */
export function legendBelow(
  layout: Layout,
  data: readonly Trace[],
  width: number,
  height: number,
  rowHeight?: number
): ILegendPlacement {
  const entries = legendEntries(data, layout);
  if (entries.length === 0) {
    return {
      layout: { ...layout, height },
      height,
      rows: 0,
      perRow: 0,
      rowHeight: 0
    };
  }
  const legend = asObject(layout.legend);
  const margin = asObject(layout.margin);
  const fontSize = numberOr(
    asObject(legend.font).size,
    numberOr(asObject(layout.font).size, DEFAULT_FONT_SIZE)
  );
  const left = numberOr(margin.l, DEFAULT_MARGIN.l);
  const right = numberOr(margin.r, DEFAULT_MARGIN.r);
  const bottom = numberOr(margin.b, DEFAULT_MARGIN.b);
  const plotWidth = Math.max(0, width - left - right);
  const text = Math.max(...entries.map(name => textWidth(name, fontSize)));
  const perRow = Math.max(
    1,
    Math.min(entries.length, Math.floor(plotWidth / (text + ENTRY_EXTRA)))
  );
  const rows = Math.ceil(entries.length / perRow);
  const row = rowHeight ?? legendRowHeight(fontSize);
  const legendHeight = rows * row + LEGEND_PADDING;
  const placed: Layout = {
    ...legend,
    orientation: 'h',
    // From the chart's left edge, under the plot: in a narrow sidebar the
    // legend may use the width of the y axis' margin too.
    xref: 'container',
    x: 0,
    xanchor: 'left',
    yref: 'container',
    y: 0,
    yanchor: 'bottom',
    // Room for every row, so the legend is never a scrolled box.
    maxheight: legendHeight + 1
  };
  if (perRow > 1) {
    // Columns of equal width across the plot area: entries line up in rows.
    placed.entrywidth = Math.floor(plotWidth / perRow) - ENTRY_EXTRA - 1;
    placed.entrywidthmode = 'pixels';
  } else {
    delete placed.entrywidth;
    delete placed.entrywidthmode;
  }
  const total = height + legendHeight + LEGEND_GAP;
  return {
    layout: {
      ...layout,
      legend: placed,
      margin: { ...margin, b: bottom + legendHeight + LEGEND_GAP },
      height: total
    },
    height: total,
    rows,
    perRow,
    rowHeight: row
  };
}
