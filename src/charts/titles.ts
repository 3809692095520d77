/**
 * The words of the sidebar's charts, written once: each kind's title and what it
 * needs when the server sent no figure with data. The live view and the session
 * view hand `chartTitle` and `chartMissing` to their `ChartGrid`.
 */

import { CHART_KINDS, ChartKind } from '../types';
import type { IFigure } from './mount';

/** The chart titles. */
export const CHART_TITLES: Record<ChartKind, string> = {
  duration: 'Duration per run',
  clocks: 'SM clock and temperature per run',
  roofline: 'Roofline',
  traffic: 'DRAM byte traffic',
  counters: 'Counters over time'
};

/**
 * What a chart needs when the server sent no figure (or one without data). Never
 * what the summary table contradicts: the server draws the traffic chart from the
 * work model's bytes too (`Bytes: modelled`), so its words say both sources.
 */
export const CHART_MISSING: Record<ChartKind, string> = {
  duration: 'no runs stored yet',
  clocks:
    'clocks and temperature need NVML telemetry: run on an NVIDIA GPU with nvidia-ml-py installed (the cpu backend reads none)',
  roofline:
    "roofline needs the device's peaks and each region's FLOPs and bytes (measured or modelled): on the cpu backend run %nsight peaks --cpu; on a GPU, profile PyTorch ops with --warmup 1 or more, or use --backend ncu",
  traffic:
    "DRAM traffic needs each region's bytes, measured or modelled, and neither was counted here: run with --backend ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum, or profile PyTorch ops the work model counts",
  counters:
    'counter timelines need PM sampling, which the cpu, events, cupti and ncu backends do not do: profile with --backend pm (pip install nsight-lab[pm])'
};

/** What draws each chart, in a few words: the folded line of charts not drawn. */
export const CHART_ADDED_BY: Record<ChartKind, string> = {
  duration: 'durations (any backend, once runs are stored)',
  clocks: 'clocks and temperature (--backend events, cupti, pm)',
  // The cpu backend draws it once the host's peaks are measured: its ops have a
  // work model already (the quickstart's matmul), so "another backend" is not it.
  roofline: 'roofline (a GPU backend, or %nsight peaks --cpu)',
  traffic: 'DRAM traffic (--backend ncu or pm, or ops with a work model)',
  counters: 'counters over time (--backend pm)'
};

/**
 * The one line the charts with nothing to draw fold into: what another backend
 * (or setting) would add, each chart's own reason under it when opened.
 */
export function foldedCharts(names: readonly string[]): string {
  const added = names.map(name =>
    isChartKind(name) ? CHART_ADDED_BY[name] : chartTitle(name)
  );
  return `Another backend would add: ${added.join('; ')}`;
}

/**
 * Titles of the charts only some sessions are served (the per-rank charts of a
 * multi-rank session, `nsight_lab/distributed/figure.py`): not kinds, so a session
 * without them gets no empty box for them.
 */
export const SERVED_ONLY_TITLES: Readonly<Record<string, string>> = {
  ranks: 'Duration per rank per run',
  rank_clocks: 'SM clock and temperature per GPU'
};

/** Whether `name` is a chart kind the sidebar knows. */
export function isChartKind(name: string): name is ChartKind {
  return (CHART_KINDS as readonly string[]).includes(name);
}

/** The title above chart `name` (a chart of an unknown kind: its name). */
export function chartTitle(name: string): string {
  if (isChartKind(name)) {
    return CHART_TITLES[name];
  }
  return Object.prototype.hasOwnProperty.call(SERVED_ONLY_TITLES, name)
    ? SERVED_ONLY_TITLES[name]
    : name;
}

/**
 * Why a figure served without data has none, as Python said it
 * (`layout.meta.missing`: the clock chart of an ncu session says what that
 * backend lacks); null when it said nothing.
 */
export function servedReason(figure?: IFigure | null): string | null {
  const meta = figure?.layout?.meta;
  if (typeof meta === 'object' && meta !== null && !Array.isArray(meta)) {
    const missing = (meta as Record<string, unknown>).missing;
    if (typeof missing === 'string' && missing.trim()) {
      return missing;
    }
  }
  return null;
}

/**
 * The words shown for chart `name` when it has nothing to draw: the reason the
 * served figure gives, else what that kind of chart needs.
 */
export function chartMissing(name: string, figure?: IFigure | null): string {
  return (
    servedReason(figure) ??
    (isChartKind(name) ? CHART_MISSING[name] : 'nothing to draw')
  );
}
