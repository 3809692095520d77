/**
 * The filters of the history list: text, notebook, annotation, device, backend,
 * status and a date range. Typing waits briefly, then the list is read again.
 */

import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { IRunsModel } from '../tokens';
import { EMPTY_FILTERS, ISessionFilters } from '../types';
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

type TextKey = 'text' | 'notebook' | 'annotation' | 'device';

/**
 * The filter bar.
 */
export class FilterBar extends Widget {
  constructor(model: IRunsModel, trans: TranslationBundle) {
    super();
    this._model = model;
    this.addClass('jp-nsightLab-FilterBar');
    const texts: [TextKey, string][] = [
      ['text', trans.__('Search name, notebook, cell, region')],
      ['notebook', trans.__('Notebook path (exact)')],
      ['annotation', trans.__('Annotation (exact)')],
      ['device', trans.__('Device (exact)')]
    ];
    for (const [key, placeholder] of texts) {
      const input = h('input', `jp-nsightLab-FilterBar-${key}`);
      input.type = key === 'text' ? 'search' : 'text';
      input.placeholder = placeholder;
      input.setAttribute('aria-label', placeholder);
      input.addEventListener('input', () => this._schedule());
      this._inputs.set(key, input);
      this.node.appendChild(input);
    }
    const row = h('div', 'jp-nsightLab-FilterBar-row');
    this._backend = this._select(
      'backend',
      trans.__('Backend'),
      ['', 'cpu', 'events', 'cupti', 'ncu'],
      trans.__('any backend')
    );
    this._status = this._select(
      'status',
      trans.__('Status'),
      ['', 'running', 'completed', 'failed', 'interrupted'],
      trans.__('any status')
    );
    this._since = this._date('since', trans.__('From (date)'));
    this._until = this._date('until', trans.__('To (date, inclusive)'));
    row.append(this._backend, this._status, this._since, this._until);
    this.node.appendChild(row);
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
      backend: this._backend.value,
      status: this._status.value,
      since: dateToIso(this._since.value),
      until: dateToIso(this._until.value, true)
    };
  }

  dispose(): void {
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
    super.dispose();
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
      const option = h('option', undefined, value || anyLabel);
      option.value = value;
      select.appendChild(option);
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
  }

  private _model: IRunsModel;
  private _inputs = new Map<TextKey, HTMLInputElement>();
  private _backend: HTMLSelectElement;
  private _status: HTMLSelectElement;
  private _since: HTMLInputElement;
  private _until: HTMLInputElement;
  private _timer: ReturnType<typeof setTimeout> | null = null;
}
