/**
 * Live appends applied to a figure kept as JSON: what `figures.LiveFigures.add`
 * sends (Python) and what a live view delta carries (`viewmodel/delta.py`).
 *
 * No plotly here: the models (`src/model/view.ts`) apply deltas to the figures
 * they hold with it, and `mount.ts` applies the same change to its drawn copy.
 */
import type { Layout } from './theme';

/** A plotly trace as JSON. */
export type Trace = Record<string, unknown>;

/** A plotly figure as JSON: what `fig.to_plotly_json()` gives in Python. */
export interface IFigure {
  data: Trace[];
  layout?: Layout;
}

/** One `Plotly.extendTraces` call: per path, one array of new values per trace. */
export interface IExtend {
  indices: number[];
  data: Record<string, unknown[][]>;
}

/**
 * New points for a drawn figure (`figures.LiveFigures.add` in Python): traces to
 * add first, then points to append, each trace keeping its latest `max_points`.
 */
export interface IChartAppend {
  traces?: Trace[];
  extend?: IExtend[];
  max_points?: number | null;
  /**
   * The chart's whole figure, drawn in place of the one shown: a chart that is
   * redrawn rather than extended (Counters over time: the newest sampled runs).
   */
  figure?: IFigure;
  /**
   * Layout updates, per key merged into the figure's (the clock chart's axes,
   * floored over every run so far as the finished chart's: no autoscale).
   */
  layout?: Layout;
}

/** `layout` with `update` merged in: an object key's object merged one level. */
export function mergeLayout(layout: Layout, update: Layout): Layout {
  const out: Layout = { ...layout };
  for (const [key, value] of Object.entries(update)) {
    const before = out[key];
    const both =
      typeof before === 'object' &&
      before !== null &&
      !Array.isArray(before) &&
      typeof value === 'object' &&
      value !== null &&
      !Array.isArray(value);
    out[key] = both
      ? { ...(before as Layout), ...(value as Layout) }
      : JSON.parse(JSON.stringify(value));
  }
  return out;
}

/** Append `change` to `figure` in place (what the chart then shows). */
export function appendToFigure(figure: IFigure, change: IChartAppend): void {
  if (change.figure) {
    const whole = JSON.parse(JSON.stringify(change.figure)) as IFigure;
    figure.data = whole.data;
    figure.layout = whole.layout;
    return;
  }
  const data = figure.data;
  for (const trace of change.traces ?? []) {
    data.push(JSON.parse(JSON.stringify(trace)) as Trace);
  }
  for (const op of change.extend ?? []) {
    op.indices.forEach((index, k) => {
      const trace = data[index];
      if (!trace) {
        return;
      }
      for (const [path, columns] of Object.entries(op.data)) {
        const target = arrayAt(trace, path);
        target.push(...(columns[k] ?? []));
        const max = change.max_points ?? null;
        if (max !== null && target.length > max) {
          target.splice(0, target.length - max);
        }
      }
    });
  }
  if (change.layout) {
    figure.layout = mergeLayout(figure.layout ?? {}, change.layout);
  }
}

/** The array at the dotted `path` of a trace, created if missing. */
function arrayAt(trace: Trace, path: string): unknown[] {
  const parts = path.split('.');
  const leaf = parts.pop() as string;
  let node: Record<string, unknown> = trace;
  for (const part of parts) {
    const next = node[part];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) {
      node[part] = {};
    }
    node = node[part] as Record<string, unknown>;
  }
  if (!Array.isArray(node[leaf])) {
    node[leaf] = [];
  }
  return node[leaf] as unknown[];
}

/** `node` with the object at each of `parts` copied, the array at the end too. */
function copyPath(trace: Trace, path: string): Trace {
  const parts = path.split('.');
  const leaf = parts.pop() as string;
  const out: Trace = { ...trace };
  let node: Record<string, unknown> = out;
  for (const part of parts) {
    const next = node[part];
    node[part] =
      typeof next === 'object' && next !== null && !Array.isArray(next)
        ? { ...(next as Record<string, unknown>) }
        : {};
    node = node[part] as Record<string, unknown>;
  }
  const values = node[leaf];
  node[leaf] = Array.isArray(values) ? [...values] : [];
  return out;
}

/**
 * `figure` with `change` applied, as a new figure: the traces and arrays it
 * changes are copies, the rest shared, so `figure` (what a chart may be drawing)
 * stays as it was and an unchanged figure keeps its identity elsewhere.
 */
export function appendedCopy(figure: IFigure, change: IChartAppend): IFigure {
  if (change.figure) {
    return change.figure;
  }
  const data = [...figure.data, ...(change.traces ?? [])];
  const copied = new Set<string>();
  for (const op of change.extend ?? []) {
    op.indices.forEach(index => {
      if (!data[index]) {
        return;
      }
      for (const path of Object.keys(op.data)) {
        const key = `${index}:${path}`;
        if (!copied.has(key)) {
          data[index] = copyPath(data[index], path);
          copied.add(key);
        }
      }
    });
  }
  const out: IFigure = { ...figure, data };
  appendToFigure(out, { ...change, traces: [] });
  return out;
}
