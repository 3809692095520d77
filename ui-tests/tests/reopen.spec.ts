/**
 * A saved `%%nsight` output survives reopening: in JupyterLab with the nsight-lab lab
 * extension (project `reopen`, the `sidebar` project's server), a cpu-backend cell is
 * run, the notebook saved, every kernel shut down and the page loaded anew; the notebook
 * reopened with no kernel shows the charts (plotly, with traces), the words for the
 * charts the cpu backend cannot draw and the summary table, drawn by the extension's
 * renderer of the final output (nsight_lab/views/bundle.py), with no "Error
 * displaying widget". Once in the light theme and once in the dark one; each run
 * also switches the theme while the output is shown, and the charts follow it.
 */

import { IJupyterLabPageFixture, expect, test } from '@jupyterlab/galata';

import {
  runningKernels,
  savedOutputs,
  setSource,
  shutdownKernels
} from './notebookCells';
import { runCode, shot, writeResult } from './nsightLab';

test.describe.configure({ mode: 'serial' });

// Galata tracks Jupyter sessions through an unanchored /api/sessions route that would
// also catch /nsight-lab/api/sessions; turn that tracking off.
test.use({ autoGoto: true, sessions: null });

const SESSION_MIME = 'application/vnd.nsight-lab.session+json';
const WIDGET_VIEW = 'application/vnd.jupyter.widget-view+json';
const FINAL = '.jp-nsightLab-SessionOutput';
const CHART = (name: string) =>
  `${FINAL} .jp-nsightLab-Widget-chart[data-chart="${name}"]`;
const REGION = 'sum <b>x</b>';

// Small: 2 configs x 10 runs of two regions.
const CELL = [
  '%%nsight --backend cpu --configs 1000,100000 --runs 10 --warmup 1',
  'import torch',
  'import nsight',
  'x = torch.ones(n)',
  'with nsight.annotate("scale"):',
  '    x * 2',
  `with nsight.annotate("${REGION}"):`,
  '    x.sum()'
].join('\n');

const LIGHT = 'JupyterLab Light';
const DARK = 'JupyterLab Dark';

/** Switch the theme and wait until the page shows it. */
async function setTheme(
  page: IJupyterLabPageFixture,
  theme: string
): Promise<void> {
  await page.evaluate(async theme => {
    await window.jupyterapp.commands.execute('apputils:change-theme', {
      theme
    });
  }, theme);
  await page.waitForFunction(
    theme =>
      document.body.dataset.jpThemeName === theme &&
      getComputedStyle(document.body)
        .getPropertyValue('--jp-ui-font-color1')
        .trim() !== '',
    theme
  );
}

/**
 * Relative luminance (0 dark .. 1 light) of the duration chart's title text as
 * drawn (plotly's SVG `fill`): the theme's font colour, applied by mountChart.
 */
async function titleLuminance(page: IJupyterLabPageFixture): Promise<number> {
  return page.evaluate(selector => {
    const title = document.querySelector(`${selector} .main-svg .gtitle`);
    if (!title) {
      throw new Error('the duration chart has no title');
    }
    const fill = getComputedStyle(title).fill;
    const [r, g, b] = (fill.match(/[\d.]+/g) ?? []).map(Number);
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
  }, CHART('duration'));
}

/** Wait until the duration title has the luminance of the theme (dark or light). */
async function expectChartsIn(
  page: IJupyterLabPageFixture,
  dark: boolean
): Promise<void> {
  await expect
    .poll(() => titleLuminance(page), { timeout: 10000 })
    [dark ? 'toBeGreaterThan' : 'toBeLessThan'](0.5);
}

/** What the final output shows: charts with traces, words, summary, no error. */
async function expectFinalOutput(page: IJupyterLabPageFixture): Promise<void> {
  const output = page.locator(FINAL);
  await expect(output).toHaveCount(1);
  await expect(output.locator('.jp-nsightLab-Widget-status')).toHaveText(
    'completed'
  );
  // The duration chart: plotly drew it, one trace group per region and config.
  const duration = page.locator(CHART('duration'));
  await expect(duration).toHaveAttribute('data-state', 'drawn');
  await expect(
    duration.locator('.js-plotly-plot .main-svg').first()
  ).toBeVisible();
  await expect
    .poll(() => duration.locator('.scatterlayer .trace').count())
    .toBeGreaterThanOrEqual(4);
  // 2 regions x 2 configs x 10 runs: one marker per run.
  await expect(
    duration.locator('.scatterlayer .trace .points path.point')
  ).toHaveCount(40);
  // What the cpu backend cannot draw says why, in words.
  await expect(page.locator(CHART('clocks'))).toHaveAttribute(
    'data-state',
    'missing'
  );
  await expect(page.locator(CHART('clocks'))).toContainText(
    'reads no GPU telemetry'
  );
  // The roofline needs CPU peaks, which another test of the same server may have
  // measured (%nsight peaks --cpu, kept in the shared store): drawn with them, or
  // saying how to get them.
  const roofline = page.locator(CHART('roofline'));
  if ((await roofline.getAttribute('data-state')) === 'missing') {
    await expect(roofline).toContainText('%nsight peaks --cpu');
  } else {
    await expect(roofline).toHaveAttribute('data-state', 'drawn');
    await expect(roofline).toContainText('Roofline');
  }
  // The summary table: one row per region and config, names as text.
  const table = output.locator('table.jp-nsightLab-Widget-summary');
  await expect(table.locator('tbody tr')).toHaveCount(4);
  await expect(table).toContainText(REGION);
  await expect(table.locator('b')).toHaveCount(0);
  // Drawn by the extension's renderer: not the widget, not the static page.
  const notebook = page.locator('.jp-Notebook');
  await expect(notebook).not.toContainText('Error displaying widget');
  await expect(notebook).not.toContainText('model not found');
  await expect(page.locator('.jp-nsightLab-Static')).toHaveCount(0);
}

for (const [theme, other] of [
  [LIGHT, DARK],
  [DARK, LIGHT]
]) {
  const dark = theme === DARK;
  const tag = dark ? 'dark' : 'light';

  test(`a saved %%nsight output shows its charts after reopening with no kernel (${tag})`, async ({
    page,
    tmpPath
  }) => {
    test.setTimeout(240000);
    const name = `reopen-${tag}.ipynb`;
    const path = `${tmpPath}/${name}`;
    // Errors of the widget's or the renderer's code, as the page logs them.
    const errors: string[] = [];
    page.on('console', message => {
      const text = message.text();
      if (message.type() === 'error' && /anywidget|nsight/i.test(text)) {
        errors.push(text);
      }
    });
    await setTheme(page, theme);
    await page.notebook.createNew(name);
    await runCode(page, 0, '%load_ext nsight_lab');
    await setSource(page, 1, CELL);
    await page.notebook.runCell(1, true);

    // At the end of the cell the final output replaced the live widget.
    await expectFinalOutput(page);
    await page.notebook.save();

    // Saved: our type, the static page and text; no widget view to go missing.
    const outputs = (await savedOutputs(page, path))[1];
    const finals = outputs.filter(o => o.data && SESSION_MIME in o.data);
    expect(finals).toHaveLength(1);
    expect(Object.keys(finals[0].data!).sort()).toEqual(
      [SESSION_MIME, 'text/html', 'text/plain'].sort()
    );
    expect(outputs.some(o => o.data && WIDGET_VIEW in o.data)).toBe(false);
    const bytes = JSON.stringify(finals[0]).length;
    expect(bytes).toBeLessThan(150000);

    // Close, stop every kernel, reload the page, reopen with no kernel.
    await page.notebook.close();
    await shutdownKernels(page);
    expect(await runningKernels(page)).toBe(0);
    // A new page load (`?reset`: a fresh workspace, so that a layout saved before
    // the close landed cannot reopen the notebook, and its kernel, by itself).
    await page.goto('?reset');
    await setTheme(page, theme);
    await page.evaluate(async path => {
      await window.jupyterapp.commands.execute('docmanager:open', {
        path,
        factory: 'Notebook',
        kernelPreference: { shouldStart: false, shouldReuse: false }
      });
    }, path);
    await page.locator(FINAL).waitFor({ state: 'visible', timeout: 60000 });
    await expectFinalOutput(page);
    expect(await runningKernels(page)).toBe(0);
    await expectChartsIn(page, dark);
    await page.locator(FINAL).screenshot({ path: shot(`reopen-${tag}.png`) });

    // The charts follow a theme change while shown.
    await setTheme(page, other);
    await expectChartsIn(page, !dark);
    await setTheme(page, theme);
    await expectChartsIn(page, dark);
    // Replacing the live widget (its module swapped, then closed) logged nothing.
    expect(errors).toEqual([]);
    writeResult(`reopen-${tag}.json`, {
      theme,
      saved_output_bytes: bytes,
      kernels_after_reopen: await runningKernels(page)
    });
  });
}
