/**
 * The layout of the H200 fixture's session panels (issue 30), in the light and the
 * dark theme, checked in the DOM (screenshots are evidence, not assertions):
 *
 * - the answer first: what cannot be true (when there is any), then the summary
 *   table, above the charts, the kernels and the session's facts;
 * - charts with nothing to draw take no room among the drawn ones: they fold into
 *   one closed line after them, naming what another backend would add, and the
 *   drawn charts share the panel's width (two columns of at least 45 % each);
 * - a per-kernel backend's regions (cupti, pm, ncu) list their kernels in a folded
 *   table; the events sessions have none;
 * - the history rows at the sidebar's default width: no text cut (no line wider
 *   than its box).
 *
 * Screenshots of every session panel and of the history go to
 * test-output/issue30/ (NSIGHT_LAB_SHOTS_TAG names the subfolder, `after` by
 * default: a run against the old build writes `before`).
 */

import { expect, test } from '@jupyterlab/galata';

import { Locator, Page } from '@playwright/test';

import { LIST, SIDEBAR, openSidebar, shot } from './nsightLab';

test.describe.configure({ mode: 'serial' });
// Galata tracks Jupyter sessions through an unanchored /api/sessions route that would
// also catch /nsight-lab/api/sessions; turn that tracking off.
test.use({ autoGoto: true, sessions: null });

const MAIN = '#jp-main-dock-panel';
const PANEL = `${MAIN} .jp-nsightLab-SelectionPanel:not(.lm-mod-hidden)`;
const ROW = '.jp-nsightLab-SessionList-row';
const TAG = process.env.NSIGHT_LAB_SHOTS_TAG || 'after';

/** The fixture's sessions: id, name, backend, charts drawn and not drawn. */
const SESSIONS: {
  id: number;
  name: string;
  kernels: number;
  drawn: string[];
  folded: string[];
}[] = [
  {
    id: 1,
    name: 'block-events-a',
    kernels: 0,
    drawn: ['duration', 'clocks', 'roofline', 'traffic'],
    folded: ['counters']
  },
  {
    id: 2,
    name: 'block-events-b',
    kernels: 0,
    drawn: ['duration', 'clocks', 'roofline', 'traffic'],
    folded: ['counters']
  },
  {
    id: 3,
    name: 'block-cupti',
    kernels: 12,
    drawn: ['duration', 'clocks', 'roofline', 'traffic'],
    folded: ['counters']
  },
  {
    id: 4,
    name: 'block-pm-dram',
    kernels: 12,
    drawn: ['duration', 'clocks', 'roofline', 'traffic', 'counters'],
    folded: []
  },
  {
    id: 5,
    name: 'block-ncu-roofline',
    kernels: 12,
    drawn: ['duration', 'roofline', 'traffic'],
    folded: ['clocks', 'counters']
  },
  {
    id: 6,
    name: 'sweep-matmul',
    kernels: 0,
    drawn: ['duration', 'clocks', 'roofline', 'traffic'],
    folded: ['counters']
  }
];

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
  await page.waitForTimeout(500);
  return view;
}

/** The top of the first element of `selector` in `view` (page px), or null. */
async function topOf(view: Locator, selector: string): Promise<number | null> {
  const found = view.locator(selector).first();
  if ((await found.count()) === 0 || !(await found.isVisible())) {
    return null;
  }
  return (await found.boundingBox())?.y ?? null;
}

/** History rows whose name or details line is wider than its box (cut). */
async function cutRows(page: Page): Promise<string[]> {
  return page.locator(LIST).evaluate(list =>
    Array.from(
      list.querySelectorAll<HTMLElement>('.jp-nsightLab-SessionList-row')
    )
      .filter(row => row.dataset.sessionId !== undefined)
      .flatMap(row =>
        Array.from(
          row.querySelectorAll<HTMLElement>(
            '.jp-nsightLab-SessionList-name, .jp-nsightLab-SessionList-details, .jp-nsightLab-SessionList-title'
          )
        )
          .filter(line => line.scrollWidth > line.clientWidth + 1)
          .map(
            line =>
              `#${row.dataset.sessionId}: "${line.innerText}" needs ${line.scrollWidth} px, has ${line.clientWidth}`
          )
      )
  );
}

test('the fixture sessions: the answer first, empty charts folded, kernels listed, history rows whole, in light and dark', async ({
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

  for (const theme of ['JupyterLab Light', 'JupyterLab Dark']) {
    await setTheme(page, theme);
    const tag = theme.endsWith('Dark') ? 'dark' : 'light';
    // The history at the sidebar's default width: every row whole.
    await page.locator(SIDEBAR).screenshot({
      path: shot(`issue30/${TAG}/history-${tag}.png`)
    });
    for (const cut of await cutRows(page)) {
      problems.push(`history (${tag}): ${cut}`);
    }
    for (const session of SESSIONS) {
      const where = `#${session.id} ${session.name} (${tag})`;
      const view = await openSession(page, session.id, session.drawn);
      // The panel's first screen as a user sees it (1024 x 768).
      const panel = page.locator(PANEL);
      await panel.screenshot({
        path: shot(`issue30/${TAG}/s${session.id}-${tag}.png`)
      });

      // The answer first: findings (if any), the table, then the charts, facts.
      const checks = await topOf(view, '.jp-nsightLab-RunTable-checks');
      const table = await topOf(view, '.jp-nsightLab-SessionView-table table');
      const charts = await topOf(view, '.jp-nsightLab-SessionView-charts');
      const facts = await topOf(view, '.jp-nsightLab-SessionView-facts');
      expect.soft(table, `${where}: table`).not.toBeNull();
      if (table !== null && charts !== null && facts !== null) {
        expect
          .soft(table < charts, `${where}: the table above the charts`)
          .toBe(true);
        expect
          .soft(table < facts, `${where}: the table above the session's facts`)
          .toBe(true);
        if (checks !== null) {
          expect
            .soft(checks < table, `${where}: the findings above the table`)
            .toBe(true);
        }
      }

      // Charts with nothing to draw: folded into one closed line, after the rest.
      const grid = view.locator('.jp-nsightLab-SessionView-charts');
      const placeholders = await grid.evaluate(el =>
        Array.from(
          el.querySelectorAll<HTMLElement>(
            '.jp-nsightLab-ChartView[data-state="missing"]'
          )
        )
          .filter(
            box =>
              box.getBoundingClientRect().height > 0 &&
              box.closest('details:not([open])') === null
          )
          .map(box => box.dataset.chart ?? '')
      );
      expect
        .soft(placeholders, `${where}: placeholders taking room`)
        .toEqual([]);
      const folded = view.locator('.jp-nsightLab-ChartView-folded');
      if (session.folded.length > 0) {
        await expect.soft(folded, `${where}: folded line`).toBeVisible();
        if (await folded.isVisible()) {
          const b = await folded.boundingBox();
          // One line at the fixture's panel width (two at most when narrow).
          expect
            .soft(b?.height ?? 0, `${where}: the folded line is one line`)
            .toBeLessThan(session.folded.length > 1 ? 40 : 24);
          const words =
            (await folded
              .locator('.jp-nsightLab-ChartView-foldedSummary')
              .textContent()) ?? '';
          expect.soft(words, where).toMatch(/^Another backend would add: /);
          expect.soft(words, where).toContain('--backend pm');
          const cut = await folded
            .locator('.jp-nsightLab-ChartView-foldedSummary')
            .evaluate(el => el.scrollWidth > el.clientWidth + 1);
          expect.soft(cut, `${where}: "${words}" cut`).toBe(false);
          // Opened, each folded chart says what it needs.
          const boxes = folded.locator('.jp-nsightLab-ChartView');
          expect
            .soft(
              await boxes.evaluateAll(els =>
                els.map(e => (e as HTMLElement).dataset.chart)
              ),
              where
            )
            .toEqual(session.folded);
        }
      } else {
        await expect.soft(folded, `${where}: no folded line`).toBeHidden();
      }
      // The drawn charts share the width: two columns, each 45 % or more.
      const gridWidth = (await grid.boundingBox())?.width ?? 0;
      for (const name of session.drawn) {
        const b = await view
          .locator(`.jp-nsightLab-ChartView[data-chart="${name}"]`)
          .boundingBox();
        expect
          .soft(
            (b?.width ?? 0) / gridWidth,
            `${where}: ${name} ${b?.width} of ${gridWidth} px`
          )
          .toBeGreaterThanOrEqual(0.45);
      }

      // Kernels: a folded table per region for per-kernel backends.
      const kernels = view.locator('.jp-nsightLab-SessionView-kernels');
      if (session.kernels > 0) {
        await expect.soft(kernels, `${where}: kernels`).toBeVisible();
        if (await kernels.isVisible()) {
          expect
            .soft(await kernels.evaluate(el => (el as HTMLDetailsElement).open))
            .toBe(false);
          await kernels.locator('summary').click();
          const regions = await kernels
            .locator('tbody tr')
            .evaluateAll(rows =>
              rows.map(r => (r as HTMLElement).dataset.region)
            );
          expect
            .soft(new Set(regions).size, `${where}: regions with kernels`)
            .toBe(session.kernels);
          await expect
            .soft(kernels.locator('tbody'), where)
            .toContainText('vectorized_layer_norm_kernel');
          await kernels.screenshot({
            path: shot(`issue30/${TAG}/s${session.id}-kernels-${tag}.png`)
          });
          await kernels.locator('summary').click();
        }
      } else {
        await expect.soft(kernels, `${where}: no kernels`).toHaveCount(0);
      }
      // The whole panel, in a window tall enough to hold it (evidence only).
      const size = page.viewportSize();
      await page.setViewportSize({ width: 1400, height: 2600 });
      await page.waitForTimeout(1500);
      await panel.screenshot({
        path: shot(`issue30/${TAG}/s${session.id}-${tag}-whole.png`)
      });
      if (size) {
        await page.setViewportSize(size);
        await page.waitForTimeout(800);
      }
    }
  }
  await setTheme(page, 'JupyterLab Light');
  expect(problems, problems.join('\n')).toEqual([]);
});
