/**
 * A session's runs summarised per region and config: count, mean, min, max and
 * throttled runs. Names are text cells.
 */

import { IRunRecord, JsonScalar } from '../types';
import { textTable } from './dom';
import { formatConfig, formatDuration } from './format';

/** One row of the summary. */
export interface IRunSummary {
  annotation: string;
  config: Record<string, JsonScalar>;
  configIndex: number;
  runs: number;
  meanNs: number;
  minNs: number;
  maxNs: number;
  throttled: number;
  kernels: string[];
}

/** Summarise runs per (annotation, config), in first-seen order. */
export function summarizeRuns(runs: IRunRecord[]): IRunSummary[] {
  const groups = new Map<string, IRunSummary & { sumNs: number }>();
  for (const run of runs) {
    const key = `${run.config_index}\u0000${run.annotation}`;
    let group = groups.get(key);
    if (!group) {
      group = {
        annotation: run.annotation,
        config: run.config,
        configIndex: run.config_index,
        runs: 0,
        meanNs: 0,
        minNs: Infinity,
        maxNs: -Infinity,
        throttled: 0,
        kernels: [],
        sumNs: 0
      };
      groups.set(key, group);
    }
    group.runs += 1;
    group.sumNs += run.duration_ns;
    group.minNs = Math.min(group.minNs, run.duration_ns);
    group.maxNs = Math.max(group.maxNs, run.duration_ns);
    if (run.telemetry?.throttled) {
      group.throttled += 1;
    }
    for (const kernel of run.kernels ?? []) {
      if (!group.kernels.includes(kernel)) {
        group.kernels.push(kernel);
      }
    }
  }
  return [...groups.values()].map(({ sumNs, ...group }) => ({
    ...group,
    meanNs: group.runs > 0 ? sumNs / group.runs : 0
  }));
}

/** The summary as a table. */
export function runTable(runs: IRunRecord[]): HTMLTableElement {
  const rows = summarizeRuns(runs).map(s => [
    s.annotation,
    formatConfig(s.config),
    `${s.runs}`,
    formatDuration(s.meanNs),
    formatDuration(s.minNs),
    formatDuration(s.maxNs),
    `${s.throttled}`,
    s.kernels.slice(0, 3).join(', ') + (s.kernels.length > 3 ? ', …' : '')
  ]);
  return textTable(
    'jp-nsightLab-RunTable',
    ['Region', 'Config', 'Runs', 'Mean', 'Min', 'Max', 'Throttled', 'Kernels'],
    rows
  );
}
