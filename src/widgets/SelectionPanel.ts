/**
 * A session or a comparison as a document-like panel in the main area: it can be
 * resized, docked and put side by side like a notebook. One panel per session id
 * (or per ordered pair a, b); the plugin keeps them in widget trackers so that they
 * come back on reload.
 */

import { MainAreaWidget } from '@jupyterlab/apputils';
import { TranslationBundle, nullTranslator } from '@jupyterlab/translation';

import { SelectionView } from '../components/SelectionView';
import { sessionTitle } from '../components/format';
import { nsightLabIcon } from '../icons';
import { IRunsModel, ISelectionSource } from '../tokens';

/** The DOM id (and restorer name) prefix of a session panel. */
export const SESSION_PANEL_PREFIX = 'nsight-lab-session-';

/** The DOM id (and restorer name) prefix of a comparison panel. */
export const COMPARE_PANEL_PREFIX = 'nsight-lab-compare-';

/**
 * The ids a panel shows, checked: one session id or two different ones, each a
 * positive whole number.
 *
 * @throws {Error} Naming what is wrong, when they are not.
 */
export function checkPanelIds(ids: readonly unknown[]): number[] {
  if (ids.length !== 1 && ids.length !== 2) {
    throw new Error(
      `a panel shows one session or compares two; got ${ids.length} ids`
    );
  }
  const checked = ids.map(id => Number(id));
  for (const [i, id] of checked.entries()) {
    if (!Number.isInteger(id) || id <= 0) {
      throw new Error(
        `session id ${JSON.stringify(ids[i])} is not a positive whole number; pass a session id as listed in the nsight-lab history`
      );
    }
  }
  if (checked.length === 2 && checked[0] === checked[1]) {
    throw new Error(
      `cannot compare session ${checked[0]} with itself; pick two different sessions`
    );
  }
  return checked;
}

/** The DOM id of the panel of `ids`: `nsight-lab-session-3`, `nsight-lab-compare-3-5`. */
export function panelId(ids: readonly number[]): string {
  return ids.length === 1
    ? `${SESSION_PANEL_PREFIX}${ids[0]}`
    : `${COMPARE_PANEL_PREFIX}${ids[0]}-${ids[1]}`;
}

/**
 * A main-area panel of one session or of a comparison.
 */
export class SelectionPanel extends MainAreaWidget<SelectionView> {
  constructor(options: SelectionPanel.IOptions) {
    const ids = checkPanelIds(options.ids);
    const trans = options.trans ?? nullTranslator.load('nsight-lab');
    const source = options.model.openSelection(ids);
    const content = new SelectionView(options.model, source, trans);
    super({ content });
    this._ids = ids;
    this._source = source;
    this._trans = trans;
    this.id = panelId(ids);
    this.addClass('jp-nsightLab-SelectionPanel');
    this.node.dataset.kind = ids.length === 1 ? 'session' : 'compare';
    // The actions live in the session view; an empty toolbar would only take room.
    this.toolbar.hide();
    this.title.icon = nsightLabIcon;
    this.title.closable = true;
    this._setTitle();
    source.changed.connect(this._setTitle, this);
  }

  /** The session id, or the two compared (`[a, b]`: the ratio is b/a). */
  get ids(): readonly number[] {
    return this._ids;
  }

  /** Whether this panel shows `ids` (in that order). */
  shows(ids: readonly number[]): boolean {
    return (
      ids.length === this._ids.length && ids.every((x, i) => x === this._ids[i])
    );
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._source.changed.disconnect(this._setTitle, this);
    super.dispose();
    // The view only listens to the source; the panel owns it.
    this._source.dispose();
  }

  /** The tab's label: the session's name once read (ids until then). */
  private _setTitle(): void {
    const trans = this._trans;
    const state = this._source.state;
    if (this._ids.length === 1) {
      const session = state.detail?.session;
      this.title.label = session
        ? trans.__('#%1 %2', session.id, sessionTitle(session))
        : trans.__('Session #%1', this._ids[0]);
      this.title.caption = trans.__('nsight-lab session #%1', this._ids[0]);
    } else {
      const [a, b] = this._ids;
      this.title.label = trans.__('#%1 vs #%2', a, b);
      const comparison = state.comparison;
      this.title.caption = comparison
        ? trans.__(
            'nsight-lab comparison: b #%1 %2 over a #%3 %4',
            b,
            sessionTitle(comparison.b),
            a,
            sessionTitle(comparison.a)
          )
        : trans.__('nsight-lab comparison: b #%1 over a #%2', b, a);
    }
  }

  private _ids: readonly number[];
  private _source: ISelectionSource;
  private _trans: TranslationBundle;
}

/**
 * The SelectionPanel statics.
 */
export namespace SelectionPanel {
  export interface IOptions {
    /** Reads the session(s) and performs the session view's actions. */
    model: IRunsModel;
    /** One session id, or two to compare (`[a, b]`). */
    ids: readonly unknown[];
    /** The translation bundle for user-facing strings. */
    trans?: TranslationBundle;
  }
}
