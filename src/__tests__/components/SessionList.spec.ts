/**
 * The session list renders only the rows in view and asks the model for their pages.
 */

import { Signal } from '@lumino/signaling';

import {
  OVERSCAN,
  ROW_HEIGHT,
  SessionList,
  renderSessionRow
} from '../../components/SessionList';
import { nullTranslator } from '@jupyterlab/translation';
import { IRunsModel } from '../../tokens';
import { EMPTY_FILTERS, ISessionSummary } from '../../types';
import { nextSelection } from '../../model/selection';
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
    selectedIds: [3],
    sessionDeleted: new Signal(owner),
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
    // Picks as RunsModel does (the history list's rule), starting from [3].
    select: jest.fn(function (
      this: { selectedIds: number[] },
      id: number,
      mode: 'single' | 'add'
    ) {
      this.selectedIds = nextSelection(this.selectedIds, id, mode);
      return this.selectedIds;
    }),
    clearSelection: jest.fn(),
    openSelection: jest.fn(),
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
    Object.defineProperty(list.scroller, 'clientHeight', {
      value: 11 * ROW_HEIGHT
    });

    list.render();

    const rows = list.node.querySelectorAll('.jp-nsightLab-SessionList-row');
    expect(rows.length).toBe(11 + OVERSCAN);
    expect(model.ensureRange).toHaveBeenLastCalledWith(0, 11 + OVERSCAN);
    const spacer = list.node.querySelector<HTMLElement>(
      '.jp-nsightLab-SessionList-spacer'
    );
    expect(spacer?.style.height).toBe(`${10000 * ROW_HEIGHT}px`);
    expect(list.node.textContent).toContain('10,000 sessions');
  });

  it('after a scroll, renders the rows there and shows unread ones as loading', () => {
    const model = fakeModel(10000);
    const list = new SessionList(model, nullTranslator.load('nsight-lab'));
    Object.defineProperty(list.scroller, 'clientHeight', {
      value: 11 * ROW_HEIGHT
    });
    list.scroller.scrollTop = 5000 * ROW_HEIGHT;

    list.render();

    const rows = Array.from(
      list.node.querySelectorAll<HTMLElement>('.jp-nsightLab-SessionList-row')
    );
    const indices = rows.map(r => Number(r.dataset.index));
    expect(Math.min(...indices)).toBe(5000 - OVERSCAN);
    expect(Math.max(...indices)).toBe(5000 + 11 + OVERSCAN - 1);
    expect(rows[0].textContent).toBe('loading…');
    expect(model.ensureRange).toHaveBeenLastCalledWith(
      5000 - OVERSCAN,
      5000 + 11 + OVERSCAN
    );
  });

  it('marks the picked session; a click opens one, ctrl-click a second compares', () => {
    const model = fakeModel(5);
    const list = new SessionList(model, nullTranslator.load('nsight-lab'));
    const opened: (readonly number[])[] = [];
    list.openRequested.connect((_, ids) => opened.push([...ids]));
    Object.defineProperty(list.scroller, 'clientHeight', {
      value: 11 * ROW_HEIGHT
    });
    list.render();

    const selected = list.node.querySelector<HTMLElement>('.jp-mod-selected');
    expect(selected?.dataset.sessionId).toBe('3');

    const click = (id: number, ctrlKey = false): void => {
      list.node
        .querySelector<HTMLElement>(`[data-session-id="${id}"]`)
        ?.dispatchEvent(new MouseEvent('click', { bubbles: true, ctrlKey }));
    };
    click(5);
    click(4, true);
    expect(model.select).toHaveBeenNthCalledWith(1, 5, 'single');
    expect(model.select).toHaveBeenNthCalledWith(2, 4, 'add');
    // The click opens session 5; the ctrl-click compares 4 (b) with 5 (a).
    expect(opened).toEqual([[5], [5, 4]]);

    // Ctrl-clicking a picked one un-picks it and opens nothing.
    click(4, true);
    expect(opened).toHaveLength(2);

    // Enter on a focused row opens it too.
    const row = list.node.querySelector<HTMLElement>('[data-session-id="2"]');
    row?.dispatchEvent(
      new KeyboardEvent('keydown', { key: 'Enter', bubbles: true })
    );
    expect(opened[2]).toEqual([2]);
  });

  it('says when nothing matches or nothing is stored', () => {
    const model = fakeModel(0);
    const list = new SessionList(model, nullTranslator.load('nsight-lab'));

    list.render();

    expect(list.node.textContent).toContain('No profiles stored yet');
  });
});

describe('renderSessionRow', () => {
  it('says what a session is: name, regions, backend and runs', () => {
    const row = document.createElement('div');
    const s = session(3, {
      name: null,
      notebook: null,
      backend: 'events',
      device: 'NVIDIA H200',
      configs: [{ n: 1 }, { n: 2 }, { n: 3 }],
      runs_per_config: 10,
      runs_planned_total: 30,
      run_count: 60,
      runs_done: 30,
      regions: ['matmul', 'relu']
    });

    renderSessionRow(row, s, 0);

    const [name, details] = Array.from(row.children).map(
      line => line.textContent ?? ''
    );
    // No name, no notebook: the regions name it, not "session 3".
    expect(name).toBe('#3matmul, relucompleted');
    // Backend, runs and regions first (they show at the default width); one
    // meaning of "runs": 3 configs x 10, not the 60 records of 2 regions.
    expect(
      details.startsWith('events · 30 of 30 runs · 2 regions · NVIDIA H200')
    ).toBe(true);
    expect(details).not.toContain('60');
    expect(row.title).toBe('regions: matmul, relu');
  });

  it('names a named session and, after it, its first regions', () => {
    const row = document.createElement('div');
    const regions = Array.from({ length: 12 }, (_, i) => `r${i}`);

    renderSessionRow(row, session(4, { name: 'block', regions }), 0);

    expect(
      row.querySelector('.jp-nsightLab-SessionList-name')?.textContent
    ).toBe('block · r0, r1, r2 +9');
    expect(row.children[1].textContent).toContain('12 regions');
  });
});
