/**
 * The nsight-lab sidebar and its main-area panels against a real JupyterLab (Galata's
 * 1024 x 768 window, the sidebar at its default width): the live view of a running %%nsight cell;
 * the sidebar usable at 250 px (five history rows or more, the live chart whole,
 * every filter labelled and readable); a past session opened as a panel in the main
 * area with its four charts (legends below the plots), a comparison panel, both
 * restored on reload, the dark theme, and an untrusted annotation shown as text; the
 * comparison of the same code run twice shows what the server computes for it.
 */

import { expect, test } from '@jupyterlab/galata';

import { Locator, Page } from '@playwright/test';

import {
  LIST,
  LIVE,
  SIDEBAR,
  XSS,
  openSidebar,
  percentile,
  putCell,
  runCode,
  shot,
  writeResult
} from './nsightLab';

test.describe.configure({ mode: 'serial' });

/** The main area's dock panel, where documents and the nsight-lab panels go. */
const MAIN = '#jp-main-dock-panel';
const SESSION_PANEL = `${MAIN} .jp-nsightLab-SelectionPanel[data-kind="session"]`;
const COMPARE_PANEL = `${MAIN} .jp-nsightLab-SelectionPanel[data-kind="compare"]`;
const ROW = '.jp-nsightLab-SessionList-row';

/** A box in page pixels. */
interface IBox {
  top: number;
  bottom: number;
  left: number;
  right: number;
}

async function box(locator: Locator): Promise<IBox> {
  return locator.evaluate(el => {
    const r = el.getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, left: r.left, right: r.right };
  });
}

/**
 * The history rows wholly inside the list's visible area (the scroller's box),
 * counted by their boxes: rows rendered but scrolled out of view do not count.
 */
async function visibleRows(page: Page): Promise<number> {
  return page
    .locator(`${LIST} .jp-nsightLab-SessionList-scroller`)
    .evaluate((scroller, row) => {
      const view = scroller.getBoundingClientRect();
      return Array.from(scroller.querySelectorAll<HTMLElement>(row)).filter(
        el => {
          const r = el.getBoundingClientRect();
          return (
            el.dataset.sessionId !== undefined &&
            r.height > 0 &&
            r.top >= view.top - 0.5 &&
            r.bottom <= view.bottom + 0.5
          );
        }
      ).length;
    }, ROW);
}

/**
 * Each chart's legend against its plot area: the legend box starts below the
 * plot's drag area (the plot itself), and every entry lies inside the legend box
 * (a scrolled legend puts entries outside it).
 */
async function legendChecks(
  scope: Locator
): Promise<
  { chart: string; entries: number; clear: boolean; allShown: boolean }[]
> {
  return scope.evaluate(root =>
    Array.from(root.querySelectorAll<HTMLElement>('[data-chart]'))
      .filter(chart => chart.querySelector('.legend'))
      .map(chart => {
        const legend = chart.querySelector('.legend') as SVGGElement;
        const bg = (
          legend.querySelector('.bg') as SVGRectElement
        ).getBoundingClientRect();
        const plot = (
          chart.querySelector('.nsewdrag') as SVGRectElement
        ).getBoundingClientRect();
        const entries = Array.from(legend.querySelectorAll('.traces')).map(t =>
          t.getBoundingClientRect()
        );
        return {
          chart: chart.dataset.chart ?? '',
          entries: entries.length,
          clear: bg.top >= plot.bottom,
          allShown: entries.every(
            e => e.top >= bg.top - 1 && e.bottom <= bg.bottom + 1
          )
        };
      })
  );
}

/** Seed `count` small sessions from one cell, quietly (no widget output). */
function seedCells(prefix: string, count: number): string {
  return [
    'ip = get_ipython()',
    `for i in range(${count}): ip.run_cell_magic('nsight', f'--backend cpu --runs 3 --warmup 0 --quiet --name ${prefix}-{i}', 'x = sum(range(100))')`
  ].join('\n');
}

// Galata tracks Jupyter sessions through an unanchored /api/sessions route that would
// also catch /nsight-lab/api/sessions; turn that tracking off.
test.use({ autoGoto: true, sessions: null });

interface ISample {
  runCount: number;
  status: string;
  finishedAt: string;
  renderedAt: number;
  updateMs: number | null;
}

test('the live view follows a running %%nsight cell run by run', async ({
  page
}) => {
  test.setTimeout(240000);
  await page.notebook.createNew('live.ipynb');
  await openSidebar(page);
  await runCode(page, 0, '%load_ext nsight_lab');

  // Record every render of the live view in the page, with the browser's clock.
  await page.evaluate(() => {
    const samples: unknown[] = [];
    (window as unknown as { nsightSamples: unknown[] }).nsightSamples = samples;
    const node = document.querySelector(
      '#nsight-lab-sidebar .jp-nsightLab-LiveView'
    );
    if (!node) {
      throw new Error('no live view');
    }
    const record = (): void => {
      const data = (node as HTMLElement).dataset;
      samples.push({
        runCount: Number(data.runCount ?? 0),
        status: data.status ?? '',
        finishedAt: data.lastFinishedAt ?? '',
        renderedAt: Number(data.renderedAt ?? 0),
        seenAt: Date.now(),
        updateMs: data.lastUpdateMs ? Number(data.lastUpdateMs) : null
      });
    };
    new MutationObserver(record).observe(node, {
      attributes: true,
      attributeFilter: ['data-rendered-at']
    });
  });

  await putCell(
    page,
    1,
    '%%nsight --backend cpu --runs 40 --warmup 0 --name live-demo\nimport time\ntime.sleep(0.25)'
  );
  // Run the cell without waiting for it: the checks below run while it runs.
  const cellDone = page.notebook.runCell(1);

  const live = page.locator(LIVE);
  await expect(live).toHaveAttribute('data-status', 'running', {
    timeout: 30000
  });
  await expect
    .poll(async () => Number(await live.getAttribute('data-run-count')), {
      timeout: 30000
    })
    .toBeGreaterThanOrEqual(5);
  await page
    .locator(SIDEBAR)
    .screenshot({ path: shot('sidebar-live-light.png') });
  await expect(live).toHaveAttribute('data-status', 'completed', {
    timeout: 60000
  });
  await expect(live).toHaveAttribute('data-run-count', '40', {
    timeout: 10000
  });
  await cellDone;

  const samples = (await page.evaluate(
    () => (window as unknown as { nsightSamples: ISample[] }).nsightSamples
  )) as ISample[];
  const running = samples.filter(s => s.status === 'running');
  const counts = running.map(s => s.runCount);
  // The count grew while the cell ran: many distinct, non-decreasing values.
  expect(new Set(counts).size).toBeGreaterThanOrEqual(10);
  for (let i = 1; i < counts.length; i++) {
    expect(counts[i]).toBeGreaterThanOrEqual(counts[i - 1]);
  }
  // Delay from a run's store write (its finished_at) to the render that showed it,
  // once per newly shown run.
  const delays: number[] = [];
  const updates: number[] = [];
  let lastFinished = '';
  for (const s of running) {
    if (s.finishedAt && s.finishedAt !== lastFinished) {
      lastFinished = s.finishedAt;
      delays.push(s.renderedAt - Date.parse(s.finishedAt));
      if (s.updateMs !== null) {
        updates.push(s.updateMs);
      }
    }
  }
  const result = {
    what: 'time from a run finishing (its finished_at in the store) to the sidebar live view showing it',
    cell: '%%nsight --backend cpu --runs 40 --warmup 0 (time.sleep(0.25) per run)',
    samples: delays.length,
    delay_ms: {
      median: percentile(delays, 50),
      p90: percentile(delays, 90),
      max: Math.max(...delays),
      min: Math.min(...delays)
    },
    event_to_chart_ms: {
      median: percentile(updates, 50),
      p90: percentile(updates, 90),
      max: updates.length ? Math.max(...updates) : null
    },
    target_ms: 500,
    meets_target: percentile(delays, 90) <= 500
  };
  writeResult('live_delay.json', result);
  expect(delays.length).toBeGreaterThanOrEqual(10);
  expect(percentile(delays, 50)).toBeLessThanOrEqual(500);
});

test('the live view of a 3 x 30 cell counts runs over all configs', async ({
  page
}) => {
  test.setTimeout(180000);
  await page.notebook.createNew('three-by-thirty.ipynb');
  await openSidebar(page);
  await runCode(page, 0, '%load_ext nsight_lab');
  // Config 1's 30 runs are fast; the first run of config 2 waits, so the view holds
  // still at the end of config 1: 30 of 90 runs (not 90 of 270: issue 9).
  await putCell(
    page,
    1,
    [
      '%%nsight --backend cpu --configs 1,2,3 --runs 30 --warmup 0 --name three-by-thirty',
      'import os, time',
      "if n == 2 and not os.environ.get('NSL_3X30_PAUSED'): os.environ['NSL_3X30_PAUSED'] = '1'; time.sleep(8)"
    ].join('\n')
  );
  const cellDone = page.notebook.runCell(1);

  const live = page.locator(LIVE);
  const text = live.locator('.jp-nsightLab-LiveView-progressText');
  await expect(live).toHaveAttribute('data-status', 'running', {
    timeout: 30000
  });
  await expect(text).toContainText('30 / 90 runs', { timeout: 30000 });
  await expect(text).toContainText('config 1 / 3');
  await expect(text).toContainText('run 30 / 30');
  await expect(live).toHaveAttribute('data-run-count', '30');
  await expect(live).toHaveAttribute('data-status', 'completed', {
    timeout: 60000
  });
  await expect(text).toContainText('90 / 90 runs', { timeout: 10000 });
  await cellDone;
});

test('at its default width the sidebar lists five sessions or more, shows the live chart whole, and labels every filter', async ({
  page
}) => {
  test.setTimeout(180000);
  await page.notebook.createNew('rows.ipynb');
  await runCode(page, 0, '%load_ext nsight_lab');
  await runCode(page, 1, seedCells('seed', 6));
  await runCode(
    page,
    2,
    '%%nsight --backend cpu --runs 20 --warmup 0 --name live-chart\nx = sum(range(1000))'
  );
  // A laptop's window, shorter than Galata's 1024 x 768.
  await page.setViewportSize({ width: 1280, height: 720 });
  const sidebar = await openSidebar(page);
  const list = page.locator(LIST);
  await expect
    .poll(async () => Number(await list.getAttribute('data-total')), {
      timeout: 30000
    })
    .toBeGreaterThanOrEqual(7);
  await expect(list.locator(`${ROW}[data-session-id]`).first()).toBeVisible();

  const width = (await box(sidebar)).right - (await box(sidebar)).left;
  const rows = await visibleRows(page);
  const scroller = await box(
    list.locator('.jp-nsightLab-SessionList-scroller')
  );

  // The live view's duration chart, whole inside its section.
  const live = page.locator(LIVE);
  await expect(live).toHaveAttribute('data-status', 'completed', {
    timeout: 30000
  });
  const chart = live.locator(
    '.jp-nsightLab-ChartView[data-chart="duration"][data-state="drawn"]'
  );
  await expect(chart.locator('.main-svg').first()).toBeVisible({
    timeout: 30000
  });
  const section = await box(live);
  const plot = await box(chart.locator('.jp-nsightLab-ChartView-plot'));
  const svg = await box(chart.locator('.main-svg').first());

  // Filters: every input and dropdown has a name; the placeholders fit.
  await sidebar.locator('.jp-nsightLab-FilterBar-toggle').click();
  const controls = sidebar.locator(
    '.jp-nsightLab-FilterBar input, .jp-nsightLab-FilterBar select'
  );
  const count = await controls.count();
  expect(count).toBe(10);
  for (let i = 0; i < count; i++) {
    await expect(controls.nth(i)).toBeVisible();
    await expect(controls.nth(i)).toHaveAccessibleName(/\S/);
  }
  const placeholders = await sidebar.evaluate(root => {
    const context = document.createElement('canvas').getContext('2d')!;
    return Array.from(
      root.querySelectorAll<HTMLInputElement>('.jp-nsightLab-FilterBar input')
    )
      .filter(input => input.placeholder)
      .map(input => {
        const style = getComputedStyle(input);
        context.font = `${style.fontSize} ${style.fontFamily}`;
        const room =
          input.clientWidth -
          parseFloat(style.paddingLeft) -
          parseFloat(style.paddingRight);
        return {
          placeholder: input.placeholder,
          needs: Math.ceil(context.measureText(input.placeholder).width),
          room
        };
      });
  });
  await page
    .locator(SIDEBAR)
    .screenshot({ path: shot('sidebar-default-width-light.png') });
  await sidebar.locator('.jp-nsightLab-FilterBar-toggle').click();
  const rowsAfter = await visibleRows(page);

  writeResult('sidebar_default_width.json', {
    what: 'the sidebar at its default width: history rows wholly visible, the live chart against its section, filter placeholders against their inputs',
    window_px: page.viewportSize(),
    sidebar_width_px: Math.round(width),
    sessions_stored: Number(await list.getAttribute('data-total')),
    history_list_height_px: Math.round(scroller.bottom - scroller.top),
    history_rows_visible: rows,
    history_rows_visible_after_filters_hidden_again: rowsAfter,
    live_section_px: [Math.round(section.top), Math.round(section.bottom)],
    live_chart_px: [Math.round(plot.top), Math.round(plot.bottom)],
    placeholders
  });
  expect(width).toBeGreaterThanOrEqual(240);
  expect(width).toBeLessThanOrEqual(260);
  expect(rows).toBeGreaterThanOrEqual(5);
  expect(rowsAfter).toBe(rows);
  // Not cut: the chart and its drawing end inside the live section.
  expect(plot.bottom).toBeLessThanOrEqual(section.bottom + 0.5);
  expect(svg.bottom).toBeLessThanOrEqual(plot.bottom + 0.5);
  expect(plot.top).toBeGreaterThanOrEqual(section.top);
  expect(placeholders.length).toBeGreaterThanOrEqual(4);
  for (const p of placeholders) {
    expect(p.needs, p.placeholder).toBeLessThanOrEqual(p.room);
  }
});

test('a session and a comparison open as panels in the main area, and come back on reload', async ({
  page
}) => {
  test.setTimeout(300000);
  const alerts: string[] = [];
  page.on('dialog', dialog => {
    if (dialog.type() === 'beforeunload') {
      // The reload below: leave the page.
      void dialog.accept();
      return;
    }
    alerts.push(dialog.message());
    void dialog.dismiss();
  });
  await page.notebook.createNew('history.ipynb');
  await runCode(page, 0, '%load_ext nsight_lab\n%nsight peaks --cpu');
  const profile = (name: string, n: number): string =>
    [
      `%%nsight --backend cpu --runs 6 --warmup 1 --derive tflops,gbps --configs 1,2,3 --name ${name}`,
      'import torch, nsight',
      `a = torch.randn(${n} * n, ${n})`,
      // One-line blocks: the editor would indent the line after a colon.
      `with nsight.annotate(${JSON.stringify(XSS)}): a @ a.T`,
      'with nsight.annotate("add"): a + a'
    ].join('\n');
  await runCode(page, 1, profile('first', 64));
  await runCode(page, 2, profile('second', 96));

  await openSidebar(page);
  const list = page.locator(LIST);
  const first = list.locator(ROW, { hasText: 'first' });
  const second = list.locator(ROW, { hasText: 'second' });
  await first.click({ timeout: 30000 });

  // The session opens in the main area, not in the sidebar.
  const panel = page.locator(SESSION_PANEL);
  await expect(panel).toBeVisible({ timeout: 30000 });
  // The file browser folded: the panel gets the width the screenshots show.
  await page.sidebar.close('left');
  await expect(panel.locator('.jp-nsightLab-SelectionView')).toHaveAttribute(
    'data-state',
    'session',
    { timeout: 30000 }
  );
  expect(
    await page.locator(`${SIDEBAR} .jp-nsightLab-SessionView`).count()
  ).toBe(0);
  const id = await first.getAttribute('data-session-id');
  await expect(
    page.locator(`${MAIN} .lm-TabBar-tab.jp-mod-current`)
  ).toContainText(`#${id} first`);
  // The cpu backend reads no clocks: that chart says why in words; the other
  // three are drawn.
  const plots = panel.locator('.jp-nsightLab-SessionView .js-plotly-plot');
  await expect(plots).toHaveCount(3, { timeout: 30000 });
  for (const kind of ['duration', 'roofline', 'traffic']) {
    await expect(
      panel
        .locator(
          `.jp-nsightLab-ChartView[data-chart="${kind}"][data-state="drawn"] .main-svg`
        )
        .first()
    ).toBeVisible();
  }
  await expect(
    panel.locator(
      '.jp-nsightLab-ChartView[data-chart="clocks"][data-state="missing"]'
    )
  ).toContainText('telemetry');
  // Legends below their plots, every entry shown (two regions x three configs).
  const legends = await legendChecks(panel);
  expect(legends.length).toBeGreaterThanOrEqual(2);
  for (const legend of legends) {
    expect(legend, legend.chart).toMatchObject({ clear: true, allShown: true });
  }
  // Each chart is drawn at its box's width (not plotly's 700 px default).
  const widths = await panel.evaluate(root =>
    Array.from(
      root.querySelectorAll<HTMLElement>('.jp-nsightLab-ChartView-plot')
    )
      .filter(plot => plot.querySelector('.main-svg'))
      .map(plot => [
        plot.getBoundingClientRect().width,
        plot.querySelector('.main-svg')!.getBoundingClientRect().width
      ])
  );
  expect(widths.length).toBe(3);
  for (const [box, svg] of widths) {
    expect(svg).toBeLessThanOrEqual(box + 1);
  }
  const duration = legends.find(legend => legend.chart === 'duration');
  expect(duration?.entries).toBe(6);

  // The summary table: durations with their unit, the untrusted annotation as text.
  // The first table is the regions' summary (a second, folded, holds other counters).
  const table = panel.locator('.jp-nsightLab-RunTable').first();
  const cell = table.locator('td', { hasText: XSS });
  await expect(cell.first()).toHaveText(XSS);
  const avg = await table.evaluate(t => {
    const head = Array.from(t.querySelectorAll('th')).map(th => th.textContent);
    const row = (t as HTMLTableElement).tBodies[0].rows[0];
    // The median duration, formatted by the server (a cpu session's is the host's).
    const column = head.findIndex(name => name?.startsWith('Duration'));
    return row.cells[column].textContent ?? '';
  });
  expect(avg).toMatch(/^[\d.]+ (ns|µs|ms|s)$/);
  expect(
    await page.locator(`${MAIN} .jp-nsightLab-SelectionPanel img`).count()
  ).toBe(0);
  expect(alerts).toEqual([]);

  // Light theme screenshot of the panel, then the dark theme redraws the charts.
  const tick = panel
    .locator('.jp-nsightLab-ChartView[data-chart="duration"] .xtick text')
    .first();
  const lightFill = await tick.evaluate(el => getComputedStyle(el).fill);
  await page.screenshot({ path: shot('panel-session-light.png') });
  await page.evaluate(async () => {
    await window.jupyterapp.commands.execute('apputils:change-theme', {
      theme: 'JupyterLab Dark'
    });
  });
  await expect
    .poll(async () => tick.evaluate(el => getComputedStyle(el).fill), {
      timeout: 20000
    })
    .not.toBe(lightFill);
  await page.locator('#jupyterlab-splash').waitFor({ state: 'detached' });
  await page.screenshot({ path: shot('panel-session-dark.png') });
  await panel
    .locator('.jp-nsightLab-SessionView-charts')
    .screenshot({ path: shot('panel-session-charts-dark.png') });

  // Compare the two sessions: a second panel in the main area.
  await second.click({ modifiers: ['Control'], timeout: 30000 });
  const compare = page.locator(COMPARE_PANEL);
  await expect(compare).toBeVisible({ timeout: 30000 });
  const rows = compare.locator('.jp-nsightLab-CompareView-table tbody tr');
  await expect(rows.first()).toBeVisible({ timeout: 30000 });
  expect(await rows.count()).toBeGreaterThanOrEqual(2);
  await expect(
    compare
      .locator('.jp-nsightLab-CompareView-table td', { hasText: XSS })
      .first()
  ).toHaveText(XSS);
  await expect(
    compare.locator('.jp-nsightLab-CompareView-table')
  ).toContainText('×');
  await page.screenshot({ path: shot('panel-compare-dark.png') });
  await page.evaluate(async () => {
    await window.jupyterapp.commands.execute('apputils:change-theme', {
      theme: 'JupyterLab Light'
    });
  });
  await page.locator('#jupyterlab-splash').waitFor({ state: 'detached' });
  await page.screenshot({ path: shot('panel-compare-light.png') });

  // Clicking the session again activates its panel: still one of each.
  await first.click();
  await expect(page.locator(SESSION_PANEL)).toHaveCount(1);
  await expect(page.locator(SESSION_PANEL)).toBeVisible();

  // Reloaded, the layout restorer opens both panels again.
  // The notebook is closed first: reopened by the restorer, it would ask for a
  // kernel in a dialog over everything.
  await page.notebook.activate('history.ipynb');
  await page.notebook.save();
  // The layout is saved (debounced) after the notebook closes: reload after that.
  const saved = page.waitForRequest(
    request =>
      request.url().includes('/api/workspaces') && request.method() === 'PUT'
  );
  await page
    .locator(`${MAIN} .lm-TabBar-tab`, { hasText: 'history.ipynb' })
    .locator('.lm-TabBar-tabCloseIcon')
    .click();
  await expect(
    page.locator(`${MAIN} .lm-TabBar-tab`, { hasText: 'history.ipynb' })
  ).toHaveCount(0);
  await expect(
    page.locator(`${MAIN} .jp-nsightLab-SelectionPanel`)
  ).toHaveCount(2);
  await saved;
  // Not Galata's readiness (a Launcher in front): the restored layout has none.
  await page.reload({ waitForIsReady: false });
  await page.locator('#jupyterlab-splash').waitFor({ state: 'detached' });
  await expect(
    page.locator(`${MAIN} .jp-nsightLab-SelectionPanel`)
  ).toHaveCount(2, { timeout: 60000 });
  await page
    .locator(`${MAIN} .lm-TabBar-tab`, { hasText: `#${id} first` })
    .click();
  await expect(
    page.locator(SESSION_PANEL).locator('.js-plotly-plot')
  ).toHaveCount(3, { timeout: 30000 });
  expect(
    await page.locator(`${MAIN} .jp-nsightLab-SelectionPanel img`).count()
  ).toBe(0);
  expect(alerts).toEqual([]);
});

/** A served row of `GET compare` (src/types.ts ICompareRow), the fields judged here. */
interface IServedRow {
  metric: string;
  unit: string;
  ratio: number | null;
  ci_low: number | null;
  ci_high: number | null;
  median_a: number | null;
  median_b: number | null;
  verdict: string | null;
  threshold: number;
  timed: boolean;
  flagged: boolean;
  host_differs: boolean;
  host_probe_ns_a: number | null;
  host_probe_ns_b: number | null;
  clock_differs: boolean;
  throttled_a: number;
  throttled_b: number;
  folded: boolean;
  note: string;
  cells: Record<string, string>;
}

/** `GET compare` as served (src/types.ts ICompareResponse), the fields judged here. */
interface IServed {
  a: { id: number };
  b: { id: number };
  threshold: number;
  verdict: { verdict: string | null };
  tolerances: { host: number };
  rows: IServedRow[];
}

/** The cells of a table's body rows, by column key (`td[data-column]`). */
async function tableCells(table: Locator): Promise<Record<string, string>[]> {
  return table
    .locator('tbody tr')
    .evaluateAll(trs =>
      trs.map(tr =>
        Object.fromEntries(
          Array.from((tr as HTMLTableRowElement).cells).map(td => [
            td.dataset.column ?? '',
            td.textContent ?? ''
          ])
        )
      )
    );
}

/** Nanoseconds per unit of a formatted duration (text/units.py format_duration). */
const DURATION_NS: Record<string, number> = { ns: 1, µs: 1e3, ms: 1e6, s: 1e9 };

/**
 * A shown number against the served one at the precision shown: within half a unit
 * of its last digit (times `scale`).
 */
function expectShown(shown: string, served: number, scale = 1): void {
  const decimals = (shown.split('.')[1] ?? '').length;
  expect(
    Math.abs(Number(shown) * scale - served),
    `${shown} shown, ${served} served`
  ).toBeLessThanOrEqual((0.5 * 10 ** -decimals + 1e-9) * scale);
}

test('two sessions of the same code compared: the panel shows what GET compare computes, each verdict following its interval and threshold (⚠ when the host probe flagged a step), durations with units, work-model rows deterministic', async ({
  page
}) => {
  // What the code guarantees, whatever the host did between the sessions. That the
  // same code reads "no change" on a quiet host is a statistical claim about the
  // host, not the panel: it lives in benchmarks/cpu_session_drift.py
  // (benchmarks/results/cpu_session_drift.json: on the shared 2-core machine
  // consecutive sessions moved by up to 15 % at one host speed, 20-40 % across a
  // step of its speed, which the host probe names); on a loaded host this pair's
  // interval was seen to miss 1 (1.014) with no step flagged.
  test.setTimeout(240000);
  await page.notebook.createNew('same.ipynb');
  await runCode(page, 0, '%load_ext nsight_lab');
  const cell = (name: string): string =>
    // It names PyTorch, so the work model counts its ops (none: 0 FLOPs each
    // time): a cell that does not is not counted at all (issue 32's first cell).
    `%%nsight --backend cpu --runs 200 --warmup 5 --quiet --name ${name}\nimport torch\ntotal = 0\nfor i in range(20000):\n    total += i * i`;
  // Names of this run only: the store outlives a test (and --repeat-each). A first
  // session of the cell, not compared, warms the path.
  const tag = Date.now().toString(36);
  await runCode(page, 1, cell(`same-warm-up-${tag}`));
  await runCode(page, 2, cell(`same-a-${tag}`));
  await runCode(page, 3, cell(`same-b-${tag}`));

  await openSidebar(page);
  const list = page.locator(LIST);
  const a = list.locator(ROW, { hasText: `same-a-${tag}` });
  const b = list.locator(ROW, { hasText: `same-b-${tag}` });
  await a.click({ timeout: 30000 });
  await b.click({ modifiers: ['Control'], timeout: 30000 });
  const ids = [
    Number(await a.getAttribute('data-session-id')),
    Number(await b.getAttribute('data-session-id'))
  ];

  const compare = page.locator(COMPARE_PANEL);
  await expect(compare).toBeVisible({ timeout: 30000 });
  // The comparison's view (the panel holds a session view too, empty here).
  const view = compare.locator('.jp-nsightLab-CompareView[data-a]');
  const table = view.locator('.jp-nsightLab-CompareView-table');
  await expect(table.locator('tbody tr').first()).toBeVisible({
    timeout: 30000
  });
  // The panel compares the two sessions clicked, a against b.
  expect([
    Number(await view.getAttribute('data-a')),
    Number(await view.getAttribute('data-b'))
  ]).toEqual(ids);

  // What the server computes for them, asked as the extension asks (its settings'
  // base URL and token, the XSRF cookie).
  const answer = await page.evaluate(async ([idA, idB]) => {
    const settings = window.jupyterapp.serviceManager.serverSettings;
    const headers: Record<string, string> = {};
    if (settings.token) {
      headers.Authorization = `token ${settings.token}`;
    }
    const xsrf = /(?:^|;\s*)_xsrf=([^;]*)/.exec(document.cookie);
    if (xsrf) {
      headers['X-XSRFToken'] = decodeURIComponent(xsrf[1]);
    }
    const response = await fetch(
      `${settings.baseUrl}nsight-lab/api/compare?a=${idA}&b=${idB}`,
      { headers, credentials: 'same-origin' }
    );
    return { status: response.status, body: await response.json() };
  }, ids);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  const served = answer.body as IServed;
  expect([served.a.id, served.b.id]).toEqual(ids);

  const shown = await tableCells(table);
  const folded = await tableCells(
    view.locator('.jp-nsightLab-CompareView-foldedTable')
  );
  writeResult('compare_same_code.json', {
    what: 'two sessions of the same %%nsight --backend cpu cell (200 runs of a pure-Python loop of 20,000 multiply-adds), after a first session of it: the comparison panel (rows, folded rows) and GET compare for the pair',
    shown,
    folded,
    served
  });

  // The panel shows exactly the served rows, the judged ones in the table and the
  // deterministic ones folded, each cell as served.
  const judged = served.rows.filter(row => !row.folded);
  expect(shown).toHaveLength(judged.length);
  expect(folded).toHaveLength(served.rows.length - judged.length);
  for (const [rows, cells] of [
    [judged, shown],
    [served.rows.filter(row => row.folded), folded]
  ] as const) {
    rows.forEach((row, i) => {
      for (const [key, text] of Object.entries(cells[i])) {
        expect(text, `${row.metric} ${key}`).toBe(row.cells[key]);
      }
    });
  }
  await expect(
    view.locator('.jp-nsightLab-CompareView-overall')
  ).toHaveAttribute('data-verdict', served.verdict.verdict ?? '');

  // The duration: shown numbers are the served ones at the precision shown, with
  // their units, and its verdict follows its interval and the threshold.
  const duration = judged.find(row => row.metric === 'gpu__time_duration.sum');
  expect(duration, JSON.stringify(judged.map(r => r.metric))).toBeDefined();
  const row = duration!;
  const cells = shown[judged.indexOf(row)];
  expect(row.unit).toBe('ns');
  expect(row.timed).toBe(true);
  expect(cells.metric ?? row.cells.metric).toBe('duration (host timer)');
  for (const side of ['a', 'b'] as const) {
    const text = cells[`median_${side}`];
    const quantity = /^([\d.]+) (ns|µs|ms|s)$/.exec(text);
    expect(quantity, text).not.toBeNull();
    expectShown(
      quantity![1],
      row[`median_${side}`]!,
      DURATION_NS[quantity![2]]
    );
  }
  const ratioText = /^([\d.]+)× \[([\d.]+), ([\d.]+)\]$/.exec(cells.ratio);
  expect(ratioText, cells.ratio).not.toBeNull();
  const [ratio, low, high] = [row.ratio!, row.ci_low!, row.ci_high!];
  expectShown(ratioText![1], ratio);
  expectShown(ratioText![2], low);
  expectShown(ratioText![3], high);
  expect(row.ratio).toBeCloseTo(row.median_b! / row.median_a!, 9);
  expect(low).toBeLessThanOrEqual(ratio);
  expect(high).toBeGreaterThanOrEqual(ratio);
  const changeText = /^([+-][\d.]+) %$/.exec(cells.change);
  if (changeText !== null) {
    expectShown(changeText[1], (ratio - 1) * 100);
  }
  expect(row.threshold).toBe(served.threshold);
  const beyond =
    (low > 1 && ratio > 1 + row.threshold) ||
    (high < 1 && ratio < 1 - row.threshold);
  const verdict = !beyond ? 'no change' : ratio > 1 ? 'slower' : 'faster';
  // The cpu backend reads no clock: the host probe alone flags a timed row (⚠),
  // when the sides' median probes are apart by more than the served tolerance.
  expect(row.clock_differs).toBe(false);
  expect(row.throttled_a + row.throttled_b).toBe(0);
  expect(row.host_probe_ns_a).toBeGreaterThan(0);
  expect(row.host_probe_ns_b).toBeGreaterThan(0);
  const step =
    Math.abs(row.host_probe_ns_b! / row.host_probe_ns_a! - 1) >
    served.tolerances.host;
  expect(row.host_differs).toBe(step);
  expect(row.flagged).toBe(step);
  expect(row.verdict, row.note).toBe(verdict);
  expect(cells.verdict, row.note).toBe(step ? `${verdict} ⚠` : verdict);
  if (step) {
    expect(row.note).toMatch(
      /host speed differs: a fixed probe took [\d.]+ µs in a, [\d.]+ µs in b/
    );
  }

  // The work model's counts (model__*) are the same on both sides: not judged,
  // folded away, each with its unit.
  const model = served.rows.filter(r => r.metric.startsWith('model__'));
  expect(model.length).toBeGreaterThan(0);
  for (const r of model) {
    expect(r.verdict, r.metric).toBe('deterministic');
    expect(r.folded, r.metric).toBe(true);
    expect(r.unit, r.metric).not.toBe('');
  }
  for (const cellsOf of folded) {
    expect(cellsOf.verdict).toBe('deterministic');
  }
});
