/**
 * The inline widget (anywidget) in a real JupyterLab, as on Colab: run with the
 * nsight-lab lab extension disabled, e.g. with a config dir whose
 * labconfig/page_config.json holds {"disabledExtensions": {"nsight-lab": true}}.
 *
 * (`jlpm playwright test --project=widget-colab`: playwright.config.js serves it
 * with JUPYTER_CONFIG_DIR=colab-config.) CPU roofs are measured first
 * (`%nsight peaks --cpu`); `--derive gbps` has FLOPs/bytes modelled.
 *
 * A `%%nsight --backend cpu` cell shows a progress bar that advances and a duration
 * chart that gains points while the cell runs, then the roofline and the traffic
 * charts and the summary table; the notebook saved (with widget state) and reopened
 * with no kernel shows the final charts again.
 */

import {
  IJupyterLabPageFixture,
  expect,
  galata,
  test
} from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';

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

interface INotebookPanelLike {
  content: {
    widgets: { model: { sharedModel: { setSource(source: string): void } } }[];
  };
}

/**
 * Set cell `index`'s source through the model: typing it into the editor would
 * auto-indent the lines after each `with ...:`.
 */
async function setSource(
  page: IJupyterLabPageFixture,
  index: number,
  source: string
): Promise<void> {
  while ((await page.notebook.getCellCount()) <= index) {
    await page.notebook.addCell('code', '');
  }
  await page.evaluate(
    ({ index, source }) => {
      const panel = window.jupyterapp.shell
        .currentWidget as unknown as INotebookPanelLike;
      panel.content.widgets[index].model.sharedModel.setSource(source);
    },
    { index, source }
  );
}

/** Start running the active cell and return at once (the cell keeps running). */
async function startActiveCell(page: IJupyterLabPageFixture): Promise<void> {
  // The command's promise settles when the cell finishes: do not wait for it.
  await page.evaluate(() => {
    void window.jupyterapp.commands.execute('notebook:run-cell');
  });
}

const WIDGET = '.jp-nsightLab-Widget';
const CHART = (name: string) =>
  `${WIDGET} .jp-nsightLab-Widget-chart[data-chart="${name}"]`;
// plotly draws one path.point per marker of a scatter trace.
const DURATION_POINTS = `${CHART('duration')} .scatterlayer .trace .points path.point`;

const CELL = [
  '%%nsight --backend cpu --configs 20000,200000 --runs 40 --warmup 1 --derive gbps',
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
  // Save widget state in the notebook, so that a reopened notebook shows the result.
  mockSettings: {
    ...galata.DEFAULT_SETTINGS,
    '@jupyter-widgets/jupyterlab-manager:plugin': { saveState: true }
  }
});

test('%%nsight shows live progress and charts in the cell output, and keeps them', async ({
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
  // The cpu backend places regions under measured CPU roofs only (no datasheet):
  // measure them first (cached in the store), or there is no roofline.
  await runCode(page, 1, '%nsight peaks --cpu');
  await setSource(page, 2, CELL);
  await page.notebook.selectCells(2);
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

  // At the end: completed, every chart drawn, the summary table as text.
  await expect(widget.locator('.jp-nsightLab-Widget-status')).toHaveText(
    'completed'
  );
  await expect(widget.locator('[role="progressbar"]')).toHaveAttribute(
    'aria-valuenow',
    '100'
  );
  for (const name of ['duration', 'clocks', 'roofline', 'traffic']) {
    await expect(
      page.locator(`${CHART(name)} .main-svg`).first()
    ).toBeVisible();
  }
  const table = widget.locator('table.jp-nsightLab-Widget-summary');
  await expect(table).toContainText('fused');
  await expect(table).toContainText('unfused <b>x + y*2</b>');
  await expect(table.locator('b')).toHaveCount(0);
  // The sidebar link shows only where the lab extension runs.
  await expect(widget.locator('.jp-nsightLab-Widget-sidebarLink')).toBeVisible({
    visible: hasLabExtension
  });
  await page.notebook.waitForRun(2);
  await widget.screenshot({ path: resultPath('magic-widget-final.png') });

  // Save with widget state, stop the kernel, reopen: the final charts again.
  await page.notebook.save();
  await page.notebook.close();
  await page.evaluate(async () => {
    await window.jupyterapp.serviceManager.sessions.refreshRunning();
    const running = Array.from(
      window.jupyterapp.serviceManager.sessions.running()
    );
    await Promise.all(
      running.map(s => window.jupyterapp.serviceManager.sessions.shutdown(s.id))
    );
  });
  await page.notebook.openByPath(`${tmpPath}/magic-widget.ipynb`);
  await page.notebook.activate('magic-widget.ipynb');
  const reopened = page.locator(WIDGET);
  await reopened.waitFor({ state: 'visible', timeout: 60000 });
  await expect(reopened.locator('.jp-nsightLab-Widget-status')).toHaveText(
    'completed'
  );
  for (const name of ['duration', 'clocks', 'roofline', 'traffic']) {
    await expect(
      page.locator(`${CHART(name)} .main-svg`).first()
    ).toBeVisible();
  }
  await expect(
    reopened.locator('table.jp-nsightLab-Widget-summary')
  ).toContainText('fused');
});
