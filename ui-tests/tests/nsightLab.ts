/**
 * Helpers shared by the nsight-lab ui-tests.
 */

import { IJupyterLabPageFixture } from '@jupyterlab/galata';
import { Locator } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';

/**
 * Where screenshots and measurements go: `test-output/` (ignored by git), so that a
 * test run leaves the tree clean; with NSIGHT_LAB_UPDATE_RESULTS=1, `results/` (the
 * committed evidence the README shows).
 */
export const RESULTS_DIR = path.resolve(
  __dirname,
  '..',
  process.env.NSIGHT_LAB_UPDATE_RESULTS === '1' ? 'results' : 'test-output'
);

export const SIDEBAR = '#nsight-lab-sidebar';
export const LIVE = `${SIDEBAR} .jp-nsightLab-LiveView`;
export const LIST = `${SIDEBAR} .jp-nsightLab-SessionList`;
/** The session or comparison in front: a panel in the main area (src/widgets/). */
export const SELECTION =
  '#jp-main-dock-panel .jp-nsightLab-SelectionPanel:not(.lm-mod-hidden) .jp-nsightLab-SelectionView';
export const XSS = '<img src=x onerror=alert(1)>';

/** Open the sidebar through its command and wait for it. */
export async function openSidebar(
  page: IJupyterLabPageFixture
): Promise<Locator> {
  await page.evaluate(async () => {
    await window.jupyterapp.commands.execute('nsight-lab:open-sidebar');
  });
  const sidebar = page.locator(SIDEBAR);
  await sidebar.waitFor({ state: 'visible' });
  return sidebar;
}

/** Write a JSON result under RESULTS_DIR. */
export function writeResult(name: string, value: unknown): void {
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  fs.writeFileSync(
    path.join(RESULTS_DIR, name),
    `${JSON.stringify(value, null, 2)}\n`
  );
}

/** The path of a screenshot under RESULTS_DIR. */
export function shot(name: string): string {
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  return path.join(RESULTS_DIR, name);
}

/**
 * Make cell `index` a code cell with `source`: fill it when it exists (running a cell
 * may have added an empty one below), else add it.
 */
export async function putCell(
  page: IJupyterLabPageFixture,
  index: number,
  source: string
): Promise<void> {
  const count = await page.notebook.getCellCount();
  if (index >= count) {
    await page.notebook.addCell('code', source);
  } else {
    await page.notebook.setCell(index, 'code', source);
  }
}

/** Fill cell `index` and run it to the end. */
export async function runCode(
  page: IJupyterLabPageFixture,
  index: number,
  source: string
): Promise<void> {
  await putCell(page, index, source);
  await page.notebook.runCell(index);
}

/** p-th percentile (0..100) of numbers. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) {
    return NaN;
  }
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(
    sorted.length - 1,
    Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)
  );
  return sorted[rank];
}
