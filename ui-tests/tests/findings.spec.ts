/**
 * Issue 31 in the lab, on the H200 fixture (a copy of tests/fixtures/h200_block.sqlite,
 * the `readability` project's lab): "why it is slow" in a session panel and in a
 * cell's final output, in the light and the dark theme, checked in the DOM:
 *
 * - the findings sit under the checks and above the summary table;
 * - the three marked top are shown, the rest folded behind "N more findings";
 * - the throttled sessions (2, 3) lead with the throttled finding, read apart as
 *   measurement quality; the sweep (6) leads with its unsteady region;
 * - each shown finding has its statement, what to try and a confidence tag, no
 *   line is cut, and its text reads against the panel's background (contrast);
 * - a saved notebook's final output (our MIME type, drawn with no kernel) shows
 *   the same section before its table.
 *
 * Screenshots go to test-output/issue31/ (results/issue31/ with
 * NSIGHT_LAB_UPDATE_RESULTS=1).
 */

import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';

import { Locator, Page } from '@playwright/test';

import { LIST, openSidebar, shot } from './nsightLab';

test.describe.configure({ mode: 'serial' });
// Galata tracks Jupyter sessions through an unanchored /api/sessions route that would
// also catch /nsight-lab/api/sessions; turn that tracking off.
test.use({ autoGoto: true, sessions: null });

const MAIN = '#jp-main-dock-panel';
const PANEL = `${MAIN} .jp-nsightLab-SelectionPanel:not(.lm-mod-hidden)`;
const ROW = '.jp-nsightLab-SessionList-row';
const FINDINGS = '.jp-nsightLab-Findings';
const SHOWN = `${FINDINGS} > .jp-nsightLab-Findings-list > .jp-nsightLab-Findings-item`;
const SESSION_MIME = 'application/vnd.nsight-lab.session+json';
const NOTEBOOK = 'findings-output.ipynb';

/** The fixture's sessions and the finding each leads with. */
const SESSIONS: { id: number; first: string; quality: boolean }[] = [
  { id: 2, first: 'throttled', quality: true },
  { id: 3, first: 'throttled', quality: true },
  { id: 6, first: 'unsteady', quality: true },
  { id: 5, first: 'compute_bound', quality: false }
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

async function openSession(page: Page, id: number): Promise<Locator> {
  await page.locator(`${LIST} ${ROW}[data-session-id="${id}"]`).click();
  const view = page.locator(
    `${PANEL} .jp-nsightLab-SessionView[data-session-id="${id}"]`
  );
  await expect(view).toBeVisible({ timeout: 30000 });
  await expect(view.locator(FINDINGS)).toBeVisible({ timeout: 30000 });
  await page.waitForTimeout(300);
  return view;
}

/**
 * Lines of `root`'s findings that are cut (wider than their box) and text whose
 * contrast with the background behind it is under 4.5 (WCAG AA), as messages.
 */
async function readability(root: Locator): Promise<string[]> {
  return root.evaluate(node => {
    const rgb = (c: string): number[] =>
      (c.match(/[\d.]+/g) ?? []).map(Number).slice(0, 4);
    const lum = ([r, g, b]: number[]): number => {
      const f = (v: number): number => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const background = (el: Element | null): number[] => {
      for (let at = el; at; at = at.parentElement) {
        const c = rgb(getComputedStyle(at).backgroundColor);
        if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) {
          return c;
        }
      }
      return [255, 255, 255];
    };
    const out: string[] = [];
    const texts = node.querySelectorAll<HTMLElement>(
      '.jp-nsightLab-Findings-title, .jp-nsightLab-Findings-head, .jp-nsightLab-Findings-confidence, .jp-nsightLab-Findings-evidence, .jp-nsightLab-Findings-action, .jp-nsightLab-Findings-gain, .jp-nsightLab-Findings-settle, .jp-nsightLab-Findings-more > summary'
    );
    for (const el of Array.from(texts)) {
      if (el.getBoundingClientRect().height === 0) {
        continue; // folded
      }
      if (el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0) {
        out.push(`cut: "${el.textContent}"`);
      }
      const a = lum(rgb(getComputedStyle(el).color));
      const b = lum(background(el));
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      if (ratio < 4.5) {
        out.push(
          `contrast ${ratio.toFixed(2)}: ${el.className} "${el.textContent?.slice(0, 40)}"`
        );
      }
    }
    return out;
  });
}

/** The tops (page px) of `selectors` in `root`, in order; -1 where absent. */
async function tops(root: Locator, selectors: string[]): Promise<number[]> {
  const out: number[] = [];
  for (const selector of selectors) {
    const found = root.locator(selector).first();
    out.push(
      (await found.count()) > 0 ? ((await found.boundingBox())?.y ?? -1) : -1
    );
  }
  return out;
}

/**
 * A notebook whose one cell holds session `id`'s final output as the cell writes it
 * (our MIME type: the served view, its findings and checks), for the renderer.
 */
async function writeOutputNotebook(
  page: IJupyterLabPageFixture,
  id: number,
  path: string
): Promise<void> {
  const response = await page.request.get(
    `/nsight-lab/api/sessions/${id}?figures=1&limit=1`
  );
  expect(response.ok()).toBe(true);
  const served = (await response.json()) as Record<string, unknown> & {
    session: { status: string; progress: Record<string, unknown> };
    summary: Record<string, unknown>[];
  };
  const bundle = {
    version: 1,
    session_id: id,
    status: served.session.status,
    progress: served.session.progress,
    message: '',
    chart_order: served.chart_order,
    figures: served.figures,
    summary: served.summary,
    summary_columns: Object.keys(served.summary[0] ?? {}),
    sidebar_link: '',
    verdicts: null,
    findings: served.findings,
    checks: served.checks
  };
  const notebook = {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {
      kernelspec: {
        name: 'python3',
        display_name: 'Python 3 (ipykernel)',
        language: 'python'
      }
    },
    cells: [
      {
        cell_type: 'code',
        id: 'findings',
        execution_count: 1,
        metadata: {},
        source: '%%nsight --backend cupti\n...',
        outputs: [
          {
            output_type: 'display_data',
            metadata: {},
            data: {
              [SESSION_MIME]: bundle,
              'text/plain': [`nsight-lab session ${id}`]
            }
          }
        ]
      }
    ]
  };
  expect(
    await page.contents.uploadContent(JSON.stringify(notebook), 'text', path)
  ).toBe(true);
}

test('why it is slow: the session panels and a final output, in light and dark', async ({
  page,
  tmpPath
}) => {
  test.setTimeout(600000);
  await openSidebar(page);
  const list = page.locator(LIST);
  await expect
    .poll(async () => Number(await list.getAttribute('data-total')), {
      timeout: 30000
    })
    .toBe(6);
  await page.sidebar.close('left');
  const problems: string[] = [];

  for (const theme of ['JupyterLab Light', 'JupyterLab Dark']) {
    await setTheme(page, theme);
    const tag = theme.endsWith('Dark') ? 'dark' : 'light';
    for (const session of SESSIONS) {
      const where = `#${session.id} (${tag})`;
      const view = await openSession(page, session.id);
      const section = view.locator(FINDINGS);
      await expect(section.locator('.jp-nsightLab-Findings-title')).toHaveText(
        'Why it is slow'
      );
      // Under the checks (where there are any), above the table.
      const [checks, findings, table] = await tops(view, [
        '.jp-nsightLab-RunTable-checks',
        FINDINGS,
        '.jp-nsightLab-SessionView-table table'
      ]);
      expect
        .soft(findings, `${where}: findings above the table`)
        .toBeLessThan(table);
      expect
        .soft(checks, `${where}: checks above the findings`)
        .toBeLessThan(findings);

      // Three shown, the first the one the session leads with; the rest folded.
      const shown = view.locator(SHOWN);
      await expect.soft(shown, where).toHaveCount(3);
      await expect
        .soft(shown.first(), where)
        .toHaveAttribute('data-kind', session.first);
      if (session.quality) {
        await expect
          .soft(shown.first(), `${where}: quality reads apart`)
          .toHaveClass(/jp-nsightLab-Findings-quality/);
        // The flags' colour: the head is not the body text's colour.
        const [head, body] = await shown
          .first()
          .evaluate(li => [
            getComputedStyle(li.querySelector('.jp-nsightLab-Findings-head')!)
              .color,
            getComputedStyle(li.querySelector('.jp-nsightLab-Findings-action')!)
              .color
          ]);
        expect.soft(head, `${where}: quality head colour`).not.toBe(body);
      }
      for (const li of await shown.all()) {
        await expect
          .soft(li.locator('.jp-nsightLab-Findings-statement'), where)
          .not.toBeEmpty();
        await expect
          .soft(li.locator('.jp-nsightLab-Findings-confidence'), where)
          .toHaveText(/^(measured|work model|timing only)$/);
      }
      const total = Number(await section.getAttribute('data-count'));
      const more = section.locator('.jp-nsightLab-Findings-more');
      await expect
        .soft(more.locator('summary'), where)
        .toHaveText(`${total - 3} more findings`);
      expect
        .soft(await more.evaluate(d => (d as HTMLDetailsElement).open))
        .toBe(false);
      await section.screenshot({
        path: shot(`issue31/s${session.id}-findings-${tag}.png`)
      });
      if (session.id === 3) {
        await page.locator(PANEL).screenshot({
          path: shot(`issue31/s3-panel-${tag}.png`)
        });
        await more.locator('summary').click();
        await expect
          .soft(more.locator('.jp-nsightLab-Findings-item'), where)
          .toHaveCount(total - 3);
        // Tall enough for the whole opened list in one shot.
        const viewport = page.viewportSize();
        await page.setViewportSize({
          width: viewport?.width ?? 1024,
          height: 2400
        });
        await page.waitForTimeout(300);
        await section.screenshot({
          path: shot(`issue31/s3-findings-open-${tag}.png`)
        });
        if (viewport) {
          await page.setViewportSize(viewport);
        }
        problems.push(
          ...(await readability(section)).map(p => `${where}: ${p}`)
        );
        await more.locator('summary').click();
      } else {
        problems.push(
          ...(await readability(section)).map(p => `${where}: ${p}`)
        );
      }
    }
  }

  // A cell's final output, reopened with no kernel: the renderer's findings.
  const path = `${tmpPath}/${NOTEBOOK}`;
  await writeOutputNotebook(page, 3, path);
  await page.evaluate(async file => {
    await window.jupyterapp.commands.execute('docmanager:open', {
      path: file,
      factory: 'Notebook'
    });
  }, path);
  // No kernel is needed to draw a saved output: answer a kernel dialog if any.
  const noKernel = page
    .locator('.jp-Dialog')
    .getByRole('button', { name: 'No Kernel' });
  if (await noKernel.isVisible({ timeout: 3000 }).catch(() => false)) {
    await noKernel.click();
  }
  const output = page.locator('.jp-nsightLab-SessionOutput').first();
  await expect(output.locator(FINDINGS)).toBeVisible({ timeout: 30000 });
  const [findings, summary, charts] = await tops(output, [
    FINDINGS,
    '.jp-nsightLab-Widget-summary',
    '.jp-nsightLab-Widget-charts'
  ]);
  expect
    .soft(findings, 'output: findings above the table')
    .toBeLessThan(summary);
  expect
    .soft(summary, 'output: the table above the charts')
    .toBeLessThan(charts);
  const shown = output.locator(SHOWN);
  await expect.soft(shown).toHaveCount(3);
  await expect.soft(shown.first()).toHaveAttribute('data-kind', 'throttled');
  for (const theme of ['JupyterLab Light', 'JupyterLab Dark']) {
    await setTheme(page, theme);
    const tag = theme.endsWith('Dark') ? 'dark' : 'light';
    await page.waitForTimeout(300);
    await output.locator(FINDINGS).screenshot({
      path: shot(`issue31/output-findings-${tag}.png`)
    });
    // The output as a user sees it: the header and flags, why it is slow, the table.
    await output.scrollIntoViewIfNeeded();
    await page.locator('.jp-NotebookPanel:not(.lm-mod-hidden)').screenshot({
      path: shot(`issue31/output-${tag}.png`)
    });
    problems.push(
      ...(await readability(output)).map(p => `output (${tag}): ${p}`)
    );
  }
  await setTheme(page, 'JupyterLab Light');
  expect(problems).toEqual([]);
});
