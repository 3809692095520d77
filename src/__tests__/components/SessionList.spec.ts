/**
 * The session list renders only the rows in view and asks the model for their pages.
 */

import { Signal } from '@lumino/signaling';

import {
  OVERSCAN,
  ROW_HEIGHT,
  SessionList
} from '../../components/SessionList';
import { nullTranslator } from '@jupyterlab/translation';
import { IRunsModel } from '../../tokens';
import { EMPTY_FILTERS, ISessionSummary } from '../../types';
import { session } from '../fixtures';

function fakeModel(total: number): IRunsModel & { ensureRange: jest.Mock } {
  const owner = {};
  return {
    sessionsChanged: new Signal(owner),
    selectionChanged: new Signal(owner),
    liveChanged: new Signal(owner),
    statusChanged: new Signal(owner),
    connectionChanged: new Signal(owner),
    connection: 'open',
    status: null,
    statusError: null,
    filters: EMPTY_FILTERS,
    total,
    listLoading: false,
    listError: null,
    live: {
      session: null,
      runs: [],
      figures: {},
      lastRunId: 0,
      eventAt: null,
      updatedAt: null
    },
    selection: {
      ids: [3],
      detail: null,
      comparison: null,
      loading: false,
      error: null
    },
    settings: {
      refreshInterval: 200,
      maxPoints: 100,
      defaultChart: 'duration'
    },
    isDisposed: false,
    dispose: jest.fn(),
    start: jest.fn(),
    setFilters: jest.fn(),
    sessionAt: (index: number): ISessionSummary | undefined =>
      index < 100 ? session(total - index) : undefined,
    ensureRange: jest.fn(),
    select: jest.fn(),
    clearSelection: jest.fn(),
    deleteSession: jest.fn(),
    exportSession: jest.fn(),
    downloadReport: jest.fn(),
    setCurrentNotebook: jest.fn()
  } as unknown as IRunsModel & { ensureRange: jest.Mock };
}

describe('SessionList', () => {
  it('renders the visible rows of 10,000 sessions and asks for their pages', () => {
    const model = fakeModel(10000);
    const list = new SessionList(model, nullTranslator.load('nsight-lab'));
    Object.defineProperty(list.scroller, 'clientHeight', { value: 440 });

    list.render();

    const rows = list.node.querySelectorAll('.jp-nsightLab-SessionList-row');
    expect(rows.length).toBe(440 / ROW_HEIGHT + OVERSCAN);
    expect(model.ensureRange).toHaveBeenLastCalledWith(0, 10 + OVERSCAN);
    const spacer = list.node.querySelector<HTMLElement>(
      '.jp-nsightLab-SessionList-spacer'
    );
    expect(spacer?.style.height).toBe(`${10000 * ROW_HEIGHT}px`);
    expect(list.node.textContent).toContain('10,000 sessions');
  });

  it('after a scroll, renders the rows there and shows unread ones as loading', () => {
    const model = fakeModel(10000);
    const list = new SessionList(model, nullTranslator.load('nsight-lab'));
    Object.defineProperty(list.scroller, 'clientHeight', { value: 440 });
    list.scroller.scrollTop = 5000 * ROW_HEIGHT;

    list.render();

    const rows = Array.from(
      list.node.querySelectorAll<HTMLElement>('.jp-nsightLab-SessionList-row')
    );
    const indices = rows.map(r => Number(r.dataset.index));
    expect(Math.min(...indices)).toBe(5000 - OVERSCAN);
    expect(Math.max(...indices)).toBe(5010 + OVERSCAN - 1);
    expect(rows[0].textContent).toBe('loading…');
    expect(model.ensureRange).toHaveBeenLastCalledWith(
      5000 - OVERSCAN,
      5010 + OVERSCAN
    );
  });

  it('marks the selected session and selects on click, adds with ctrl', () => {
    const model = fakeModel(5);
    const list = new SessionList(model, nullTranslator.load('nsight-lab'));
    Object.defineProperty(list.scroller, 'clientHeight', { value: 440 });
    list.render();

    const selected = list.node.querySelector<HTMLElement>('.jp-mod-selected');
    expect(selected?.dataset.sessionId).toBe('3');

    const row = list.node.querySelector<HTMLElement>('[data-session-id="5"]');
    row?.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    row?.dispatchEvent(
      new MouseEvent('click', { bubbles: true, ctrlKey: true })
    );
    expect(model.select).toHaveBeenNthCalledWith(1, 5, 'single');
    expect(model.select).toHaveBeenNthCalledWith(2, 5, 'add');
  });

  it('says when nothing matches or nothing is stored', () => {
    const model = fakeModel(0);
    const list = new SessionList(model, nullTranslator.load('nsight-lab'));

    list.render();

    expect(list.node.textContent).toContain('No profiles stored yet');
  });
});
