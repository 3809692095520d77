/**
 * The inline widget (anywidget) in a real JupyterLab, as on Colab: run with the
 * nsight-lab lab extension disabled, e.g. with a config dir whose
 * labconfig/page_config.json holds {"disabledExtensions": {"nsight-lab": true}}.
 *
 * (`jlpm playwright test --project=widget-colab`: playwright.config.js serves it
 * with JUPYTER_CONFIG_DIR=colab-config.)
 *
 * A `%%nsight --backend cpu` cell shows a progress bar that advances and a duration
 * chart that gains points while the cell runs. The widget is the in-flight view
 * only: at the end the output becomes the final bundle (nsight_lab/views/bundle.py),
 * whose nsight-lab type this host cannot draw, so it shows the bundle's static page
 * (text/html: the progress line, median bars, the summary table); the notebook saved
 * (widget state on) and reopened with no kernel shows the same page, never "Error
 * displaying widget".
 */

import {
  IJupyterLabPageFixture,
  expect,
  galata,
  test
} from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';

import {
  runningKernels,
  savedNotebookText,
  setSource,
  shutdownKernels,
  startActiveCell
} from './notebookCells';
import { RESULTS_DIR } from './nsightLab';

function resultPath(name: string): string {
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  return path.join(RESULTS_DIR, name);
}

/** Fill cell `index` (adding cells as needed) and run it to the end. */
async function runCode(
  page: IJupyterLabPageFixture,
  index: number,
  source: string
): Promise<void> {
  if (index >= (await page.notebook.getCellCount())) {
    await page.notebook.addCell('code', source);
  } else {
    await page.notebook.setCell(index, 'code', source);
  }
  await page.notebook.runCell(index);
}

const WIDGET = '.jp-nsightLab-Widget';
const STATIC = '.jp-nsightLab-Static';
const CHART = (name: string) =>
  `${WIDGET} .jp-nsightLab-Widget-chart[data-chart="${name}"]`;
// plotly draws one path.point per marker of a scatter trace.
const DURATION_POINTS = `${CHART('duration')} .scatterlayer .trace .points path.point`;

const CELL = [
  '%%nsight --backend cpu --configs 20000,200000 --runs 40 --warmup 1',
  'import time',
  'import nsight',
  'import torch',
  'x = torch.ones(n)',
  'y = torch.ones(n)',
  'with nsight.annotate("unfused <b>x + y*2</b>"):',
  '    time.sleep(0.05)  # slow enough to watch the runs arrive',
  '    x + y * 2',
  'with nsight.annotate("fused"):',
  '    torch.add(x, y, alpha=2)'
].join('\n');

interface ISample {
  progress: number;
  points: number;
  status: string;
}

test.describe.configure({ mode: 'serial' });

test.use({
  autoGoto: true,
  sessions: null,
  // Save widget state in the notebook: the reopened output must not depend on it.
  mockSettings: {
    ...galata.DEFAULT_SETTINGS,
    '@jupyter-widgets/jupyterlab-manager:plugin': { saveState: true }
  }
});

test('%%nsight shows live progress and charts, then a static page that reopening keeps', async ({
  page,
  tmpPath
}) => {
  test.setTimeout(240000);
  const hasLabExtension = await page.evaluate(() =>
    window.jupyterapp.hasPlugin('nsight-lab:plugin')
  );
  // Run as on Colab: the playwright project `widget-colab` serves JupyterLab with
  // the nsight-lab lab extension disabled (colab-config/labconfig/page_config.json).
  expect(
    hasLabExtension,
    'run with the nsight-lab lab extension disabled (project widget-colab)'
  ).toBe(false);
  await page.notebook.createNew('magic-widget.ipynb');
  await runCode(page, 0, '%load_ext nsight_lab');
  await setSource(page, 1, CELL);
  await page.notebook.selectCells(1);
  await startActiveCell(page);

  const widget = page.locator(WIDGET);
  await widget.waitFor({ state: 'visible', timeout: 60000 });

  // Sample the widget every 100 ms while the cell runs.
  const samples: ISample[] = [];
  const deadline = Date.now() + 180000;
  for (;;) {
    const sample = await page.evaluate(points => {
      const bar = document.querySelector(
        '.jp-nsightLab-Widget [role="progressbar"]'
      );
      const status = document.querySelector('.jp-nsightLab-Widget-status');
      return {
        progress: Number(bar?.getAttribute('aria-valuenow') ?? 0),
        points: document.querySelectorAll(points).length,
        status: status?.textContent ?? ''
      };
    }, DURATION_POINTS);
    samples.push(sample);
    if (sample.status !== 'running' || Date.now() > deadline) {
      break;
    }
    await page.waitForTimeout(100);
  }
  fs.writeFileSync(
    resultPath('magic-widget-samples.json'),
    `${JSON.stringify(samples, null, 2)}\n`
  );

  const running = samples.filter(s => s.status === 'running');
  // The bar advanced through intermediate values while the cell ran ...
  const progress = new Set(
    running.map(s => s.progress).filter(p => p > 0 && p < 100)
  );
  expect(progress.size).toBeGreaterThanOrEqual(3);
  expect(running.map(s => s.progress)).toEqual(
    [...running.map(s => s.progress)].sort((a, b) => a - b)
  );
  // ... and the duration chart gained points run by run.
  const points = running.map(s => s.points).filter(n => n > 0);
  expect(new Set(points).size).toBeGreaterThanOrEqual(3);
  expect(points[points.length - 1]).toBeGreaterThan(points[0]);

  // At the end the widget's output became the final bundle; without the lab
  // extension that is its static page.
  await page.notebook.waitForRun(1);
  const output = page.locator(STATIC);
  await expectStaticPage(page);
  await output.screenshot({ path: resultPath('magic-widget-final.png') });

  // Save (with widget state), stop the kernel, reopen with no kernel: the same page.
  await page.notebook.save();
  // The widget was closed at the end: none of its state (its 1 MB bundle, the
  // figures) is saved, widget state on or not.
  const saved = await savedNotebookText(page, `${tmpPath}/magic-widget.ipynb`);
  expect(saved).not.toContain('nsight_lab.views.widget.NsightWidget');
  expect(saved.length).toBeLessThan(150000);
  await page.notebook.close();
  await shutdownKernels(page);
  await page.evaluate(async path => {
    await window.jupyterapp.commands.execute('docmanager:open', {
      path,
      factory: 'Notebook',
      kernelPreference: { shouldStart: false, shouldReuse: false }
    });
  }, `${tmpPath}/magic-widget.ipynb`);
  await page.locator(STATIC).waitFor({ state: 'visible', timeout: 60000 });
  await expectStaticPage(page);
  expect(await runningKernels(page)).toBe(0);
});

/** The final output as a host without the extension shows it: the static page. */
async function expectStaticPage(page: IJupyterLabPageFixture): Promise<void> {
  const output = page.locator(STATIC);
  await expect(output).toHaveCount(1);
  await expect(output).toContainText(/nsight-lab session \d+: completed/);
  await expect(output).toContainText('80 / 80 runs');
  // A median bar per region and config, each with its value.
  const medians = output.locator('table.jp-nsightLab-Static-medians tbody tr');
  await expect(medians).toHaveCount(4);
  await expect(medians.first()).toContainText(/\d (ns|µs|ms|s)/);
  await expect(medians.locator('td div').first()).toBeVisible();
  // The summary table, names as text.
  const table = output.locator('table.jp-nsightLab-Static-summary');
  await expect(table).toContainText('fused');
  await expect(table).toContainText('unfused <b>x + y*2</b>');
  await expect(table.locator('b')).toHaveCount(0);
  // No widget left in the output, and so nothing to go missing after reopening.
  await expect(page.locator(WIDGET)).toHaveCount(0);
  await expect(page.locator('.jp-Notebook')).not.toContainText(
    'Error displaying widget'
  );
}
