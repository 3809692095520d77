/**
 * Fewer points drawn than a figure holds: the sidebar's compact live charts.
 *
 * Issue 32: plotly draws a scatter chart again whole on every live update (an
 * `extendTraces` is a redraw), and its cost grows with the points drawn: in the
 * benchmark VM's Chromium a 4-region duration chart of 2,000 points per trace
 * (the view's point budget) took 320-470 ms a redraw, 700-1,600 ms at load 5 with
 * the server beside it; 200 points per trace, 40-60 ms (`benchmarks/
 * plotly_redraw.js`). The compact live chart is about 350 px wide: drawing more
 * than a point per pixel or two shows nothing more. The figure the chart holds
 * keeps every point (its appends, the session view, the final view); only the
 * drawn copy is thinned.
 *
 * Thinning keeps each trace's shape: per bucket of consecutive points, the lowest
 * and the highest y (an outlier stays drawn), and the first and last point.
 */
import type { IFigure, Trace } from './append';

/** Points per trace the sidebar's compact live charts draw at most. */
export const LIVE_DRAWN_POINTS = 200;

/**
 * A thinned live chart is drawn at most this often (ms): its appends between
 * two draws are drawn together (the sidebar refreshes every 200 ms by default).
 */
export const LIVE_DRAW_MS = 500;

/** The number of points of `trace` (its x or y values), or 0 if neither is a list. */
export function tracePoints(trace: Trace): number {
  const x = trace.x;
  const y = trace.y;
  return Math.max(
    Array.isArray(x) ? x.length : 0,
    Array.isArray(y) ? y.length : 0
  );
}

/** Whether a trace of `figure` holds more than `most` points. */
export function overPoints(figure: IFigure, most: number): boolean {
  return (figure.data ?? []).some(trace => tracePoints(trace) > most);
}

/**
 * The indices of the points kept of `n` (at most about `most`): per bucket the
 * lowest and highest of `y` (numbers; others count as neither), in order, the
 * first and the last always.
 */
export function keptIndices(
  y: readonly unknown[] | null,
  n: number,
  most: number
): number[] {
  if (n <= most) {
    return [...Array(n).keys()];
  }
  const buckets = Math.max(1, Math.floor((most - 2) / 2));
  const size = n / buckets;
  const kept: number[] = [0];
  for (let b = 0; b < buckets; b++) {
    const start = Math.max(1, Math.floor(b * size));
    const end = Math.min(n - 1, Math.floor((b + 1) * size));
    if (start >= end) {
      continue;
    }
    let low = start;
    let high = start;
    if (y) {
      let lowValue = Infinity;
      let highValue = -Infinity;
      for (let i = start; i < end; i++) {
        const v = y[i];
        if (typeof v === 'number' && Number.isFinite(v)) {
          if (v < lowValue) {
            lowValue = v;
            low = i;
          }
          if (v > highValue) {
            highValue = v;
            high = i;
          }
        }
      }
    }
    if (low === high) {
      kept.push(low);
    } else {
      kept.push(Math.min(low, high), Math.max(low, high));
    }
  }
  kept.push(n - 1);
  return kept;
}

/** `values` at `indices` when it is a per-point list of `n`; else as it is. */
function pick(values: unknown, n: number, indices: readonly number[]): unknown {
  if (!Array.isArray(values) || values.length !== n) {
    return values;
  }
  return indices.map(i => values[i]);
}

/** `object`'s per-point lists (length `n`) at `indices`; other keys as they are. */
function pickAll(
  object: Record<string, unknown>,
  n: number,
  indices: readonly number[]
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(object)) {
    out[key] = pick(value, n, indices);
  }
  return out;
}

/** `trace` with at most about `most` points (a new trace when thinned). */
export function decimateTrace(trace: Trace, most: number): Trace {
  const n = tracePoints(trace);
  const type = trace.type;
  if (n <= most || (type !== undefined && type !== 'scatter')) {
    return trace;
  }
  const y = Array.isArray(trace.y) ? (trace.y as unknown[]) : null;
  const indices = keptIndices(y && y.length === n ? y : null, n, most);
  const out = pickAll(trace, n, indices);
  for (const nested of ['marker', 'line', 'error_y', 'error_x']) {
    const value = trace[nested];
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      out[nested] = pickAll(value as Record<string, unknown>, n, indices);
    }
  }
  return out;
}

/**
 * `figure` with each scatter trace of more than `most` points thinned to about
 * `most` (see the module's note); the same figure when none is.
 */
export function decimateFigure(figure: IFigure, most: number): IFigure {
  if (!overPoints(figure, most)) {
    return figure;
  }
  return {
    ...figure,
    data: (figure.data ?? []).map(trace => decimateTrace(trace, most))
  };
}
