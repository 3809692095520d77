/**
 * The main-area panels of sessions and comparisons: opened once per session id (or
 * ordered pair), activated when asked again, tracked for the layout restorer, and
 * closed when a session they show is deleted.
 */

import { JupyterFrontEnd } from '@jupyterlab/application';
import { WidgetTracker } from '@jupyterlab/apputils';
import { TranslationBundle, nullTranslator } from '@jupyterlab/translation';

import { IRunsModel } from '../tokens';
import { SelectionPanel, checkPanelIds } from './SelectionPanel';

/** The tracker namespaces, also the restorer's keys (`nsight-lab-session:3`). */
export const SESSION_TRACKER = 'nsight-lab-session';
export const COMPARE_TRACKER = 'nsight-lab-compare';

/** The part of the shell the panels need (JupyterLab's and Notebook 7's). */
export type PanelShell = Pick<JupyterFrontEnd.IShell, 'add' | 'activateById'>;

/**
 * Opens and keeps the panels.
 */
export class PanelManager {
  constructor(options: PanelManager.IOptions) {
    this._model = options.model;
    this._shell = options.shell;
    this._trans = options.trans ?? nullTranslator.load('nsight-lab');
    this._beforeOpen = options.beforeOpen ?? (() => undefined);
    this._model.sessionDeleted.connect((_, id) => this.closeShowing(id), this);
  }

  /** The session panels (restored through the open-session command). */
  readonly sessions = new WidgetTracker<SelectionPanel>({
    namespace: SESSION_TRACKER
  });

  /** The comparison panels (restored through the compare-sessions command). */
  readonly comparisons = new WidgetTracker<SelectionPanel>({
    namespace: COMPARE_TRACKER
  });

  /** The open panel of `ids` (in that order), if any. */
  find(ids: readonly number[]): SelectionPanel | undefined {
    const tracker = ids.length === 1 ? this.sessions : this.comparisons;
    return tracker.find(panel => panel.shows(ids)) ?? undefined;
  }

  /**
   * Show session `ids[0]`, or b = `ids[1]` compared with a = `ids[0]`, in the main
   * area: the panel already open is activated, else one is opened.
   *
   * @throws {Error} When the ids are not one session id or two different ones.
   */
  async open(ids: readonly unknown[]): Promise<SelectionPanel> {
    const checked = checkPanelIds(ids);
    this._beforeOpen();
    let panel = this.find(checked);
    if (!panel) {
      panel = new SelectionPanel({
        model: this._model,
        ids: checked,
        trans: this._trans
      });
      const tracker = checked.length === 1 ? this.sessions : this.comparisons;
      await tracker.add(panel);
      this._shell.add(panel, 'main');
    }
    this._shell.activateById(panel.id);
    return panel;
  }

  /** Close every panel that shows session `id` (it was deleted). */
  closeShowing(id: number): void {
    const showing: SelectionPanel[] = [];
    for (const tracker of [this.sessions, this.comparisons]) {
      tracker.forEach(panel => {
        if (panel.ids.includes(id)) {
          showing.push(panel);
        }
      });
    }
    for (const panel of showing) {
      panel.dispose();
    }
  }

  private _model: IRunsModel;
  private _shell: PanelShell;
  private _trans: TranslationBundle;
  private _beforeOpen: () => void;
}

/**
 * The PanelManager statics.
 */
export namespace PanelManager {
  export interface IOptions {
    model: IRunsModel;
    shell: PanelShell;
    trans?: TranslationBundle;
    /** Called before a panel opens (the plugin starts the live updates there). */
    beforeOpen?: () => void;
  }
}
