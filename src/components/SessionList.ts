/**
 * The history list: every stored session, newest first, virtualised. Only the rows
 * in view (plus a few) exist in the DOM; pages are read from the server as the user
 * scrolls. Click (or Enter on a focused row) picks a session and asks to open it;
 * ctrl-, cmd- or shift-click picks a second one and asks to compare the two
 * (`openRequested`: the plugin opens the panel in the main area).
 */

import { TranslationBundle } from '@jupyterlab/translation';
import { Message } from '@lumino/messaging';
import { ISignal, Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { IRunsModel } from '../tokens';
import { EMPTY_FILTERS, ISessionSummary } from '../types';
import { h } from './dom';
import { formatTime, regionsText, runsText, sessionTitle } from './format';
import { contentHeight, rowOffset, visibleRange } from './virtualList';

/**
 * The fixed height of one row, in pixels (style/base.css uses the same): two
 * lines (name and status; backend, runs, regions, device and time).
 */
export const ROW_HEIGHT = 40;

/** Rows rendered beyond each edge of the viewport. */
export const OVERSCAN = 8;

/** Fill a row element with a session's text. */
export function renderSessionRow(
  row: HTMLElement,
  session: ISessionSummary | undefined,
  index: number
): void {
  row.replaceChildren();
  row.dataset.index = `${index}`;
  if (!session) {
    delete row.dataset.sessionId;
    row.classList.add('jp-mod-placeholder');
    row.appendChild(h('div', 'jp-nsightLab-SessionList-title', 'loading…'));
    return;
  }
  row.classList.remove('jp-mod-placeholder');
  row.dataset.sessionId = `${session.id}`;
  const first = h('div', 'jp-nsightLab-SessionList-title');
  first.append(
    h('span', 'jp-nsightLab-SessionList-id', `#${session.id}`),
    nameOf(session),
    h(
      'span',
      `jp-nsightLab-SessionList-status jp-nsightLab-status-${session.status}`,
      session.status
    )
  );
  const judged = session.baseline_verdict;
  if (judged?.verdict === 'slower') {
    // A regression against the baseline it was profiled with (kept by Python).
    const badge = h('span', 'jp-nsightLab-SessionList-regression', 'slower');
    badge.title = `slower than baseline ${judged.baseline}${
      judged.baseline_session_id === null
        ? ''
        : ` (session #${judged.baseline_session_id})`
    } beyond noise`;
    first.appendChild(badge);
  }
  // What the session is: backend, runs and regions first (they must show at the
  // default width), device and time after them; the regions' names in the
  // tooltip (and in the name line of a session with no name or notebook).
  const regions = session.regions ?? [];
  const details = [
    session.backend,
    runsText(session.runs_done ?? 0, session.runs_planned_total),
    regions.length > 0
      ? `${regions.length} region${regions.length === 1 ? '' : 's'}`
      : '',
    session.device ?? '',
    formatTime(session.created_at)
  ].filter(part => part !== '');
  // Each part whole or not at all (`fitRow` leaves out, from the end, the parts
  // that do not fit the width: never a word cut in the middle).
  const second = h('div', 'jp-nsightLab-SessionList-details');
  second.append(
    ...details.map((part, i) => h('span', PART, i === 0 ? part : ` · ${part}`))
  );
  second.title = details.join(' · ');
  row.title = [
    session.notebook ?? '',
    regions.length > 0 ? `regions: ${regionsText(regions, regions.length)}` : ''
  ]
    .filter(part => part !== '')
    .join('\n');
  row.append(first, second);
}

/** A part of a row's line that `fitRow` may leave out. */
const PART = 'jp-nsightLab-SessionList-part';

/** Whether `line`'s text is wider than its box (it would be cut). */
function overflows(line: HTMLElement): boolean {
  return line.scrollWidth > line.clientWidth + 0.5;
}

/**
 * Fit a rendered row to its width without cutting words: in the name line the
 * regions after the name, in the details line the parts from the last (time,
 * device, ...) back to the second, are left out while the line is wider than its
 * box; the whole text stays in the tooltips. The backend and the name are never
 * left out (a name longer than the row still ends in an ellipsis).
 */
export function fitRow(row: HTMLElement): void {
  const name = row.querySelector<HTMLElement>('.jp-nsightLab-SessionList-name');
  const details = row.querySelector<HTMLElement>(
    '.jp-nsightLab-SessionList-details'
  );
  const lines: [HTMLElement | null, string][] = [
    [name, '.jp-nsightLab-SessionList-what'],
    [details, `.${PART}`]
  ];
  for (const [line, selector] of lines) {
    if (!line) {
      continue;
    }
    const parts = Array.from(line.querySelectorAll<HTMLElement>(selector));
    parts.forEach(part => (part.hidden = false));
    const first = line === details ? 1 : 0;
    for (let i = parts.length - 1; i >= first && overflows(line); i--) {
      parts[i].hidden = true;
    }
  }
}

/**
 * The name line's name: the session's title, then (in the same ellipsis) the
 * regions it timed when the title is not already them.
 */
function nameOf(session: ISessionSummary): HTMLSpanElement {
  const title = sessionTitle(session);
  const name = h('span', 'jp-nsightLab-SessionList-name', title);
  const regions = regionsText(session.regions ?? []);
  if (regions && regions !== title) {
    name.appendChild(
      h('span', 'jp-nsightLab-SessionList-what', ` · ${regions}`)
    );
  }
  return name;
}

/**
 * The virtualised session list.
 */
export class SessionList extends Widget {
  constructor(model: IRunsModel, trans: TranslationBundle) {
    super();
    this._model = model;
    this._trans = trans;
    this.addClass('jp-nsightLab-SessionList');
    this._summary = h('div', 'jp-nsightLab-SessionList-summary');
    this._scroller = h('div', 'jp-nsightLab-SessionList-scroller');
    this._scroller.tabIndex = 0;
    this._spacer = h('div', 'jp-nsightLab-SessionList-spacer');
    this._scroller.appendChild(this._spacer);
    this.node.append(this._summary, this._scroller);
    this._scroller.addEventListener('scroll', () => this._schedule());
    this._spacer.addEventListener('click', event => this._onClick(event));
    this._spacer.addEventListener('keydown', event => this._onKey(event));
    if (typeof ResizeObserver !== 'undefined') {
      this._resize = new ResizeObserver(() => this._schedule());
      this._resize.observe(this._scroller);
    }
    model.sessionsChanged.connect(this._schedule, this);
    model.selectionChanged.connect(this._schedule, this);
    model.statusChanged.connect(this._schedule, this);
  }

  /**
   * Emitted with the ids to open: one session (a click), or two to compare (a
   * ctrl/shift-click that picked a second one: `[a, b]`).
   */
  get openRequested(): ISignal<this, readonly number[]> {
    return this._openRequested;
  }

  /** The scroll container (tests scroll it). */
  get scroller(): HTMLElement {
    return this._scroller;
  }

  /** Render now (tests; the widget itself renders on the next animation frame). */
  render(): void {
    const model = this._model;
    const total = model.total ?? 0;
    this._summary.textContent = this._summaryText();
    this._summary.classList.toggle(
      'jp-mod-error',
      model.listError !== null && model.total === null
    );
    this.node.dataset.total = `${model.total ?? ''}`;
    this._spacer.style.height = `${contentHeight(total, ROW_HEIGHT)}px`;

    const range = visibleRange(
      this._scroller.scrollTop,
      this._scroller.clientHeight,
      ROW_HEIGHT,
      total,
      OVERSCAN
    );
    model.ensureRange(range.start, range.end);
    for (const [index, row] of this._rows) {
      if (index < range.start || index >= range.end) {
        row.remove();
        this._rows.delete(index);
      }
    }
    const selected = new Set(model.selectedIds);
    // A new width: every row fitted again (parts left out may fit now, or not).
    const width = this._scroller.clientWidth;
    const refit = width !== this._fitWidth;
    this._fitWidth = width;
    let loaded = 0;
    for (let index = range.start; index < range.end; index++) {
      let row = this._rows.get(index);
      if (!row) {
        row = h('div', 'jp-nsightLab-SessionList-row');
        row.setAttribute('role', 'option');
        row.tabIndex = -1;
        row.style.top = `${rowOffset(index, ROW_HEIGHT)}px`;
        row.style.height = `${ROW_HEIGHT}px`;
        this._rows.set(index, row);
        this._spacer.appendChild(row);
      }
      const session = model.sessionAt(index);
      if (session) {
        loaded += 1;
      }
      // Rebuild a row only when what it shows changed, so a click is never split
      // between two versions of the same row.
      const key = session
        ? `${session.id}|${session.status}|${session.run_count}|${session.runs_done ?? ''}|${session.name}|${(session.regions ?? []).length}|${session.baseline_verdict?.verdict ?? ''}`
        : 'placeholder';
      if (row.dataset.key !== key || refit) {
        if (row.dataset.key !== key) {
          renderSessionRow(row, session, index);
          row.dataset.key = key;
        }
        fitRow(row);
      }
      row.classList.toggle(
        'jp-mod-selected',
        !!session && selected.has(session.id)
      );
      row.setAttribute(
        'aria-selected',
        session && selected.has(session.id) ? 'true' : 'false'
      );
    }
    this.node.dataset.rendered = `${this._rows.size}`;
    this.node.dataset.loaded = `${loaded}`;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._resize?.disconnect();
    if (this._frame !== null) {
      cancelAnimationFrame(this._frame);
    }
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._schedule();
  }

  private _summaryText(): string {
    const model = this._model;
    const trans = this._trans;
    if (model.listError !== null && model.total === null) {
      return model.listError;
    }
    if (model.total === null) {
      return trans.__('Loading the stored profiles…');
    }
    if (model.total === 0) {
      const filtered = (
        Object.keys(EMPTY_FILTERS) as (keyof typeof EMPTY_FILTERS)[]
      ).some(key => model.filters[key] !== '');
      if (filtered) {
        return trans.__('No stored profile matches these filters.');
      }
      if (model.status && !model.status.store_exists) {
        return trans.__(
          'No run store yet: the first %1 cell creates it at %2.',
          '%%nsight',
          model.status.store_path
        );
      }
      return trans.__('No profiles stored yet. Run a %1 cell.', '%%nsight');
    }
    const count =
      model.total === 1
        ? trans.__('1 session')
        : trans.__('%1 sessions', model.total.toLocaleString());
    return `${count} · ${trans.__('click to open, ctrl/shift-click a second to compare')}`;
  }

  private _schedule(): void {
    if (this._frame !== null || this.isDisposed) {
      return;
    }
    this._frame = requestAnimationFrame(() => {
      this._frame = null;
      this.render();
    });
  }

  private _onClick(event: MouseEvent): void {
    const target = event.target as HTMLElement | null;
    const row = target?.closest<HTMLElement>('.jp-nsightLab-SessionList-row');
    const id = row?.dataset.sessionId;
    if (!id) {
      return;
    }
    const add = event.ctrlKey || event.metaKey || event.shiftKey;
    this._pick(Number(id), add);
  }

  private _onKey(event: KeyboardEvent): void {
    const target = event.target as HTMLElement | null;
    const id = target?.dataset.sessionId;
    if (event.key !== 'Enter' || !id) {
      return;
    }
    event.preventDefault();
    this._pick(Number(id), event.ctrlKey || event.metaKey || event.shiftKey);
  }

  /** Pick session `id` and ask to open what the picks now say. */
  private _pick(id: number, add: boolean): void {
    const ids = this._model.select(id, add ? 'add' : 'single');
    if (!add || ids.length === 2) {
      this._openRequested.emit(ids);
    }
  }

  private _fitWidth = -1;
  private _model: IRunsModel;
  private _trans: TranslationBundle;
  private _summary: HTMLDivElement;
  private _scroller: HTMLDivElement;
  private _spacer: HTMLDivElement;
  private _rows = new Map<number, HTMLDivElement>();
  private _frame: number | null = null;
  private _resize: ResizeObserver | null = null;
  private _openRequested = new Signal<this, readonly number[]>(this);
}
