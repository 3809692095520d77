/**
 * The filter bar offers the backends the server's registry lists (`GET status`), and
 * its host and user fields reach the list query (`GET sessions?host=…&user=…`).
 */

import { nullTranslator } from '@jupyterlab/translation';
import { Signal } from '@lumino/signaling';

import {
  backendsOf,
  FILTER_DEBOUNCE_MS,
  FilterBar
} from '../../components/FilterBar';
import { sessionsQuery } from '../../model/sessions';
import { IRunsModel } from '../../tokens';
import { EMPTY_FILTERS, IStatusResponse } from '../../types';

type Backend = { id: string; description: string };

interface IFakeModel {
  model: IRunsModel;
  setStatus(backends: Backend[] | undefined): void;
  setFilters: jest.Mock;
}

function fakeModel(): IFakeModel {
  const owner = {};
  const statusChanged = new Signal<IRunsModel, void>(owner as IRunsModel);
  const setFilters = jest.fn();
  const state: { status: IStatusResponse | null } = { status: null };
  const model = {
    statusChanged,
    get status(): IStatusResponse | null {
      return state.status;
    },
    filters: EMPTY_FILTERS,
    setFilters
  } as unknown as IRunsModel;
  return {
    model,
    setFilters,
    setStatus(backends: Backend[] | undefined): void {
      state.status = {
        version: '0.0.0',
        store_path: '/tmp/store.sqlite',
        store_exists: true,
        schema_version: 1,
        ...(backends === undefined ? {} : { backends })
      } as IStatusResponse;
      statusChanged.emit();
    }
  };
}

const REGISTRY: Backend[] = [
  { id: 'cpu', description: 'host wall-clock time' },
  { id: 'events', description: 'CUDA events' },
  { id: 'cupti', description: 'CUPTI kernels' },
  { id: 'ncu', description: 'Nsight Compute counters' }
];

function offered(bar: FilterBar): string[] {
  const select = bar.node.querySelector<HTMLSelectElement>(
    '.jp-nsightLab-FilterBar-backend'
  )!;
  return Array.from(select.options).map(option => option.value);
}

function chooseBackend(bar: FilterBar, id: string): void {
  const select = bar.node.querySelector<HTMLSelectElement>(
    '.jp-nsightLab-FilterBar-backend'
  )!;
  select.value = id;
  select.dispatchEvent(new Event('change'));
}

describe('FilterBar backends', () => {
  it('offers only "any backend" until the status is read', () => {
    const { model } = fakeModel();
    const bar = new FilterBar(model, nullTranslator.load('nsight-lab'));

    expect(offered(bar)).toEqual(['']);
    bar.dispose();
  });

  it('offers the registry, in its order, with each description', () => {
    const fake = fakeModel();
    const bar = new FilterBar(fake.model, nullTranslator.load('nsight-lab'));

    fake.setStatus([...REGISTRY, { id: 'pm', description: 'PM sampling' }]);

    expect(offered(bar)).toEqual(['', 'cpu', 'events', 'cupti', 'ncu', 'pm']);
    const pm = bar.node.querySelector<HTMLOptionElement>('option[value="pm"]');
    expect(pm?.title).toBe('PM sampling');
    bar.dispose();
  });

  it('keeps the chosen backend when the list is read again', () => {
    const fake = fakeModel();
    const bar = new FilterBar(fake.model, nullTranslator.load('nsight-lab'));
    fake.setStatus(REGISTRY);

    chooseBackend(bar, 'cupti');
    expect(fake.setFilters).toHaveBeenLastCalledWith(
      expect.objectContaining({ backend: 'cupti' })
    );
    fake.setStatus([{ id: 'cpu', description: 'host' }]);

    expect(offered(bar)).toEqual(['', 'cpu', 'cupti']);
    expect(bar.read().backend).toBe('cupti');
    bar.dispose();
  });

  it('stops listening once disposed', () => {
    const fake = fakeModel();
    const bar = new FilterBar(fake.model, nullTranslator.load('nsight-lab'));
    bar.dispose();

    fake.setStatus(REGISTRY);

    expect(offered(bar)).toEqual(['']);
  });
});

function typeInto(bar: FilterBar, key: string, text: string): void {
  const input = bar.node.querySelector<HTMLInputElement>(
    `.jp-nsightLab-FilterBar-${key}`
  )!;
  input.value = text;
  input.dispatchEvent(new Event('input'));
}

describe('FilterBar host and user', () => {
  afterEach(() => {
    jest.useRealTimers();
  });

  it('has a labelled field for each', () => {
    const { model } = fakeModel();
    const bar = new FilterBar(model, nullTranslator.load('nsight-lab'));

    const labels = Array.from(
      bar.node.querySelectorAll('.jp-nsightLab-FilterBar-field')
    ).map(field => ({
      label: field.querySelector('.jp-nsightLab-FilterBar-label')?.textContent,
      control: field.querySelector('input, select')?.className
    }));
    expect(labels).toEqual(
      expect.arrayContaining([
        { label: 'Host', control: 'jp-nsightLab-FilterBar-host' },
        { label: 'User', control: 'jp-nsightLab-FilterBar-user' }
      ])
    );
    bar.dispose();
  });

  it('sends what is typed, trimmed, in the list query', () => {
    jest.useFakeTimers();
    const fake = fakeModel();
    const bar = new FilterBar(fake.model, nullTranslator.load('nsight-lab'));

    typeInto(bar, 'host', ' gpu-node-7 ');
    typeInto(bar, 'user', 'ana lee');
    expect(fake.setFilters).not.toHaveBeenCalled();
    jest.advanceTimersByTime(FILTER_DEBOUNCE_MS);

    expect(fake.setFilters).toHaveBeenCalledTimes(1);
    const filters = fake.setFilters.mock.calls[0][0];
    expect(filters).toEqual({
      ...EMPTY_FILTERS,
      host: 'gpu-node-7',
      user: 'ana lee'
    });
    expect(sessionsQuery(filters, 0, 50)).toBe(
      'sessions?host=gpu-node-7&user=ana%20lee&limit=50&offset=0'
    );
    expect(
      bar.node.querySelector('.jp-nsightLab-FilterBar-toggle')?.textContent
    ).toBe('Filters (2)');
    bar.dispose();
  });
});

describe('backendsOf', () => {
  it('reads well-formed entries and skips the rest', () => {
    const status = {
      backends: [
        { id: 'cpu', description: 'host' },
        { id: '', description: 'nameless' },
        { id: 3, description: 'not a string' },
        null
      ]
    } as unknown as IStatusResponse;

    expect(backendsOf(status)).toEqual([{ id: 'cpu', description: 'host' }]);
    expect(backendsOf(null)).toEqual([]);
    expect(backendsOf({} as IStatusResponse)).toEqual([]);
  });
});
