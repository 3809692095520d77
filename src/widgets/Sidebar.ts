/**
 * The nsight-lab side panel: sections for the live profile, the history list and
 * the store location, over one RunsModel. A session or a comparison opened from the
 * history list shows in the main area (`SelectionPanel`), not here, so the sidebar
 * stays usable at its default width.
 */

import { TranslationBundle, nullTranslator } from '@jupyterlab/translation';
import { SidePanel } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { ISignal, Signal } from '@lumino/signaling';
import { AccordionPanel, Panel, Widget } from '@lumino/widgets';

import { FilterBar } from '../components/FilterBar';
import { LiveView } from '../components/LiveView';
import { SessionList } from '../components/SessionList';
import { StatusView } from '../components/StatusView';
import { ConnectionState } from '../events';
import { nsightLabIcon } from '../icons';
import { IRunsModel, SIDEBAR_ID } from '../tokens';
import { ISidebarSettings } from '../types';

/** The words for a websocket state; empty when there is nothing to say. */
export function connectionText(
  state: ConnectionState,
  trans: TranslationBundle = nullTranslator.load('nsight-lab')
): string {
  switch (state) {
    case 'connecting':
      return trans.__('Connecting to live updates…');
    case 'reconnecting':
      return trans.__(
        'Live updates dropped — reconnecting… (the views are read again once connected)'
      );
    case 'closed':
      return trans.__('Live updates are off.');
    default:
      return '';
  }
}

/**
 * The sections' shares of the sidebar's height (live, history, store): the history
 * list gets the most (at a 720 px window, 5 rows or more at the default width),
 * the live view enough for its chart, the store its few lines.
 */
export const SECTION_SIZES: readonly number[] = [9, 10, 1];

/**
 * The nsight-lab side panel.
 */
export class Sidebar extends SidePanel {
  constructor(options: Sidebar.IOptions) {
    super();
    this._model = options.model;
    const trans = options.trans ?? nullTranslator.load('nsight-lab');
    this._bundle = trans;
    this.id = SIDEBAR_ID;
    this.addClass('jp-nsightLab-Sidebar');
    this.title.icon = nsightLabIcon;
    this.title.caption = trans.__('nsight-lab');

    const heading = new Widget();
    heading.addClass('jp-nsightLab-Sidebar-heading');
    heading.node.textContent = trans.__('nsight-lab');
    this.header.addWidget(heading);
    this._connection = new Widget();
    this._connection.addClass('jp-nsightLab-Sidebar-connection');
    this.header.addWidget(this._connection);

    this._live = new LiveView(this._model, trans);
    const history = (this._history = new Panel());
    history.addClass('jp-nsightLab-History');
    history.title.label = trans.__('History');
    history.addWidget(new FilterBar(this._model, trans));
    const list = (this._list = new SessionList(this._model, trans));
    list.openRequested.connect((_, ids) => this._openRequested.emit(ids), this);
    history.addWidget(list);
    const status = (this._status = new StatusView(this._model, trans));
    for (const section of [this._live, history, status]) {
      this.addWidget(section);
    }
    if (this.content instanceof AccordionPanel) {
      this.content.setRelativeSizes([...SECTION_SIZES]);
    }

    this._model.connectionChanged.connect(this._renderConnection, this);
    this._renderConnection();
  }

  /** The sections, top to bottom: live, history, store. */
  get sections(): Widget[] {
    return [this._live, this._history, this._status];
  }

  /** The history list. */
  get sessionList(): SessionList {
    return this._list;
  }

  /**
   * Emitted with the ids the history list asks to open: one session, or two to
   * compare (`[a, b]`).
   */
  get openRequested(): ISignal<this, readonly number[]> {
    return this._openRequested;
  }

  /**
   * Read the store and open the live updates, once: when the sidebar is first
   * shown, or when a panel needs the live updates first.
   */
  start(): void {
    if (!this._started) {
      this._started = true;
      void this._model.start();
    }
  }

  /** The model the sections show. */
  get model(): IRunsModel {
    return this._model;
  }

  /** Apply new settings at once (refresh interval, max points, default chart). */
  set settings(value: ISidebarSettings) {
    this._model.settings = value;
    this._live.applySettings();
  }

  get settings(): ISidebarSettings {
    return this._model.settings;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    super.dispose();
    this._model.dispose();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.start();
  }

  private _renderConnection(): void {
    const text = connectionText(this._model.connection, this._bundle);
    this._connection.node.textContent = text;
    this._connection.node.hidden = text === '';
    this._connection.node.dataset.state = this._model.connection;
  }

  private _model: IRunsModel;
  private _bundle: TranslationBundle;
  private _connection: Widget;
  private _live: LiveView;
  private _history: Panel;
  private _list: SessionList;
  private _status: StatusView;
  private _started = false;
  private _openRequested = new Signal<this, readonly number[]>(this);
}

/**
 * The Sidebar statics.
 */
export namespace Sidebar {
  export interface IOptions {
    /** The state the sections show. */
    model: IRunsModel;
    /** The translation bundle for user-facing strings. */
    trans?: TranslationBundle;
  }
}
