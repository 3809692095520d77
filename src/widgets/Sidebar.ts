import { ServerConnection } from '@jupyterlab/services';
import { TranslationBundle, nullTranslator } from '@jupyterlab/translation';
import { SidePanel } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { nsightLabIcon } from '../icons';
import { NsightLabResponseError, requestAPI } from '../request';
import { SIDEBAR_ID } from '../tokens';
import {
  DEFAULT_SIDEBAR_SETTINGS,
  ISidebarSettings,
  IStatusResponse
} from '../types';

/**
 * What the status view shows: nothing yet, the server's status, or an error.
 */
export type StatusState =
  | { kind: 'loading' }
  | { kind: 'ready'; status: IStatusResponse }
  | { kind: 'error'; message: string };

/**
 * Say in words why a status request failed.
 */
export function describeError(error: unknown): string {
  if (error instanceof NsightLabResponseError) {
    return error.message;
  }
  if (error instanceof ServerConnection.NetworkError) {
    return `cannot reach the Jupyter server: ${error.message}`;
  }
  return `could not read the nsight-lab status: ${String(error)}`;
}

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
    [trans.__('Run store'), status.store_path],
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
 * The nsight-lab side panel. For now it shows the server extension's status.
 */
export class Sidebar extends SidePanel {
  constructor(options: Sidebar.IOptions) {
    super();
    this._serverSettings = options.serverSettings;
    this._bundle = options.trans ?? nullTranslator.load('nsight-lab');
    this.id = SIDEBAR_ID;
    this.addClass('jp-nsightLab-Sidebar');
    this.title.icon = nsightLabIcon;
    this.title.caption = this._bundle.__('nsight-lab');

    const heading = new Widget();
    heading.addClass('jp-nsightLab-Sidebar-heading');
    heading.node.textContent = this._bundle.__('nsight-lab');
    this.header.addWidget(heading);

    this._status = new Widget();
    this._status.addClass('jp-nsightLab-Status');
    renderStatus(this._status.node, { kind: 'loading' }, this._bundle);
    this.addWidget(this._status);
  }

  /** The current sidebar settings. */
  get settings(): ISidebarSettings {
    return this._settings;
  }

  set settings(value: ISidebarSettings) {
    this._settings = value;
  }

  /**
   * Re-read `GET /nsight-lab/api/status` and show the answer or the error.
   */
  async refresh(): Promise<void> {
    let state: StatusState;
    try {
      const status = await requestAPI<IStatusResponse>(
        'status',
        this._serverSettings
      );
      state = { kind: 'ready', status };
    } catch (error) {
      console.error('[nsight-lab] status request failed', error);
      state = { kind: 'error', message: describeError(error) };
    }
    if (!this.isDisposed) {
      renderStatus(this._status.node, state, this._bundle);
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this.refresh();
  }

  private _serverSettings: ServerConnection.ISettings;
  private _settings: ISidebarSettings = DEFAULT_SIDEBAR_SETTINGS;
  private _status: Widget;
  private _bundle: TranslationBundle;
}

/**
 * The Sidebar statics.
 */
export namespace Sidebar {
  export interface IOptions {
    /** The settings of the Jupyter server that runs the nsight-lab extension. */
    serverSettings: ServerConnection.ISettings;
    /** The translation bundle for user-facing strings. */
    trans?: TranslationBundle;
  }
}
