/**
 * The filters of the history list: text, notebook, annotation, device, host, user,
 * backend, status and a date range (a team store on PostgreSQL holds many hosts' and
 * users' sessions). Typing waits briefly, then the list is read again.
 *
 * Laid out for the sidebar's default 250 px: one search line with a "Filters"
 * button that shows (or hides) the other filters, one labelled field per line, so
 * no placeholder is cut and every input and dropdown has a visible label. The
 * button counts the hidden filters that are set.
 *
 * The backends offered are the server's registry (`GET status` `backends`), so a new
 * backend needs no change here.
 */

import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { IRunsModel } from '../tokens';
import {
  EMPTY_FILTERS,
  IBackendInfo,
  ISessionFilters,
  IStatusResponse
} from '../types';
import { h } from './dom';

/** How long typing waits before the list is read again, in milliseconds. */
export const FILTER_DEBOUNCE_MS = 250;

/**
 * A local calendar date (`YYYY-MM-DD` from a date input) as an ISO-8601 UTC time:
 * its local midnight, or the next day's when `endOfDay` (the list's `until` is
 * exclusive). Empty for an empty or malformed date.
 */
export function dateToIso(date: string, endOfDay: boolean = false): string {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (!match) {
    return '';
  }
  const when = new Date(
    Number(match[1]),
    Number(match[2]) - 1,
    Number(match[3]) + (endOfDay ? 1 : 0)
  );
  return Number.isNaN(when.getTime()) ? '' : when.toISOString();
}

/**
 * One entry of `GET status` `backends`: nsight_lab/backends/__init__.py `BACKENDS`.
 */
function isBackendInfo(value: unknown): value is IBackendInfo {
  if (typeof value !== 'object' || value === null) {
    return false;
  }
  const entry = value as Record<string, unknown>;
  return (
    typeof entry.id === 'string' &&
    entry.id !== '' &&
    typeof entry.description === 'string'
  );
}

/**
 * The backends a status answer lists, in the server's order; none before the status
 * is read (or from a server that does not list them).
 */
export function backendsOf(status: IStatusResponse | null): IBackendInfo[] {
  const listed: unknown = status?.backends;
  return Array.isArray(listed) ? listed.filter(isBackendInfo) : [];
}

type TextKey = 'text' | 'notebook' | 'annotation' | 'device' | 'host' | 'user';

/** How many filters other than the search text are set. */
export function countHiddenFilters(filters: ISessionFilters): number {
  return (Object.keys(filters) as (keyof ISessionFilters)[]).filter(
    key => key !== 'text' && filters[key] !== ''
  ).length;
}

/**
 * The filter bar.
 */
export class FilterBar extends Widget {
  constructor(model: IRunsModel, trans: TranslationBundle) {
    super();
    this._model = model;
    this._trans = trans;
    this.addClass('jp-nsightLab-FilterBar');

    const search = h('div', 'jp-nsightLab-FilterBar-search');
    const text = this._textInput(
      'text',
      trans.__('Search name, notebook, cell or region'),
      trans.__('Search sessions')
    );
    text.type = 'search';
    const toggle = (this._toggle = h(
      'button',
      'jp-nsightLab-FilterBar-toggle jp-nsightLab-Button'
    ));
    toggle.type = 'button';
    toggle.setAttribute('aria-expanded', 'false');
    toggle.title = trans.__('Show or hide the other filters');
    toggle.addEventListener('click', () => this.toggleFields());
    search.append(text, toggle);

    const fields = (this._fields = h('div', 'jp-nsightLab-FilterBar-fields'));
    fields.id = `jp-nsightLab-FilterBar-fields-${++FilterBar._count}`;
    fields.hidden = true;
    toggle.setAttribute('aria-controls', fields.id);
    const texts: [TextKey, string, string][] = [
      ['notebook', trans.__('Notebook'), trans.__('exact path')],
      ['annotation', trans.__('Region'), trans.__('exact annotation')],
      ['device', trans.__('Device'), trans.__('exact name')],
      ['host', trans.__('Host'), trans.__('exact host name')],
      ['user', trans.__('User'), trans.__('exact user name')]
    ];
    for (const [key, label, placeholder] of texts) {
      fields.appendChild(
        this._field(label, this._textInput(key, label, placeholder))
      );
    }
    this._anyBackend = trans.__('any backend');
    this._backend = this._select(
      'backend',
      trans.__('Backend'),
      [''],
      this._anyBackend
    );
    this._showBackends();
    model.statusChanged.connect(this._showBackends, this);
    this._status = this._select(
      'status',
      trans.__('Status'),
      ['', 'running', 'completed', 'failed', 'interrupted'],
      trans.__('any status')
    );
    this._since = this._date('since', trans.__('From (date)'));
    this._until = this._date('until', trans.__('To (date, inclusive)'));
    fields.append(
      this._field(trans.__('Backend'), this._backend),
      this._field(trans.__('Status'), this._status),
      this._field(trans.__('From'), this._since),
      this._field(trans.__('To'), this._until)
    );
    this.node.append(search, fields);
    this._showCount();
  }

  /** Whether the filters other than the search are shown. */
  get fieldsShown(): boolean {
    return !this._fields.hidden;
  }

  /** Show or hide the filters other than the search. */
  toggleFields(show: boolean = !this.fieldsShown): void {
    this._fields.hidden = !show;
    this._toggle.setAttribute('aria-expanded', show ? 'true' : 'false');
    this.node.classList.toggle('jp-mod-expanded', show);
  }

  /** The filters as the inputs say now. */
  read(): ISessionFilters {
    const value = (key: TextKey): string =>
      this._inputs.get(key)?.value.trim() ?? '';
    return {
      ...EMPTY_FILTERS,
      text: value('text'),
      notebook: value('notebook'),
      annotation: value('annotation'),
      device: value('device'),
      host: value('host'),
      user: value('user'),
      backend: this._backend.value,
      status: this._status.value,
      since: dateToIso(this._since.value),
      until: dateToIso(this._until.value, true)
    };
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._model.statusChanged.disconnect(this._showBackends, this);
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
    super.dispose();
  }

  /**
   * Offer the backends the status lists. The chosen one stays chosen, and stays
   * offered even when the server no longer lists it.
   */
  private _showBackends(): void {
    const select = this._backend;
    const chosen = select.value;
    const backends = backendsOf(this._model.status);
    if (chosen && !backends.some(backend => backend.id === chosen)) {
      backends.push({ id: chosen, description: '' });
    }
    select.replaceChildren(this._option('', this._anyBackend));
    for (const backend of backends) {
      const option = this._option(backend.id, backend.id);
      option.title = backend.description;
      select.appendChild(option);
    }
    select.value = chosen;
  }

  /** The toggle's words: `Filters`, or `Filters (2)` when two hidden ones are set. */
  private _showCount(): void {
    const count = countHiddenFilters(this.read());
    this._toggle.textContent =
      count > 0
        ? this._trans.__('Filters (%1)', count)
        : this._trans.__('Filters');
    this._toggle.classList.toggle('jp-mod-active', count > 0);
  }

  /** A text input for filter `key`, labelled for assistive technology. */
  private _textInput(
    key: TextKey,
    label: string,
    placeholder: string
  ): HTMLInputElement {
    const input = h('input', `jp-nsightLab-FilterBar-${key}`);
    input.type = 'text';
    input.placeholder = placeholder;
    input.title = label;
    input.setAttribute('aria-label', label);
    input.addEventListener('input', () => this._schedule());
    this._inputs.set(key, input);
    return input;
  }

  /** A visible label beside its control (the label element names the control). */
  private _field(label: string, control: HTMLElement): HTMLLabelElement {
    const field = h('label', 'jp-nsightLab-FilterBar-field');
    field.append(h('span', 'jp-nsightLab-FilterBar-label', label), control);
    return field;
  }

  private _option(value: string, label: string): HTMLOptionElement {
    const option = h('option', undefined, label);
    option.value = value;
    return option;
  }

  private _select(
    key: string,
    label: string,
    values: string[],
    anyLabel: string
  ): HTMLSelectElement {
    const select = h('select', `jp-nsightLab-FilterBar-${key}`);
    select.setAttribute('aria-label', label);
    select.title = label;
    for (const value of values) {
      select.appendChild(this._option(value, value || anyLabel));
    }
    select.addEventListener('change', () => this._apply());
    return select;
  }

  private _date(key: string, label: string): HTMLInputElement {
    const input = h('input', `jp-nsightLab-FilterBar-${key}`);
    input.type = 'date';
    input.title = label;
    input.setAttribute('aria-label', label);
    input.addEventListener('change', () => this._apply());
    return input;
  }

  private _schedule(): void {
    if (this._timer !== null) {
      clearTimeout(this._timer);
    }
    this._timer = setTimeout(() => {
      this._timer = null;
      this._apply();
    }, FILTER_DEBOUNCE_MS);
  }

  private _apply(): void {
    const next = this.read();
    const current = this._model.filters;
    const changed = (Object.keys(next) as (keyof ISessionFilters)[]).some(
      key => next[key] !== current[key]
    );
    if (changed) {
      this._model.setFilters(next);
    }
    this._showCount();
  }

  private static _count = 0;
  private _model: IRunsModel;
  private _trans: TranslationBundle;
  private _toggle: HTMLButtonElement;
  private _fields: HTMLDivElement;
  private _inputs = new Map<TextKey, HTMLInputElement>();
  private _backend: HTMLSelectElement;
  private _anyBackend: string;
  private _status: HTMLSelectElement;
  private _since: HTMLInputElement;
  private _until: HTMLInputElement;
  private _timer: ReturnType<typeof setTimeout> | null = null;
}
