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
import { ROW_HEIGHT, SessionList } from '../components/SessionList';
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
 * The sections' shares of the sidebar's height (live, history, store) until it is
 * first laid out; then {@link fitSections} gives the history list its rows.
 */
export const SECTION_SIZES: readonly number[] = [9, 10, 1];

/** History rows the sidebar makes room for (a part of a sixth hints at more). */
export const HISTORY_ROWS = 5.1;

/** The least height the list's summary line is given: two lines of small text. */
const SUMMARY_HEIGHT = 32;

/**
 * The heights of the live, history and store sections: the store its content when
 * expanded; with a live profile, the history its filter bar, its summary and
 * {@link HISTORY_ROWS} rows (at most 60 % of the room) and the live view the rest;
 * with none, the live section folds away and the history takes the room.
 *
 * @param room - The sections' height, less their title bars, in px.
 * @param filterBar - The filter bar's height, in px.
 * @param summary - The list summary's height, in px.
 * @param live - Whether there is a live profile (the live section is open).
 * @param store - The store section's content height when expanded, else 0.
 */
export function fitSections(
  room: number,
  filterBar: number,
  summary: number,
  live = true,
  store = 0
): [number, number, number] {
  const storeHeight = Math.round(Math.min(store, room * 0.4));
  const rest = Math.max(0, room - storeHeight);
  if (!live) {
    return [0, rest, storeHeight];
  }
  const need =
    filterBar + Math.max(summary, SUMMARY_HEIGHT) + HISTORY_ROWS * ROW_HEIGHT;
  const history = Math.round(Math.min(need, rest * 0.6));
  return [Math.max(0, rest - history), history, storeHeight];
}

/**
 * Whether the live section has something to show: a profile of this notebook,
 * running or just ended (its final charts). With none, the section folds away
 * rather than fill the sidebar with an empty area.
 */
export function liveShown(model: IRunsModel): boolean {
  return model.live.session !== null;
}

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
    const filterBar = new FilterBar(this._model, trans);
    history.addWidget(filterBar);
    const list = (this._list = new SessionList(this._model, trans));
    list.openRequested.connect((_, ids) => this._openRequested.emit(ids), this);
    history.addWidget(list);
    const status = (this._status = new StatusView(this._model, trans));
    for (const section of [this._live, history, status]) {
      this.addWidget(section);
    }
    if (this.content instanceof AccordionPanel) {
      this.content.setRelativeSizes([...SECTION_SIZES]);
      // The store's few lines fold away: its title says where it is, and the list
      // says when the store or the server extension is missing. The live view
      // shows only with a live profile (none: it would be an empty area).
      this.content.collapse(2);
      if (!liveShown(this._model)) {
        this.content.collapse(0);
      }
      this.content.handleMoved.connect(() => (this._userSized = true));
      // Expanding STORE gives it the room of its lines (it had none).
      this.content.expansionToggled.connect(() => this._fit(true), this);
      // The sections' room changes with the window and with the header's
      // connection line: fit again whenever it does.
      if (typeof ResizeObserver !== 'undefined') {
        this._resize = new ResizeObserver(() => this._fit());
        this._resize.observe(this.content.node);
      }
    }
    this._filterBar = filterBar;

    this._model.connectionChanged.connect(this._renderConnection, this);
    this._renderConnection();
    this._model.liveChanged.connect(this._followLive, this);
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
    this._resize?.disconnect();
    super.dispose();
    this._model.dispose();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._fit();
    this.start();
  }

  /**
   * At each new height (the first layouts, a resized window): give the history
   * list its rows and the live view the rest, until the user drags a section's
   * edge; then the user's sizes stand.
   */
  private _fit(force = false): void {
    const content = this.content;
    if (!(content instanceof AccordionPanel) || (this._userSized && !force)) {
      return;
    }
    const height = content.node.clientHeight;
    if (height <= 0 || (height === this._fittedHeight && !force)) {
      return;
    }
    this._fittedHeight = height;
    const titles = content.titles.reduce(
      (sum, title) => sum + title.offsetHeight,
      0
    );
    const summary = this._list.node.querySelector<HTMLElement>(
      '.jp-nsightLab-SessionList-summary'
    );
    const storeOpen = !this._status.isHidden;
    const [live, history, store] = fitSections(
      height - titles,
      this._filterBar.node.offsetHeight,
      summary?.offsetHeight ?? 0,
      !this._live.isHidden,
      storeOpen ? this._status.node.scrollHeight + 8 : 0
    );
    content.setRelativeSizes([live, history, store]);
  }

  /**
   * Open the live section when a profile starts and fold it when there is none,
   * then fit the sections again.
   */
  private _followLive(): void {
    const content = this.content;
    if (!(content instanceof AccordionPanel)) {
      return;
    }
    const running = liveShown(this._model);
    if (running === this._liveOpen) {
      return;
    }
    this._liveOpen = running;
    if (running) {
      content.expand(0);
    } else {
      content.collapse(0);
    }
    this._fit(true);
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
  private _filterBar: FilterBar;
  /** The height the sections were last fitted to. */
  private _fittedHeight = 0;
  /** Whether the user sized the sections (dragged an edge). */
  private _userSized = false;
  /** Whether the live section was last opened for a live profile. */
  private _liveOpen = false;
  private _resize: ResizeObserver | null = null;
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
