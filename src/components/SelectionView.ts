/**
 * The selection section: a hint, loading, an error, one session, or a comparison.
 */

import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { IRunsModel } from '../tokens';
import { CompareView } from './CompareView';
import { h } from './dom';
import { SessionView } from './SessionView';

export class SelectionView extends Widget {
  constructor(model: IRunsModel, trans: TranslationBundle) {
    super();
    this._model = model;
    this._trans = trans;
    this.addClass('jp-nsightLab-SelectionView');
    this.title.label = trans.__('Selected');
    this._message = h('p', 'jp-nsightLab-SelectionView-message');
    this._session = new SessionView(model, trans);
    this._compare = new CompareView(trans);
    this.node.append(this._message, this._session.node, this._compare.node);
    model.selectionChanged.connect(this._render, this);
    this._render();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._session.dispose();
    this._compare.dispose();
    super.dispose();
  }

  private _render(): void {
    const selection = this._model.selection;
    const trans = this._trans;
    let message = '';
    let showSession = false;
    let showCompare = false;
    if (selection.ids.length === 0) {
      message = trans.__(
        'Select a session in the history to see its runs and charts; ctrl- or shift-click a second one to compare them.'
      );
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

  private _model: IRunsModel;
  private _trans: TranslationBundle;
  private _message: HTMLParagraphElement;
  private _session: SessionView;
  private _compare: CompareView;
}
