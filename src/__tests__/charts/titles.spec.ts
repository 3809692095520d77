/**
 * The chart words, written once: titles and what a chart needs, for every kind.
 */

import {
  CHART_ADDED_BY,
  CHART_MISSING,
  CHART_TITLES,
  chartMissing,
  chartTitle,
  isChartKind
} from '../../charts/titles';
import { CHART_KINDS } from '../../types';

describe('chart titles and missing words', () => {
  it('names every kind and says what it needs', () => {
    for (const kind of CHART_KINDS) {
      expect(chartTitle(kind)).toBe(CHART_TITLES[kind]);
      expect(chartMissing(kind)).toBe(CHART_MISSING[kind]);
    }
    expect(chartMissing('roofline')).toBe(
      "roofline needs the device's peaks and each region's FLOPs and bytes (measured or modelled): on the cpu backend run %nsight peaks --cpu; on a GPU, profile PyTorch ops with --warmup 1 or more, or use --backend ncu"
    );
  });

  it('never claims what the table contradicts (Bytes: modelled)', () => {
    // The traffic chart is drawn from modelled bytes too: a missing one means
    // neither source gave bytes, not that counters are needed.
    expect(CHART_MISSING.traffic).not.toMatch(/needs DRAM byte counts/);
    for (const kind of ['roofline', 'traffic'] as const) {
      expect(CHART_MISSING[kind]).toContain('measured or modelled');
    }
    expect(CHART_ADDED_BY.traffic).toContain('work model');
  });

  it('titles the per-rank charts without making them kinds', () => {
    expect(chartTitle('ranks')).toBe('Duration per rank per run');
    expect(chartTitle('rank_clocks')).toBe('SM clock and temperature per GPU');
    expect(isChartKind('ranks')).toBe(false);
    expect(chartTitle('toString')).toBe('toString');
  });

  it('says what the served figure says it lacks, when it says so', () => {
    // An ncu session's clock chart: it ran on a GPU, what it lacks is NVML.
    const figure = {
      data: [],
      layout: { meta: { missing: 'no clocks per run: the ncu backend ...' } }
    };
    expect(chartMissing('clocks', figure)).toBe(
      'no clocks per run: the ncu backend ...'
    );
    expect(chartMissing('clocks', { data: [], layout: { meta: 3 } })).toBe(
      CHART_MISSING.clocks
    );
    expect(chartMissing('clocks', null)).toBe(CHART_MISSING.clocks);
  });

  it('falls back to the name for a chart of an unknown kind', () => {
    expect(isChartKind('duration')).toBe(true);
    expect(isChartKind('extra')).toBe(false);
    expect(chartTitle('extra')).toBe('extra');
    expect(chartMissing('extra')).toBe('nothing to draw');
  });
});
