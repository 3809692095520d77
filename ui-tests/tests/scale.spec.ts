/**
 * The sidebar against a large store (benchmarks/ui_scale.py builds it: 10,000
 * sessions, 1,000,000 runs, and runs this spec with playwright.scale.config.js).
 *
 * Measures in the page (performance.now()):
 * - open: from `nsight-lab:open-sidebar` to the first page of sessions listed (rows
 *   rendered with their sessions, `data-loaded` > 0), once per fresh page;
 * - select: from a click on a session row to the SelectionView of the main-area
 *   panel in front showing that session (`data-state="session"`) with its four
 *   charts (CHARTS) drawn (`data-state="drawn"` and plotly's svg), for several
 *   sessions. The grid also holds a box for each chart the session lacks (ranks,
 *   counters…: `data-state="missing"`, a line of text), so the four are named, not
 *   counted.
 * Each with the Resource Timing of the REST calls made meanwhile, so the server's
 * share (request start to response end) can be told from rendering.
 * Writes ui-tests/results/ui_scale_raw.json; ui_scale.py summarises it.
 */

import { expect, test } from '@jupyterlab/galata';

import { LIST, SELECTION, writeResult } from './nsightLab';

test.describe.configure({ mode: 'serial' });
test.use({ autoGoto: true, sessions: null });

const REPEATS = Number(process.env.NSIGHT_LAB_SCALE_REPEATS || 7);
/** The charts a session of the scale store has (a cpu template with clocks). */
const CHARTS = ['duration', 'clocks', 'roofline', 'traffic'];

interface IRest {
  url: string;
  startMs: number;
  requestToResponseEndMs: number;
  waitingMs: number;
  durationMs: number;
}

interface IMeasure {
  ms: number;
  rest: IRest[];
  total?: string;
  loaded?: string;
  sessionId?: string;
}

const openMs: IMeasure[] = [];
const selectMs: IMeasure[] = [];
const responses: { url: string; status: number; timing: unknown }[] = [];

test.afterAll(() => {
  writeResult('ui_scale_raw.json', {
    open_to_list_ms: openMs.map(m => m.ms),
    select_to_charts_ms: selectMs.map(m => m.ms),
    list_rest_ms: openMs.map(m => m.rest),
    select_rest_ms: selectMs.map(m => m.rest),
    open: openMs,
    select: selectMs,
    responses
  });
});

for (let i = 0; i < REPEATS; i++) {
  test(`open the sidebar to the first page of sessions (#${i + 1})`, async ({
    page
  }) => {
    page.on('response', async r => {
      if (r.url().includes('/nsight-lab/api/')) {
        responses.push({
          url: r.url(),
          status: r.status(),
          timing: r.request().timing()
        });
      }
    });
    const measure = await page.evaluate(async list => {
      performance.clearResourceTimings();
      const t0 = performance.now();
      void window.jupyterapp.commands.execute('nsight-lab:open-sidebar');
      const done = (): boolean => {
        const node = document.querySelector(list) as HTMLElement | null;
        return (
          !!node &&
          Number(node.dataset.loaded ?? 0) > 0 &&
          node.querySelectorAll('.jp-nsightLab-SessionList-row').length > 0 &&
          node.offsetParent !== null
        );
      };
      await new Promise<void>(resolve => {
        const poll = (): void =>
          done() ? resolve() : void requestAnimationFrame(poll);
        poll();
      });
      const ms = performance.now() - t0;
      const node = document.querySelector(list) as HTMLElement;
      const rest = (
        performance.getEntriesByType('resource') as PerformanceResourceTiming[]
      )
        .filter(e => e.name.includes('/nsight-lab/api/'))
        .map(e => ({
          url: e.name,
          startMs: e.startTime - t0,
          requestToResponseEndMs: e.responseEnd - e.requestStart,
          waitingMs: e.responseStart - e.requestStart,
          durationMs: e.duration
        }));
      return {
        ms,
        rest,
        total: node.dataset.total,
        loaded: node.dataset.loaded
      };
    }, LIST);
    expect(Number(measure.total)).toBeGreaterThan(0);
    openMs.push(measure);
  });
}

test('select a session to its four charts drawn', async ({ page }) => {
  await page.evaluate(async () => {
    await window.jupyterapp.commands.execute('nsight-lab:open-sidebar');
  });
  const rows = page.locator(`${LIST} .jp-nsightLab-SessionList-row`);
  await expect(rows.first()).toBeVisible({ timeout: 60000 });
  for (let i = 0; i < REPEATS + 1; i++) {
    const measure = await page.evaluate(
      async ({ list, selection, index, charts }) => {
        const row = document.querySelectorAll(
          `${list} .jp-nsightLab-SessionList-row`
        )[index] as HTMLElement;
        performance.clearResourceTimings();
        const t0 = performance.now();
        row.click();
        const done = (): string | null => {
          const node = document.querySelector(selection) as HTMLElement | null;
          const view = node?.querySelector(
            '.jp-nsightLab-SessionView'
          ) as HTMLElement | null;
          if (!node || node.dataset.state !== 'session' || !view) {
            return null;
          }
          if (!row.classList.contains('jp-mod-selected')) {
            return null;
          }
          const drawn = charts.every(
            chart =>
              view.querySelector(
                `.jp-nsightLab-ChartView[data-chart="${chart}"][data-state="drawn"] .main-svg`
              ) !== null
          );
          return drawn ? (view.dataset.sessionId ?? '') : null;
        };
        let previous = (
          document.querySelector(
            `${selection} .jp-nsightLab-SessionView`
          ) as HTMLElement | null
        )?.dataset.sessionId;
        const sessionId = await new Promise<string>(resolve => {
          const poll = (): void => {
            const id = done();
            if (id !== null && id !== previous) {
              resolve(id);
            } else {
              requestAnimationFrame(poll);
            }
          };
          poll();
        });
        previous = sessionId;
        const ms = performance.now() - t0;
        const rest = (
          performance.getEntriesByType(
            'resource'
          ) as PerformanceResourceTiming[]
        )
          .filter(e => e.name.includes('/nsight-lab/api/'))
          .map(e => ({
            url: e.name,
            startMs: e.startTime - t0,
            requestToResponseEndMs: e.responseEnd - e.requestStart,
            waitingMs: e.responseStart - e.requestStart,
            durationMs: e.duration
          }));
        return { ms, rest, sessionId };
      },
      { list: LIST, selection: SELECTION, index: i, charts: CHARTS }
    );
    // The first click also loads plotly and builds the chart widgets: kept apart.
    if (i === 0) {
      writeResult('ui_scale_first_select.json', measure);
    } else {
      selectMs.push(measure);
    }
  }
  expect(selectMs.length).toBeGreaterThanOrEqual(5);
});
