/**
 * Notebook helpers of the cell-output specs (reopen.spec.ts, magic-widget.spec.ts):
 * set a cell's source through its model, stop every kernel, read a saved notebook.
 */

import { IJupyterLabPageFixture } from '@jupyterlab/galata';

interface INotebookPanelLike {
  content: {
    widgets: { model: { sharedModel: { setSource(source: string): void } } }[];
  };
}

/**
 * Set cell `index`'s source through the model (adding cells as needed): typing it
 * into the editor would auto-indent the lines after each `with ...:`.
 */
export async function setSource(
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
export async function startActiveCell(
  page: IJupyterLabPageFixture
): Promise<void> {
  // The command's promise settles when the cell finishes: do not wait for it.
  await page.evaluate(() => {
    void window.jupyterapp.commands.execute('notebook:run-cell');
  });
}

/** Shut every kernel session of the server down. */
export async function shutdownKernels(
  page: IJupyterLabPageFixture
): Promise<void> {
  await page.evaluate(async () => {
    const sessions = window.jupyterapp.serviceManager.sessions;
    await sessions.refreshRunning();
    await Promise.all(
      Array.from(sessions.running()).map(s => sessions.shutdown(s.id))
    );
  });
}

/** The number of kernels the server runs now. */
export async function runningKernels(
  page: IJupyterLabPageFixture
): Promise<number> {
  return page.evaluate(async () => {
    const kernels = window.jupyterapp.serviceManager.kernels;
    await kernels.refreshRunning();
    return Array.from(kernels.running()).length;
  });
}

/** One output of a saved notebook, as nbformat stores it. */
export interface ISavedOutput {
  output_type: string;
  data?: Record<string, unknown>;
}

/** The outputs of each cell of the notebook saved at `path` (read from the server). */
export async function savedOutputs(
  page: IJupyterLabPageFixture,
  path: string
): Promise<ISavedOutput[][]> {
  return page.evaluate(async path => {
    const model = await window.jupyterapp.serviceManager.contents.get(path, {
      content: true
    });
    const cells = (model.content as { cells: { outputs?: unknown[] }[] }).cells;
    return cells.map(cell => (cell.outputs ?? []) as ISavedOutput[]);
  }, path);
}

/** The notebook saved at `path`, as JSON text (read from the server). */
export async function savedNotebookText(
  page: IJupyterLabPageFixture,
  path: string
): Promise<string> {
  return page.evaluate(async path => {
    const model = await window.jupyterapp.serviceManager.contents.get(path, {
      content: true
    });
    return JSON.stringify(model.content);
  }, path);
}
