/**
 * What a user must be able to read in the charts of real GPU sessions: the H200
 * fixture store (tests/fixtures/h200_block.sqlite, copied for the `fixture` server:
 * a transformer block's 12 regions on events x2, cupti, pm with counter series,
 * ncu roofline, and a 4-config sweep), each session opened as a panel in the main
 * area, in the light and the dark theme.
 *
 * For every chart drawn: no two text labels overlap (the boxes of plotly's text
 * nodes: ticks, axis titles, roof labels, region names, legend entries, printed
 * GB/s), no text is cut by the chart's box, every region has a legend entry or a
 * panel title of its own whose marker (shape and colour) no other region shares,
 * and hovering each region's point (or bar) names that region. A chart that is
 * not drawn says what it lacks (an ncu session's clocks: not "run on an NVIDIA
 * GPU"). The data marks too (issue 30): the regions' points on the roofline have
 * shapes of their own (no two regions share one: 12 regions, 20 shapes before a
 * repeat), are at least 12.5 px across and at least 10 px apart (points at one place
 * are spread), the hover of a per-kernel backend's point names its kernel; the
 * clock and temperature lines lie in boxes of their own (neither hides the other)
 * and the clock axis has no fractional MHz ticks; the traffic chart's legend says
 * what the printed rate is. Checks are soft (every problem of every chart is
 * listed, not only the first). Screenshots of each chart go to
 * test-output/readability/.
 */

import { expect, test } from '@jupyterlab/galata';

import { Locator, Page } from '@playwright/test';

import { LIST, openSidebar, shot } from './nsightLab';

test.describe.configure({ mode: 'serial' });
// Galata tracks Jupyter sessions through an unanchored /api/sessions route that would
// also catch /nsight-lab/api/sessions; turn that tracking off.
test.use({ autoGoto: true, sessions: null });

const MAIN = '#jp-main-dock-panel';
const PANEL = `${MAIN} .jp-nsightLab-SelectionPanel:not(.lm-mod-hidden)`;
const ROW = '.jp-nsightLab-SessionList-row';

/** The fixture's sessions: id, name, and the charts each must draw. */
const SESSIONS: { id: number; name: string; drawn: string[] }[] = [
  {
    id: 1,
    name: 'block-events-a',
    drawn: ['duration', 'clocks', 'roofline', 'traffic']
  },
  {
    id: 2,
    name: 'block-events-b',
    drawn: ['duration', 'clocks', 'roofline', 'traffic']
  },
  {
    id: 3,
    name: 'block-cupti',
    drawn: ['duration', 'clocks', 'roofline', 'traffic']
  },
  {
    id: 4,
    name: 'block-pm-dram',
    drawn: ['duration', 'clocks', 'roofline', 'traffic', 'counters']
  },
  {
    id: 5,
    name: 'block-ncu-roofline',
    drawn: ['duration', 'roofline', 'traffic']
  },
  {
    id: 6,
    name: 'sweep-matmul',
    drawn: ['duration', 'clocks', 'roofline', 'traffic']
  }
];

const REGIONS = [
  'layernorm_1',
  'qkv_proj',
  'split_heads',
  'flash_attention',
  'merge_heads',
  'out_proj',
  'residual_1',
  'layernorm_2',
  'mlp_up',
  'gelu',
  'mlp_down',
  'residual_2'
];

/** A text node of a drawn chart and its box in page pixels. */
interface IText {
  text: string;
  where: string;
  left: number;
  right: number;
  top: number;
  bottom: number;
}

/** What one chart shows, read from its DOM. */
interface IChartReading {
  chart: string;
  box: { left: number; right: number; top: number; bottom: number };
  texts: IText[];
  /** Legend entries: their text and their marker (shape path and colour). */
  legend: { text: string; marker: string }[];
}

/** Read every drawn chart of the panel: its text boxes and legend markers. */
async function readCharts(panel: Locator): Promise<IChartReading[]> {
  return panel.evaluate(root =>
    Array.from(
      root.querySelectorAll<HTMLElement>(
        '.jp-nsightLab-ChartView[data-state="drawn"]'
      )
    ).map(chart => {
      const plot = chart.querySelector(
        '.jp-nsightLab-ChartView-plot'
      ) as HTMLElement;
      const r = plot.getBoundingClientRect();
      const texts = Array.from(plot.querySelectorAll<SVGTextElement>('text'))
        .filter(t => (t.textContent ?? '').trim() !== '')
        .filter(t => !t.closest('.hoverlayer'))
        .map(t => {
          const b = t.getBoundingClientRect();
          // The classes of the text and its groups: what it is (xtick,
          // annotation-text, legendtext, g-xtitle, ...).
          const classes: string[] = [];
          for (
            let node: Element | null = t;
            node && node !== plot && classes.length < 4;
            node = node.parentElement
          ) {
            const cls = node.getAttribute('class');
            if (cls) {
              classes.push(cls);
            }
          }
          return {
            text: (t.textContent ?? '').trim(),
            where: classes.join(' < '),
            left: b.left,
            right: b.right,
            top: b.top,
            bottom: b.bottom
          };
        })
        .filter(t => t.right - t.left > 0 && t.bottom - t.top > 0);
      const legend = Array.from(plot.querySelectorAll('.legend .traces')).map(
        entry => {
          const path = entry.querySelector('.legendpoints path');
          const style = path?.getAttribute('style') ?? '';
          const colour = /stroke:\s*([^;]+)/.exec(style)?.[1] ?? '';
          const fill = /fill:\s*([^;]+)/.exec(style)?.[1] ?? '';
          return {
            text: (
              entry.querySelector('.legendtext')?.textContent ?? ''
            ).trim(),
            marker: `${path?.getAttribute('d') ?? ''}|${colour}|${fill}`
          };
        }
      );
      return {
        chart: chart.dataset.chart ?? '',
        box: { left: r.left, right: r.right, top: r.top, bottom: r.bottom },
        texts,
        legend
      };
    })
  );
}

/** A region's point on a chart: its region, shape (path), box in page pixels. */
interface IMark {
  region: string;
  shape: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The regions' points of a scatter chart (traces with `meta.annotation`). */
async function readMarks(chart: Locator): Promise<IMark[]> {
  return chart.evaluate(el => {
    type Meta = { annotation?: string; config_index?: number };
    type Datum = { trace?: { meta?: Meta | Meta[] } };
    const out: IMark[] = [];
    for (const trace of Array.from(
      el.querySelectorAll<SVGGElement>('.scatterlayer .trace')
    )) {
      const data = (trace as unknown as { __data__?: Datum[] }).__data__;
      const meta = data?.[0]?.trace?.meta;
      if (!meta || Array.isArray(meta) || !meta.annotation) {
        continue;
      }
      for (const point of Array.from(
        trace.querySelectorAll<SVGPathElement>('.point')
      )) {
        const b = point.getBoundingClientRect();
        if (b.width === 0) {
          continue;
        }
        out.push({
          region: `${meta.annotation}#${meta.config_index ?? 0}`,
          shape: point.getAttribute('d') ?? '',
          x: b.left + b.width / 2,
          y: b.top + b.height / 2,
          width: b.width,
          height: b.height
        });
      }
    }
    return out;
  });
}

/**
 * What is wrong with the regions' marks of a roofline: two regions of one shape,
 * a mark narrower than 14 px, two marks closer than 10 px (both ways).
 */
function markProblems(marks: IMark[]): string[] {
  const found: string[] = [];
  const byShape = new Map<string, string[]>();
  for (const m of marks) {
    byShape.set(m.shape, [...(byShape.get(m.shape) ?? []), m.region]);
    if (Math.max(m.width, m.height) < 12.5) {
      found.push(`${m.region}: marker ${m.width.toFixed(1)} px, too small`);
    }
  }
  for (const regions of byShape.values()) {
    if (regions.length > 1) {
      found.push(`one shape for ${regions.join(', ')}`);
    }
  }
  for (let i = 0; i < marks.length; i++) {
    for (let j = i + 1; j < marks.length; j++) {
      const a = marks[i];
      const b = marks[j];
      if (Math.max(Math.abs(a.x - b.x), Math.abs(a.y - b.y)) < 10) {
        found.push(`${a.region} and ${b.region} drawn on one spot`);
      }
    }
  }
  return found;
}

/**
 * What hides a line of the clock chart: the SM clock's and the temperature's
 * lines (their markers' boxes) overlapping, a line not drawn, or a clock tick
 * with a fractional MHz ("1,979.5").
 */
async function clockProblems(chart: Locator): Promise<string[]> {
  return chart.evaluate(el => {
    const found: string[] = [];
    const boxes = Array.from(
      el.querySelectorAll<SVGGElement>('.scatterlayer .trace')
    ).map(trace => {
      const points = Array.from(trace.querySelectorAll('.point')).map(p =>
        p.getBoundingClientRect()
      );
      if (points.length === 0) {
        return null;
      }
      return {
        top: Math.min(...points.map(p => p.top)),
        bottom: Math.max(...points.map(p => p.bottom))
      };
    });
    if (boxes.length !== 2 || boxes.some(b => b === null)) {
      return [`${boxes.length} lines drawn, not the clock's and temperature's`];
    }
    const [a, b] = boxes as { top: number; bottom: number }[];
    if (Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0) {
      found.push(
        `the clock line (${a.top.toFixed(0)}-${a.bottom.toFixed(0)} px) and the temperature line (${b.top.toFixed(0)}-${b.bottom.toFixed(0)} px) overlap`
      );
    }
    for (const tick of Array.from(
      el.querySelectorAll('.ytick text, .y2tick text')
    )) {
      if (/\.\d/.test(tick.textContent ?? '')) {
        found.push(`fractional tick "${tick.textContent}"`);
      }
    }
    return found;
  });
}

/** Pairs of text boxes that overlap by more than a pixel each way. */
function overlaps(texts: IText[]): string[] {
  const found: string[] = [];
  for (let i = 0; i < texts.length; i++) {
    for (let j = i + 1; j < texts.length; j++) {
      const a = texts[i];
      const b = texts[j];
      const x = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const y = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (x > 1 && y > 1) {
        found.push(`"${a.text}" (${a.where}) over "${b.text}" (${b.where})`);
      }
    }
  }
  return found;
}

/** Text boxes that stick out of the chart's box (cut off). */
function clipped(reading: IChartReading): string[] {
  const { box } = reading;
  return reading.texts
    .filter(
      t =>
        t.left < box.left - 1 ||
        t.right > box.right + 1 ||
        t.top < box.top - 1 ||
        t.bottom > box.bottom + 1
    )
    .map(t => `"${t.text}" (${t.where})`);
}

/**
 * Hover one point of each region's trace (the middle one) and read the hover
 * label: `[name the trace is for, label text]` per trace with points. Traces
 * are told apart by their `meta.annotation` (regions) or, without one, skipped.
 */
async function hoverRegions(
  page: Page,
  chart: Locator
): Promise<{ region: string; label: string }[]> {
  await chart.scrollIntoViewIfNeeded();
  const targets = await chart.evaluate(el => {
    type Meta = { annotation?: string; config_index?: number };
    type Datum = { trace?: { meta?: Meta | Meta[] } };
    const out: { region: string; key: string; x: number; y: number }[] = [];
    const centre = (p: Element): { x: number; y: number } => {
      const b = p.getBoundingClientRect();
      return { x: b.left + b.width / 2, y: b.top + b.height / 2 };
    };
    for (const trace of Array.from(
      el.querySelectorAll<SVGGElement>('.scatterlayer .trace, .barlayer .trace')
    )) {
      const data = (trace as unknown as { __data__?: Datum[] }).__data__;
      const meta = data?.[0]?.trace?.meta;
      const points = Array.from(trace.querySelectorAll('.point'));
      const shown = (p: Element): boolean =>
        p.getBoundingClientRect().width > 0;
      if (Array.isArray(meta)) {
        // One region per point (the traffic chart's bars).
        points.forEach((p, i) => {
          const region = meta[i]?.annotation;
          const key = `${region}#${meta[i]?.config_index}`;
          if (region && shown(p) && !out.some(o => o.key === key)) {
            out.push({ region, key, ...centre(p) });
          }
        });
        continue;
      }
      const visible = points.filter(shown);
      if (!meta?.annotation || visible.length === 0) {
        continue;
      }
      const point = visible[Math.floor(visible.length / 2)];
      out.push({
        region: meta.annotation,
        key: `${meta.annotation}#${meta.config_index}`,
        ...centre(point)
      });
    }
    return out;
  });
  const seen: { region: string; label: string }[] = [];
  for (const target of targets) {
    await page.mouse.move(target.x, target.y);
    // A point's label, or a unified one (the durations: every region at a run).
    const label = chart.locator('.hoverlayer .hovertext, .hoverlayer .legend');
    await label
      .first()
      .waitFor({ state: 'attached', timeout: 3000 })
      .catch(() => {
        // No label: recorded as '' and failed below.
      });
    const text = await chart.locator('.hoverlayer').first().textContent();
    seen.push({ region: target.region, label: text ?? '' });
    await page.mouse.move(0, 0);
  }
  return seen;
}

async function setTheme(page: Page, theme: string): Promise<void> {
  await page.evaluate(async name => {
    await window.jupyterapp.commands.execute('apputils:change-theme', {
      theme: name
    });
  }, theme);
  await page.waitForFunction(
    name => document.body.dataset.jpThemeName === name,
    theme
  );
}

/** Open session `id` from the history as a panel; wait for its charts. */
async function openSession(
  page: Page,
  id: number,
  drawn: readonly string[]
): Promise<Locator> {
  await page.locator(`${LIST} ${ROW}[data-session-id="${id}"]`).click();
  const view = page.locator(
    `${PANEL} .jp-nsightLab-SessionView[data-session-id="${id}"]`
  );
  await expect(view).toBeVisible({ timeout: 30000 });
  for (const name of drawn) {
    await expect(
      view
        .locator(
          `.jp-nsightLab-ChartView[data-chart="${name}"][data-state="drawn"] .main-svg`
        )
        .first()
    ).toBeVisible({ timeout: 30000 });
  }
  // Plotly settles its layout (legend rows measured, then drawn once more).
  await page.waitForTimeout(500);
  return view;
}

test('every chart of every fixture session is readable in light and dark', async ({
  page
}) => {
  test.setTimeout(600000);
  await openSidebar(page);
  const list = page.locator(LIST);
  await expect
    .poll(async () => Number(await list.getAttribute('data-total')), {
      timeout: 30000
    })
    .toBe(6);
  // The file browser folded: the panel gets the main area's width.
  await page.sidebar.close('left');

  const problems: string[] = [];
  const report = (what: string, found: string[]): void => {
    for (const f of found) {
      problems.push(`${what}: ${f}`);
    }
  };

  for (const theme of ['JupyterLab Light', 'JupyterLab Dark']) {
    await setTheme(page, theme);
    const tag = theme.endsWith('Dark') ? 'dark' : 'light';
    for (const session of SESSIONS) {
      const view = await openSession(page, session.id, session.drawn);
      const readings = await readCharts(view);
      const where = (chart: string): string =>
        `#${session.id} ${session.name} ${chart} (${tag})`;
      expect
        .soft(readings.map(r => r.chart).sort())
        .toEqual([...session.drawn].sort());
      for (const reading of readings) {
        report(where(reading.chart), overlaps(reading.texts));
        report(where(reading.chart), clipped(reading));
        await view
          .locator(`.jp-nsightLab-ChartView[data-chart="${reading.chart}"]`)
          .screenshot({
            path: shot(`readability/s${session.id}-${reading.chart}-${tag}.png`)
          });
      }
      // Every region its own legend entry and marker (duration, roofline).
      const regions = session.id === 6 ? 8 : 12;
      for (const chart of ['duration', 'roofline']) {
        const reading = readings.find(r => r.chart === chart);
        const entries = (reading?.legend ?? []).filter(
          e =>
            !/TFLOP\/s$|^DRAM /.test(e.text) &&
            !e.text.startsWith('ridge points')
        );
        expect.soft(entries.length, where(chart)).toBe(regions);
        expect
          .soft(
            new Set(entries.map(e => e.marker)).size,
            `${where(chart)}: legend markers ${JSON.stringify(entries)}`
          )
          .toBe(regions);
        if (session.id !== 6) {
          for (const region of REGIONS) {
            expect
              .soft(
                entries.some(e => e.text.startsWith(region)),
                `${where(chart)}: ${region} in the legend`
              )
              .toBe(true);
          }
        }
      }
      // Counters over time: a panel of its own per region, titled with its name.
      const counters = readings.find(r => r.chart === 'counters');
      if (counters) {
        const titles = counters.texts
          .filter(t => t.where.includes('annotation'))
          .map(t => t.text.replace(/^\S+\s/, ''));
        expect.soft(titles, where('counters')).toEqual(REGIONS);
      }
      // Traffic: every region's name on its row, its GB/s printed.
      const traffic = readings.find(r => r.chart === 'traffic');
      if (traffic && session.id !== 6) {
        for (const region of REGIONS) {
          expect
            .soft(
              traffic.texts.some(t => t.text.startsWith(region)),
              `${where('traffic')}: ${region}`
            )
            .toBe(true);
        }
        const rates = traffic.texts.filter(t => /[GT]B\/s$/.test(t.text));
        expect.soft(rates.length, where('traffic')).toBe(12);
      }
      // The key says what the printed figure is (bars measure bytes).
      if (traffic) {
        expect
          .soft(
            traffic.legend.some(e =>
              /printed.*bytes ÷ median time/.test(e.text)
            ),
            `${where('traffic')}: a key for the printed rate in ${JSON.stringify(traffic.legend.map(e => e.text))}`
          )
          .toBe(true);
      }
      // Data marks: the roofline's points told apart, the clock lines both seen.
      const plotOf = (chart: string): Locator =>
        view.locator(
          `.jp-nsightLab-ChartView[data-chart="${chart}"][data-state="drawn"] .jp-nsightLab-ChartView-plot`
        );
      if (session.drawn.includes('roofline')) {
        const marks = await readMarks(plotOf('roofline'));
        expect
          .soft(marks.length, where('roofline marks'))
          .toBeGreaterThanOrEqual(8);
        report(where('roofline marks'), markProblems(marks));
      }
      if (session.drawn.includes('clocks')) {
        report(where('clocks lines'), await clockProblems(plotOf('clocks')));
      }
      // A chart not drawn says what it lacks, in words that are true of it.
      const missing = view.locator(
        '.jp-nsightLab-ChartView[data-state="missing"] .jp-nsightLab-ChartView-missing'
      );
      for (let i = 0; i < (await missing.count()); i++) {
        const words = (await missing.nth(i).textContent()) ?? '';
        // These sessions ran on an H200: no chart asks to run on a GPU.
        expect
          .soft(words, where('missing'))
          .not.toMatch(/run on an NVIDIA GPU/i);
        const cut = await missing
          .nth(i)
          .evaluate(el => el.scrollWidth > el.clientWidth + 1);
        expect.soft(cut, `${where('missing')}: "${words}" cut`).toBe(false);
      }
      if (session.id === 5) {
        await expect
          .soft(
            view.locator(
              '.jp-nsightLab-ChartView[data-chart="clocks"][data-state="missing"]'
            )
          )
          .toContainText('ncu backend');
      }
      // Hover: each region's point names its region (light theme only: the
      // hover does not depend on the theme).
      if (tag === 'light') {
        for (const chart of ['duration', 'roofline', 'traffic', 'counters']) {
          if (!session.drawn.includes(chart)) {
            continue;
          }
          const box = view.locator(
            `.jp-nsightLab-ChartView[data-chart="${chart}"] .jp-nsightLab-ChartView-plot`
          );
          const hovers = await hoverRegions(page, box);
          expect
            .soft(hovers.length, where(chart))
            .toBeGreaterThanOrEqual(chart === 'roofline' ? 8 : regions);
          // A per-kernel backend's region names its kernel in the hover.
          if (
            (session.id === 3 || session.id === 4) &&
            (chart === 'roofline' || chart === 'traffic')
          ) {
            for (const { region, label } of hovers) {
              if (!/kernels?: \S/.test(label)) {
                problems.push(
                  `${where(chart)}: hovering ${region} names no kernel: "${label}"`
                );
              }
            }
          }
          for (const { region, label } of hovers) {
            if (!label.includes(region)) {
              problems.push(
                `${where(chart)}: hovering ${region} shows "${label}"`
              );
            }
          }
        }
      }
    }
  }
  await setTheme(page, 'JupyterLab Light');
  expect(problems, problems.join('\n')).toEqual([]);
});
