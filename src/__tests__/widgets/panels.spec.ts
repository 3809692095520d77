/**
 * The main-area panels: one per session id (or ordered pair), activated when asked
 * again, titled from what they read, closed when their session is deleted, and the
 * plugin's commands that open them (with the restorer's args).
 */

import { CommandRegistry } from '@lumino/commands';
import { Widget } from '@lumino/widgets';

import plugin, { parseIdList } from '../../index';
import { RunsModel } from '../../model';
import { requestAPI } from '../../request';
import { CommandIDs } from '../../tokens';
import {
  COMPARE_TRACKER,
  PanelManager,
  SESSION_TRACKER
} from '../../widgets/panels';
import {
  SelectionPanel,
  checkPanelIds,
  panelId
} from '../../widgets/SelectionPanel';
import { compareResponse, run, session, sessionResponse } from '../fixtures';
import {
  FakeEvents,
  serve,
  settings,
  settle,
  sidebarSettings
} from '../model/server';

jest.mock('../../request', () => ({
  ...jest.requireActual('../../request'),
  requestAPI: jest.fn(),
  requestDownload: jest.fn()
}));

jest.mock('../../events', () => ({
  ...jest.requireActual('../../events'),
  EventsConnection: jest.fn(() => new FakeEvents())
}));

// plotly.js needs a real browser; the chart module is tested in charts/.
jest.mock('../../charts/mount', () => ({
  mountChart: jest.fn(() => ({
    update: jest.fn(),
    append: jest.fn(),
    dispose: jest.fn(),
    isDisposed: false
  }))
}));

/** Canned answers: every session exists (named `s<id>`), and any comparison. */
function serveSessions(): string[] {
  return serve({
    'sessions/*': url => {
      const id = Number(url.pathname.split('/')[2]);
      return sessionResponse(session(id, { name: `s${id}` }), [run(1, id)]);
    },
    compare: url =>
      compareResponse(
        Number(url.searchParams.get('a')),
        Number(url.searchParams.get('b'))
      ),
    sessions: () => ({ schema_version: 1, total: 0, sessions: [] }),
    status: () => ({
      version: '0.1.0',
      store_path: '/tmp/s.sqlite',
      store_exists: true,
      schema_version: 1
    })
  });
}

interface IFakeShell {
  add: jest.Mock;
  activateById: jest.Mock;
  added: Widget[];
}

function fakeShell(): IFakeShell {
  const added: Widget[] = [];
  return {
    added,
    add: jest.fn((widget: Widget) => {
      added.push(widget);
      Widget.attach(widget, document.body);
    }),
    activateById: jest.fn()
  };
}

beforeEach(() => {
  jest.spyOn(console, 'error').mockImplementation(() => undefined);
});

afterEach(() => {
  (requestAPI as jest.Mock).mockReset();
  jest.restoreAllMocks();
  document.body.replaceChildren();
});

describe('checkPanelIds', () => {
  it('takes one id or two different ones, as numbers', () => {
    expect(checkPanelIds([3])).toEqual([3]);
    expect(checkPanelIds(['3', 5])).toEqual([3, 5]);
  });

  it('says what is wrong with bad ids', () => {
    expect(() => checkPanelIds([])).toThrow(
      'a panel shows one session or compares two; got 0 ids'
    );
    expect(() => checkPanelIds([0])).toThrow(
      'session id 0 is not a positive whole number'
    );
    expect(() => checkPanelIds(['x'])).toThrow('session id "x"');
    expect(() => checkPanelIds([4, 4])).toThrow(
      'cannot compare session 4 with itself'
    );
  });

  it('names the panels by what they show', () => {
    expect(panelId([3])).toBe('nsight-lab-session-3');
    expect(panelId([3, 5])).toBe('nsight-lab-compare-3-5');
  });
});

describe('PanelManager', () => {
  it('opens a session panel in the main area once, then activates it', async () => {
    serveSessions();
    const model = new RunsModel({
      serverSettings: settings,
      settings: sidebarSettings
    });
    const shell = fakeShell();
    const beforeOpen = jest.fn();
    const panels = new PanelManager({ model, shell, beforeOpen });

    const panel = await panels.open([3]);

    expect(shell.add).toHaveBeenCalledWith(panel, 'main');
    expect(shell.activateById).toHaveBeenLastCalledWith('nsight-lab-session-3');
    expect(beforeOpen).toHaveBeenCalled();
    expect(panels.sessions.has(panel)).toBe(true);
    await settle();
    // Once read, the tab says the session's name, and the view shows it.
    expect(panel.title.label).toBe('#3 s3');
    expect(panel.content.node.dataset.state).toBe('session');

    const again = await panels.open(['3']);

    expect(again).toBe(panel);
    expect(shell.add).toHaveBeenCalledTimes(1);
    expect(shell.activateById).toHaveBeenCalledTimes(2);
    model.dispose();
  });

  it('opens a comparison panel per ordered pair (b/a differs from a/b)', async () => {
    serveSessions();
    const model = new RunsModel({
      serverSettings: settings,
      settings: sidebarSettings
    });
    const shell = fakeShell();
    const panels = new PanelManager({ model, shell });

    const ab = await panels.open([3, 5]);
    const ba = await panels.open([5, 3]);
    await settle();

    expect(ab).not.toBe(ba);
    expect(panels.comparisons.size).toBe(2);
    expect(panels.sessions.size).toBe(0);
    expect(ab.title.label).toBe('#3 vs #5');
    expect(ab.content.node.dataset.state).toBe('compare');
    expect(ab.node.querySelector('.jp-nsightLab-CompareView-table')).not.toBe(
      null
    );
    expect(panels.find([3, 5])).toBe(ab);
    model.dispose();
  });

  it('closes the panels of a deleted session and disposes their sources', async () => {
    serve({
      'sessions/*': (url, init) => {
        const id = Number(url.pathname.split('/')[2]);
        return init?.method === 'DELETE'
          ? null
          : sessionResponse(session(id), [run(1, id)]);
      },
      compare: url =>
        compareResponse(
          Number(url.searchParams.get('a')),
          Number(url.searchParams.get('b'))
        ),
      sessions: () => ({ schema_version: 1, total: 0, sessions: [] })
    });
    const model = new RunsModel({
      serverSettings: settings,
      settings: sidebarSettings
    });
    const panels = new PanelManager({ model, shell: fakeShell() });
    const three = await panels.open([3]);
    const five = await panels.open([5]);
    const both = await panels.open([3, 5]);
    const source = three.content.source;

    await model.deleteSession(3);

    expect(three.isDisposed).toBe(true);
    expect(both.isDisposed).toBe(true);
    expect(source.isDisposed).toBe(true);
    expect(five.isDisposed).toBe(false);
    expect(panels.sessions.size).toBe(1);
    model.dispose();
  });

  it('refuses bad ids with the reason, opening nothing', async () => {
    serveSessions();
    const model = new RunsModel({
      serverSettings: settings,
      settings: sidebarSettings
    });
    const shell = fakeShell();
    const panels = new PanelManager({ model, shell });

    await expect(panels.open([2, 2])).rejects.toThrow(
      'cannot compare session 2 with itself'
    );
    expect(shell.add).not.toHaveBeenCalled();
    model.dispose();
  });
});

describe('SelectionPanel', () => {
  it('shows a comparison title with both sessions once read', async () => {
    serveSessions();
    const model = new RunsModel({
      serverSettings: settings,
      settings: sidebarSettings
    });
    const one = new SelectionPanel({ model, ids: [3] });
    expect(one.title.label).toBe('Session #3'); // until read
    one.dispose();
    const panel = new SelectionPanel({ model, ids: [2, 9] });
    expect(panel.title.caption).toBe('nsight-lab comparison: b #9 over a #2');
    await settle();

    expect(panel.title.caption).toContain('b #9');
    expect(panel.title.closable).toBe(true);
    expect(panel.shows([2, 9])).toBe(true);
    expect(panel.shows([9, 2])).toBe(false);
    panel.dispose();
    expect(panel.content.source.isDisposed).toBe(true);
    model.dispose();
  });
});

describe('parseIdList', () => {
  it('reads ids separated by commas or spaces', () => {
    expect(parseIdList('3, 5')).toEqual([3, 5]);
    expect(parseIdList(' 3 5 ')).toEqual([3, 5]);
    expect(parseIdList('3,x')).toEqual([3, NaN]);
  });
});

describe('the plugin', () => {
  interface IActivated {
    commands: CommandRegistry;
    shell: IFakeShell;
    restore: jest.Mock;
    paletteItems: string[];
  }

  function activate(): IActivated {
    const commands = new CommandRegistry();
    const shell = fakeShell();
    const app = {
      commands,
      shell: { ...shell, currentWidget: null, currentChanged: undefined },
      serviceManager: { serverSettings: settings },
      restored: Promise.resolve()
    };
    const restore = jest.fn(() => Promise.resolve());
    const restorer = { add: jest.fn(), restore };
    const paletteItems: string[] = [];
    const palette = {
      addItem: jest.fn((item: { command: string }) =>
        paletteItems.push(item.command)
      )
    };
    (plugin.activate as (...args: unknown[]) => void)(
      app,
      null,
      restorer,
      palette,
      null,
      null
    );
    return { commands, shell, restore, paletteItems };
  }

  it('adds palette commands that open a session and a comparison in the main area', async () => {
    serveSessions();
    const { commands, shell, paletteItems } = activate();

    expect(paletteItems).toEqual([
      CommandIDs.openSidebar,
      CommandIDs.openSession,
      CommandIDs.compareSessions
    ]);
    expect(commands.label(CommandIDs.openSession)).toBe(
      'nsight-lab: Open session…'
    );
    expect(commands.label(CommandIDs.compareSessions)).toBe(
      'nsight-lab: Compare sessions…'
    );

    const panel = (await commands.execute(CommandIDs.openSession, {
      id: 4
    })) as SelectionPanel;
    const compare = (await commands.execute(CommandIDs.compareSessions, {
      a: 4,
      b: 6
    })) as SelectionPanel;

    const main = shell.add.mock.calls.filter(call => call[1] === 'main');
    expect(main.map(call => call[0])).toEqual([panel, compare]);
    expect(panel.ids).toEqual([4]);
    expect(compare.ids).toEqual([4, 6]);
    // The sidebar went to the right; reopening a session adds nothing.
    await commands.execute(CommandIDs.openSession, { id: 4 });
    expect(
      shell.add.mock.calls.filter(call => call[1] === 'main')
    ).toHaveLength(2);
  });

  it('restores the panels through the commands, with their ids as args', () => {
    serveSessions();
    const { restore } = activate();

    const calls = restore.mock.calls as unknown as [
      { namespace: string },
      {
        command: string;
        args: (panel: { ids: number[] }) => unknown;
        name: (panel: { ids: number[] }) => string;
      }
    ][];
    const byNamespace = new Map(
      calls.map(([tracker, options]) => [tracker.namespace, options])
    );
    const sessions = byNamespace.get(SESSION_TRACKER)!;
    const comparisons = byNamespace.get(COMPARE_TRACKER)!;
    expect(sessions.command).toBe(CommandIDs.openSession);
    expect(sessions.args({ ids: [7] })).toEqual({ id: 7 });
    expect(sessions.name({ ids: [7] })).toBe('7');
    expect(comparisons.command).toBe(CommandIDs.compareSessions);
    expect(comparisons.args({ ids: [7, 8] })).toEqual({ a: 7, b: 8 });
    expect(comparisons.name({ ids: [7, 8] })).toBe('7-8');
  });

  it('opens the session panel from an inline widget link', async () => {
    serveSessions();
    const { shell } = activate();

    document.body.dispatchEvent(
      new CustomEvent('nsight-lab:open-session', {
        bubbles: true,
        detail: { session_id: 12 }
      })
    );
    await settle();

    const main = shell.add.mock.calls.filter(call => call[1] === 'main');
    expect(main).toHaveLength(1);
    expect((main[0][0] as SelectionPanel).id).toBe('nsight-lab-session-12');
  });
});
