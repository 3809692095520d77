/**
 * legend.ts: the legend goes below the plot in the rows its entries need at the
 * chart's width, and the chart grows by them (the plot area keeps its height).
 */
import {
  ENTRY_EXTRA,
  LEGEND_GAP,
  LEGEND_PADDING,
  legendBelow,
  legendEntries,
  textWidth
} from '../../charts/legend';

/** The layout nsight_lab/figures/theme.py `_layout` sends (the parts read here). */
const LAYOUT = {
  legend: { orientation: 'h', yanchor: 'top', y: -0.2, x: 0 },
  margin: { l: 60, r: 60, t: 70, b: 40 }
};

/** The duration chart of two regions x three configs: band edges + points. */
function durationTraces(): Record<string, unknown>[] {
  const traces: Record<string, unknown>[] = [];
  for (const region of ['add', 'mul']) {
    for (const n of [1, 2, 3]) {
      const label = `${region} [n=${n}]`;
      traces.push(
        { name: `${label} CI95 low`, showlegend: false },
        { name: `${label} CI95`, showlegend: false },
        { name: label }
      );
    }
  }
  return traces;
}

describe('legendEntries', () => {
  it('lists the traces shown in the legend, none for a single trace', () => {
    expect(legendEntries(durationTraces(), LAYOUT)).toHaveLength(6);
    expect(legendEntries([{ name: 'only' }], LAYOUT)).toEqual([]);
    // As plotly does: one entry, but band edges hidden from the legend make
    // three visible traces, so the legend shows (a one-region duration chart).
    expect(legendEntries(durationTraces().slice(0, 3), LAYOUT)).toEqual([
      'add [n=1]'
    ]);
    expect(legendEntries([{ name: 'only', showlegend: true }], LAYOUT)).toEqual(
      ['only']
    );
    expect(legendEntries([{ name: 'only' }], { showlegend: true })).toEqual([
      'only'
    ]);
    expect(
      legendEntries([{ name: 'a' }, { name: 'b' }], { showlegend: false })
    ).toEqual([]);
    expect(
      legendEntries([{ name: 'a' }, { name: 'b', visible: false }], {
        showlegend: true
      })
    ).toEqual(['a']);
  });
});

describe('textWidth', () => {
  it('counts shown characters: tags take no room, an entity is one', () => {
    expect(textWidth('abc', 10)).toBe(18);
    expect(textWidth('<b>abc</b>', 10)).toBe(18);
    expect(textWidth('a&lt;b', 10)).toBe(18);
  });
});

describe('legendBelow', () => {
  it('at the sidebar width: one entry per row, every row below the plot', () => {
    const traces = durationTraces();

    const placed = legendBelow(LAYOUT, traces, 226, 240);

    expect(placed.perRow).toBe(1);
    expect(placed.rows).toBe(6);
    const legendHeight = 6 * 19 + LEGEND_PADDING;
    expect(placed.height).toBe(240 + legendHeight + LEGEND_GAP);
    expect(placed.layout.height).toBe(placed.height);
    // The plot area keeps its height: the bottom margin grew by exactly what the
    // chart grew by.
    const margin = placed.layout.margin as Record<string, number>;
    expect(margin.b - LAYOUT.margin.b).toBe(placed.height - 240);
    expect(margin.t).toBe(70);
    const legend = placed.layout.legend as Record<string, unknown>;
    expect(legend).toMatchObject({
      orientation: 'h',
      yref: 'container',
      y: 0,
      yanchor: 'bottom'
    });
    // Tall enough for every row: the legend never scrolls.
    expect(legend.maxheight as number).toBeGreaterThanOrEqual(legendHeight);
    // The input is not changed.
    expect(LAYOUT.margin.b).toBe(40);
    expect(LAYOUT.legend.y).toBe(-0.2);
  });

  it('wider: more entries per row, in columns that fit the plot area', () => {
    const traces = durationTraces();

    const placed = legendBelow(LAYOUT, traces, 650, 240);

    const plotWidth = 650 - 60 - 60;
    expect(placed.perRow).toBeGreaterThan(1);
    expect(placed.rows).toBe(Math.ceil(6 / placed.perRow));
    const legend = placed.layout.legend as Record<string, number>;
    // Each column holds the longest entry, and the columns fit the plot width.
    expect(legend.entrywidth).toBeGreaterThanOrEqual(
      textWidth('add [n=1]', 12)
    );
    expect(
      placed.perRow * (legend.entrywidth + ENTRY_EXTRA)
    ).toBeLessThanOrEqual(plotWidth);
    expect(placed.height).toBeLessThan(
      legendBelow(LAYOUT, traces, 226, 240).height
    );
  });

  it('leaves a chart without a legend at its height', () => {
    const placed = legendBelow(LAYOUT, [{ name: 'only' }], 400, 320);

    expect(placed.rows).toBe(0);
    expect(placed.height).toBe(320);
    expect(placed.layout.margin).toEqual(LAYOUT.margin);
  });

  it('reads a larger legend font into taller rows', () => {
    const layout = { ...LAYOUT, legend: { font: { size: 16 } } };

    const placed = legendBelow(layout, durationTraces(), 226, 240);

    expect(placed.height).toBe(240 + 6 * 23 + LEGEND_PADDING + LEGEND_GAP);
  });
});
