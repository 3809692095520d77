/**
 * The lab extension's mime renderer of a `%%nsight` cell's final output
 * (`application/vnd.nsight-lab.session+json`, nsight_lab/views/bundle.py): the
 * charts, progress and summary of a saved notebook, drawn with no kernel, in
 * JupyterLab 4 and Notebook 7 (package.json `jupyterlab.mimeExtension`).
 *
 * A safe renderer: it draws data and runs nothing, so an untrusted notebook shows
 * it too. Ranked ahead of the widget view (@jupyter-widgets registers -10) and of
 * `text/html` (the static page for hosts without this extension).
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

// The widget's stylesheet (anywidget loads it for the widget; here, webpack does).
import '../../style/widget.css';

import { SessionRenderer } from './renderer';
import { SESSION_MIME_TYPE } from './types';

export { SESSION_MIME_TYPE } from './types';
export type { ISessionBundle } from './types';

/** Ahead of the widget view's -10 and of every standard renderer. */
export const SESSION_RANK = -20;

/** Creates a {@link SessionRenderer} per output. */
export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [SESSION_MIME_TYPE],
  defaultRank: SESSION_RANK,
  createRenderer: options => new SessionRenderer(options)
};

const extension: IRenderMime.IExtension = {
  id: 'nsight-lab:session-renderer',
  description: "Draws a %%nsight cell's final output without a kernel.",
  rendererFactory,
  rank: SESSION_RANK,
  dataType: 'json'
};

export default extension;
