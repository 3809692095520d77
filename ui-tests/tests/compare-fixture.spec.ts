/**
 * The same-code comparison and the session list of real GPU sessions, as a user
 * reads them (issue 20): the H200 fixture store (tests/fixtures/h200_block.sqlite,
 * copied for the `fixture` server, `jlpm start:fixture`). Sessions 1 and 2 ran the
 * same 12-region transformer block; session 2 ran power-capped in all 30 runs.
 *
 * With nothing running the live section is folded; STORE, expanded, shows where the
 * store is. In the light and the dark theme:
 * - the history: each row says what the session is (name, backend, runs, regions)
 *   and its details line is not cut before the run count; names are not clipped;
 * - the comparison 1 vs 2: the overall verdict reads "inconclusive: clocks" (or
 *   "no change"), never "slower"; its 12 timed rows are shown with their clocks
 *   and what to do, the work model's rows folded behind a toggle; the legend (sent
 *   by the server) states the threshold; no cell's text is cut and the verdict
 *   column lies within the panel; the verdict line is readable on its background.
 * Screenshots go to test-output/ (compare-fixture-*.png).
 */

import { expect, test } from '@jupyterlab/galata';

import { Locator, Page } from '@playwright/test';

import { LIST, openSidebar, shot } from './nsightLab';

test.describe.configure({ mode: 'serial' });
// Galata tracks Jupyter sessions through an unanchored /api/sessions route that would
// also catch /nsight-lab/api/sessions; turn that tracking off.
test.use({ autoGoto: true, sessions: null });

const MAIN = '#jp-main-dock-panel';
const COMPARE = `${MAIN} .jp-nsightLab-SelectionPanel:not(.lm-mod-hidden) .jp-nsightLab-CompareView[data-a='1'][data-b='2']`;
const ROW = '.jp-nsightLab-SessionList-row';
const NAMES: Record<number, string> = {
  1: 'block-events-a',
  2: 'block-events-b',
  3: 'block-cupti',
  4: 'block-pm-dram',
  5: 'block-ncu-roofline',
  6: 'sweep-matmul'
};
/** Runs (executions of the cell: configs x --runs) of each fixture session. */
const RUNS: Record<number, string> = {
  1: '30 of 30 runs',
  2: '30 of 30 runs',
  3: '30 of 30 runs',
  4: '10 of 10 runs',
  5: '2 of 2 runs',
  6: '80 of 80 runs'
};

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

/** WCAG contrast ratio of two `rgb(...)` colours. */
function contrast(a: string, b: string): number {
  const luminance = (css: string): number => {
    const [r, g, bl] = (css.match(/[\d.]+/g) ?? ['0', '0', '0'])
      .slice(0, 3)
      .map(Number)
      .map(v => v / 255)
      .map(v => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/** The first opaque background colour at or above `el`. */
async function background(el: Locator): Promise<string> {
  return el.evaluate(node => {
    for (let n: Element | null = node; n; n = n.parentElement) {
      const c = getComputedStyle(n).backgroundColor;
      if (c && c !== 'transparent' && !/rgba\(.*,\s*0\)$/.test(c)) {
        return c;
      }
    }
    return 'rgb(255, 255, 255)';
  });
}

/** The history rows: what each says, and whether its lines are cut. */
async function readRows(page: Page): Promise<
  {
    id: number;
    name: string;
    details: string;
    nameCut: boolean;
    /** Whether the details line shows its text up to the run count whole. */
    runsShown: boolean;
  }[]
> {
  return page.locator(LIST).evaluate(list =>
    Array.from(
      list.querySelectorAll<HTMLElement>(
        '.jp-nsightLab-SessionList-row[data-session-id]'
      )
    ).map(row => {
      const name = row.querySelector<HTMLElement>(
        '.jp-nsightLab-SessionList-name'
      )!;
      const details = row.querySelector<HTMLElement>(
        '.jp-nsightLab-SessionList-details'
      )!;
      const text = details.textContent ?? '';
      const end = text.indexOf(' runs') + ' runs'.length;
      let runsShown = false;
      const node = details.firstChild;
      // Parts the row may leave out whole (SessionList.fitRow): the part with
      // the run count shown and inside the line.
      const runs = Array.from(
        details.querySelectorAll<HTMLElement>('.jp-nsightLab-SessionList-part')
      ).find(part => / runs$/.test(part.textContent ?? ''));
      if (runs) {
        runsShown =
          !runs.hidden &&
          runs.getBoundingClientRect().right <=
            details.getBoundingClientRect().right + 1;
      } else if (node && end >= ' runs'.length) {
        const range = document.createRange();
        range.setStart(node, 0);
        range.setEnd(node, end);
        runsShown =
          range.getBoundingClientRect().right <=
          details.getBoundingClientRect().right + 1;
      }
      // The session's own name (the first text node) must not be cut; the
      // regions after it may be.
      const own = name.firstChild;
      let nameCut = false;
      if (own) {
        const range = document.createRange();
        range.selectNodeContents(own);
        nameCut =
          range.getBoundingClientRect().right >
          name.getBoundingClientRect().right + 1;
      }
      return {
        id: Number(row.dataset.sessionId),
        name: own?.textContent ?? '',
        details: text,
        nameCut,
        runsShown
      };
    })
  );
}

test('the same-code comparison and the session list read right in light and dark', async ({
  page
}) => {
  test.setTimeout(240000);
  await openSidebar(page);
  const list = page.locator(LIST);
  await expect
    .poll(async () => Number(await list.getAttribute('data-total')), {
      timeout: 30000
    })
    .toBe(6);
  await expect(list.locator(`${ROW}[data-session-id="1"]`)).toBeVisible({
    timeout: 30000
  });

  // Nothing runs here: the live section is folded, not an empty area.
  const sidebar = page.locator('#nsight-lab-sidebar');
  await expect(sidebar.locator('.jp-nsightLab-LiveView')).toBeHidden();
  // STORE, expanded, says where the store is (it expanded to nothing before).
  await sidebar
    .locator('.lm-AccordionPanel-title', { hasText: /store/i })
    .click();
  const where = sidebar.locator('.jp-nsightLab-Status-list dd').nth(1);
  await expect(where).toBeVisible();
  await expect(where).toContainText('store.sqlite');
  const whereBox = await where.boundingBox();
  expect(whereBox?.height ?? 0).toBeGreaterThan(10);
  await sidebar
    .locator('.lm-AccordionPanel-title', { hasText: /store/i })
    .click();

  for (const theme of ['JupyterLab Light', 'JupyterLab Dark']) {
    await setTheme(page, theme);
    const tag = theme.endsWith('Dark') ? 'dark' : 'light';

    // The history: what each session is, its run count not cut.
    const rows = await readRows(page);
    expect(rows.length).toBeGreaterThanOrEqual(5);
    for (const row of rows) {
      expect.soft(row.name, `row ${row.id}`).toBe(NAMES[row.id]);
      expect.soft(row.nameCut, `row ${row.id} name cut`).toBe(false);
      const backend =
        row.id === 3
          ? 'cupti'
          : row.id === 4
            ? 'pm'
            : row.id === 5
              ? 'ncu'
              : 'events';
      expect
        .soft(row.details, `row ${row.id} details`)
        .toMatch(
          new RegExp(`^${backend} · ${RUNS[row.id]} · \\d+ regions? · `)
        );
      expect.soft(row.runsShown, `row ${row.id}: run count cut`).toBe(true);
    }
    await page
      .locator('#nsight-lab-sidebar')
      .screenshot({ path: shot(`compare-fixture-sidebar-${tag}.png`) });

    // The same-code comparison, 2 against 1.
    await page.evaluate(async () => {
      await window.jupyterapp.commands.execute('nsight-lab:compare-sessions', {
        a: 1,
        b: 2
      });
    });
    const view = page.locator(COMPARE);
    const overall = view.locator('.jp-nsightLab-CompareView-overall');
    await expect(overall).toBeVisible({ timeout: 30000 });
    const verdict = (await overall.getAttribute('data-verdict')) ?? '';
    expect(['inconclusive: clocks', 'no change']).toContain(verdict);
    await expect(overall).not.toContainText(/^slower/);
    await expect(overall).toContainText('--clock-control base');

    const table = view.locator('.jp-nsightLab-CompareView-table');
    const body = table.locator('tbody tr');
    await expect(body).toHaveCount(12);
    await expect(table.locator('thead')).toContainText('Verdict');
    const notes = await table
      .locator('td[data-column="note"]')
      .allTextContents();
    for (const note of notes) {
      expect.soft(note).toContain('a at 1980 MHz');
      expect.soft(note).toContain('--clock-control base --thermal auto');
    }
    const folded = view.locator('.jp-nsightLab-CompareView-folded');
    await expect(folded.locator('summary')).toHaveText(
      /^46 deterministic rows/
    );
    await expect(
      view.locator('.jp-nsightLab-CompareView-legend')
    ).toContainText('±2.2 %');

    // No cut text: every cell shows its whole text; the verdict column lies
    // inside the panel (the table fits, or scrolls only past it).
    const cut = await table.evaluate(t =>
      Array.from(t.querySelectorAll<HTMLElement>('th, td'))
        .filter(cell => cell.scrollWidth > cell.clientWidth + 1)
        .map(cell => cell.textContent ?? '')
    );
    expect.soft(cut, 'cells whose text is cut').toEqual([]);
    const panelBox = await view.boundingBox();
    const verdicts = table.locator('td[data-column="verdict"]');
    for (let i = 0; i < (await verdicts.count()); i++) {
      const box = await verdicts.nth(i).boundingBox();
      expect
        .soft(box && panelBox && box.x + box.width)
        .toBeLessThanOrEqual((panelBox?.x ?? 0) + (panelBox?.width ?? 0) + 1);
      await expect
        .soft(verdicts.nth(i))
        .toHaveText(/^(inconclusive: clocks|no change)/);
    }

    // The verdict line reads on its background (WCAG large-text 3:1).
    const colour = await overall.evaluate(el => getComputedStyle(el).color);
    expect
      .soft(contrast(colour, await background(overall)))
      .toBeGreaterThanOrEqual(3);

    await page
      .locator(`${MAIN} .jp-nsightLab-SelectionPanel:not(.lm-mod-hidden)`)
      .screenshot({ path: shot(`compare-fixture-compare-${tag}.png`) });

    // The ncu session's summary: the answer columns within the panel, the
    // counters folded (144 of them read 0 in every run).
    await page.locator(`${LIST} ${ROW}[data-session-id="5"]`).click();
    const session = page.locator(
      `${MAIN} .jp-nsightLab-SelectionPanel:not(.lm-mod-hidden) .jp-nsightLab-SessionView[data-session-id="5"]`
    );
    const summary = session.locator('.jp-nsightLab-SessionView-table');
    await expect(summary.locator('table').first()).toBeVisible({
      timeout: 30000
    });
    const head = await summary
      .locator('table')
      .first()
      .locator('th')
      .allTextContents();
    expect(head.slice(0, 7)).toEqual([
      'Region',
      'Duration',
      'RSD',
      'GB/s',
      'TFLOP/s',
      '% of roof',
      'Bound'
    ]);
    await expect(
      summary.locator('table').first().locator('tbody tr')
    ).toHaveCount(12);
    const counters = summary.locator('.jp-nsightLab-RunTable-counters');
    await expect(counters.locator('summary').first()).toHaveText(
      'Counters: 48 rows (144 more read 0 in every run)'
    );
    expect(await counters.getAttribute('open')).toBeNull();
    const sessionBox = await session.boundingBox();
    const bound = summary.locator('table').first().locator('th').nth(6);
    const boundBox = await bound.boundingBox();
    expect
      .soft(
        (boundBox?.x ?? 0) + (boundBox?.width ?? 0),
        'Bound column inside the panel'
      )
      .toBeLessThanOrEqual((sessionBox?.x ?? 0) + (sessionBox?.width ?? 0) + 1);
    const cutCells = await summary.evaluate(root =>
      Array.from(root.querySelectorAll<HTMLElement>('th, td'))
        .filter(cell => cell.offsetParent !== null)
        .filter(cell => cell.scrollWidth > cell.clientWidth + 1)
        .map(cell => cell.textContent ?? '')
    );
    expect.soft(cutCells, 'summary cells whose text is cut').toEqual([]);
    await summary.screenshot({
      path: shot(`compare-fixture-summary-${tag}.png`)
    });
  }
});
