/**
 * The status section: nsight-lab version and the run store's location (read-only).
 */

import { TranslationBundle, nullTranslator } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { IRunsModel } from '../tokens';
import { IStatusResponse } from '../types';

/**
 * What the status view shows: nothing yet, the server's status, or an error.
 */
export type StatusState =
  | { kind: 'loading' }
  | { kind: 'ready'; status: IStatusResponse }
  | { kind: 'error'; message: string };

/**
 * Render a status into a node. Every value is set as text, never as HTML.
 */
export function renderStatus(
  node: HTMLElement,
  state: StatusState,
  trans: TranslationBundle = nullTranslator.load('nsight-lab')
): void {
  node.replaceChildren();
  if (state.kind === 'loading') {
    node.textContent = trans.__(
      'Connecting to the nsight-lab server extension…'
    );
    return;
  }
  if (state.kind === 'error') {
    const error = document.createElement('p');
    error.className = 'jp-nsightLab-Status-error';
    error.textContent = state.message;
    node.appendChild(error);
    return;
  }
  const { status } = state;
  const rows: [string, string][] = [
    [trans.__('Version'), status.version],
    [
      trans.__('Run store'),
      status.store_engine === 'postgresql'
        ? trans.__('PostgreSQL (team store): %1', status.store_path)
        : status.store_path
    ],
    [
      trans.__('Store state'),
      status.store_exists
        ? 'present'
        : 'not created yet (no profile run so far)'
    ],
    [trans.__('Record schema'), `v${status.schema_version}`]
  ];
  const list = document.createElement('dl');
  list.className = 'jp-nsightLab-Status-list';
  for (const [label, value] of rows) {
    const term = document.createElement('dt');
    term.textContent = label;
    const detail = document.createElement('dd');
    detail.textContent = value;
    list.append(term, detail);
  }
  node.appendChild(list);
}

/**
 * The status section of the sidebar.
 */
export class StatusView extends Widget {
  constructor(model: IRunsModel, trans: TranslationBundle) {
    super();
    this._model = model;
    this._trans = trans;
    this.addClass('jp-nsightLab-Status');
    this.title.label = trans.__('Store');
    model.statusChanged.connect(this._render, this);
    this._render();
  }

  private _render(): void {
    const model = this._model;
    const state: StatusState = model.statusError
      ? { kind: 'error', message: model.statusError }
      : model.status
        ? { kind: 'ready', status: model.status }
        : { kind: 'loading' };
    renderStatus(this.node, state, this._trans);
  }

  private _model: IRunsModel;
  private _trans: TranslationBundle;
}
