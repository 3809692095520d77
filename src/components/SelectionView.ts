/**
 * What a main-area panel shows of its selection source: loading, an error, one
 * session, or a comparison.
 */

import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { IRunsModel, ISelectionSource } from '../tokens';
import { CompareView } from './CompareView';
import { h } from './dom';
import { SessionView } from './SessionView';

export class SelectionView extends Widget {
  /**
   * @param model - The session view's actions (delete, export) and settings.
   * @param source - What to show; the view listens to it, its owner disposes it.
   */
  constructor(
    model: IRunsModel,
    source: ISelectionSource,
    trans: TranslationBundle
  ) {
    super();
    this._source = source;
    this._trans = trans;
    this.addClass('jp-nsightLab-SelectionView');
    this.title.label = trans.__('Selected');
    this._message = h('p', 'jp-nsightLab-SelectionView-message');
    this._session = new SessionView(model, trans);
    this._compare = new CompareView(trans);
    this.node.append(this._message, this._session.node, this._compare.node);
    source.changed.connect(this._render, this);
    this._render();
  }

  /** The source shown. */
  get source(): ISelectionSource {
    return this._source;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._source.changed.disconnect(this._render, this);
    this._session.dispose();
    this._compare.dispose();
    super.dispose();
  }

  private _render(): void {
    const selection = this._source.state;
    const trans = this._trans;
    let message = '';
    let showSession = false;
    let showCompare = false;
    if (selection.ids.length === 0) {
      message = trans.__('No session to show.');
    } else if (selection.error !== null) {
      message = selection.error;
    } else if (selection.loading) {
      message =
        selection.ids.length === 1
          ? trans.__('Loading session #%1…', selection.ids[0])
          : trans.__(
              'Comparing session #%1 with #%2…',
              selection.ids[0],
              selection.ids[1]
            );
    } else if (selection.ids.length === 1 && selection.detail) {
      this._session.setDetail(selection.detail);
      showSession = true;
    } else if (selection.ids.length === 2 && selection.comparison) {
      this._compare.setComparison(selection.comparison);
      showCompare = true;
    }
    this._message.textContent = message;
    this._message.hidden = message === '';
    this._message.classList.toggle('jp-mod-error', selection.error !== null);
    this._session.node.hidden = !showSession;
    this._compare.node.hidden = !showCompare;
    this.node.dataset.state = showSession
      ? 'session'
      : showCompare
        ? 'compare'
        : selection.loading
          ? 'loading'
          : selection.error
            ? 'error'
            : 'empty';
  }

  private _source: ISelectionSource;
  private _trans: TranslationBundle;
  private _message: HTMLParagraphElement;
  private _session: SessionView;
  private _compare: CompareView;
}
