import {
  ILabShell,
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  ICommandPalette,
  InputDialog,
  Notification
} from '@jupyterlab/apputils';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import {
  ITranslator,
  TranslationBundle,
  nullTranslator
} from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { nsightLabIcon } from './icons';
// The model backs the sidebar, which is added at activation.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { RunsModel } from './model';
import { CommandIDs, PLUGIN_ID, SIDEBAR_SETTINGS_ID } from './tokens';
import {
  checkSessionLink,
  ISessionLink,
  OPEN_SESSION_EVENT,
  parseSessionLink,
  SessionLookup,
  SIDEBAR_MARKER
} from './widget/link';
import {
  DEFAULT_SIDEBAR_SETTINGS,
  ISessionResponse,
  ISidebarSettings,
  IStatusResponse
} from './types';
// The panels are restored at activation, so their manager is needed at once.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { PanelManager } from './widgets/panels';
// The sidebar is added to the shell at activation, so it is needed at once.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { Sidebar } from './widgets/Sidebar';

/**
 * Read the sidebar settings, falling back to the defaults per key.
 */
function readSettings(settings: ISettingRegistry.ISettings): ISidebarSettings {
  const composite = settings.composite as Partial<ISidebarSettings>;
  return { ...DEFAULT_SIDEBAR_SETTINGS, ...composite };
}

/**
 * The notebook path of a main-area widget (a document widget whose file ends in
 * `.ipynb`), or null. Duck-typed so that no notebook package is needed.
 */
export function notebookPathOf(widget: Widget | null): string | null {
  const context = (widget as { context?: { path?: unknown } } | null)?.context;
  const path = context?.path;
  return typeof path === 'string' && path.endsWith('.ipynb') ? path : null;
}

/**
 * Session ids typed by the user (`3, 5` or `3 5`), as numbers; checked when the
 * panel opens (`checkPanelIds`).
 */
export function parseIdList(text: string): number[] {
  return text
    .split(/[\s,]+/)
    .filter(part => part !== '')
    .map(part => Number(part));
}

/** Ask for a session id; null when cancelled. */
async function askSessionId(trans: TranslationBundle): Promise<number | null> {
  const result = await InputDialog.getNumber({
    title: trans.__('Open an nsight-lab session'),
    label: trans.__('Session id (the # in the history list)')
  });
  return result.button.accept && result.value !== null ? result.value : null;
}

/** Ask for two session ids, a then b; null when cancelled. */
async function askComparedIds(
  trans: TranslationBundle
): Promise<number[] | null> {
  const result = await InputDialog.getText({
    title: trans.__('Compare two nsight-lab sessions'),
    label: trans.__('Session ids a, b (the ratio shown is b/a)'),
    placeholder: trans.__('e.g. 3, 5')
  });
  return result.button.accept && result.value !== null
    ? parseIdList(result.value)
    : null;
}

/**
 * Open a panel and say in a notification why it could not be (bad ids), instead of
 * throwing into the command registry.
 */
/** Open the session of a clicked link, or say why not (another store's session). */
async function openLinkedSession(
  app: JupyterFrontEnd,
  link: ISessionLink,
  trans: TranslationBundle
): Promise<void> {
  const { describeError, NsightLabResponseError, requestAPI } =
    await import('./request');
  const settings = app.serviceManager.serverSettings;
  const lookup: SessionLookup = async id => {
    try {
      const page = await requestAPI<ISessionResponse>(
        `sessions/${id}?limit=1`,
        settings
      );
      return page.session;
    } catch (error) {
      if (error instanceof NsightLabResponseError && error.status === 404) {
        return null;
      }
      throw error;
    }
  };
  try {
    const status = await requestAPI<IStatusResponse>('status', settings);
    const decision = await checkSessionLink(link, lookup, status.store_path);
    if ('open' in decision) {
      await app.commands.execute(CommandIDs.openSession, { id: decision.open });
    } else {
      Notification.warning(trans.__('nsight-lab: %1', decision.message));
    }
  } catch (error) {
    Notification.error(trans.__('nsight-lab: %1', describeError(error)));
  }
}

async function openOrSay(
  panels: PanelManager,
  ids: readonly unknown[],
  trans: TranslationBundle
): Promise<Widget | undefined> {
  try {
    return await panels.open(ids);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    console.error('[nsight-lab] could not open the panel:', message);
    Notification.error(trans.__('nsight-lab: %1', message));
    return undefined;
  }
}

/**
 * The nsight-lab sidebar (the live view and history of GPU profiles) and the
 * main-area panels of sessions and comparisons.
 */
const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'A sidebar that shows nsight-lab GPU profiles as they run and keeps their history.',
  autoStart: true,
  optional: [
    ILabShell,
    ILayoutRestorer,
    ICommandPalette,
    ISettingRegistry,
    ITranslator
  ],
  activate: (
    app: JupyterFrontEnd,
    labShell: ILabShell | null,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    settingRegistry: ISettingRegistry | null,
    translator: ITranslator | null
  ): void => {
    const trans = (translator ?? nullTranslator).load('nsight-lab');
    const model = new RunsModel({
      serverSettings: app.serviceManager.serverSettings
    });
    const sidebar = new Sidebar({ model, trans });

    // JupyterLab has an ILabShell; Notebook 7 has only app.shell, which also has a
    // right area.
    if (labShell) {
      labShell.add(sidebar, 'right', { rank: 900 });
    } else {
      app.shell.add(sidebar, 'right', { rank: 900 });
    }
    if (restorer) {
      restorer.add(sidebar, sidebar.id);
    }

    const panels = new PanelManager({
      model,
      shell: app.shell,
      trans,
      // A panel of a running session follows its new runs through the events
      // socket, which the sidebar opens when first shown: open it now.
      beforeOpen: () => sidebar.start()
    });

    // The live view follows the notebook in front; both shells tell when it changes.
    const followCurrent = (): void => {
      const path = notebookPathOf(app.shell.currentWidget);
      if (path !== null) {
        model.setCurrentNotebook(path);
      }
    };
    app.shell.currentChanged?.connect(followCurrent);
    void app.restored.then(followCurrent);

    app.commands.addCommand(CommandIDs.openSidebar, {
      label: trans.__('nsight-lab: Open sidebar'),
      caption: trans.__('Open the nsight-lab sidebar'),
      describedBy: { args: { type: 'object', properties: {} } },
      icon: nsightLabIcon,
      execute: () => {
        app.shell.activateById(sidebar.id);
      }
    });
    app.commands.addCommand(CommandIDs.openSession, {
      label: args =>
        args.id === undefined
          ? trans.__('nsight-lab: Open session…')
          : trans.__('nsight-lab: Open session #%1', String(args.id)),
      caption: trans.__(
        'Open a profile session (runs, summary and charts) in the main area'
      ),
      describedBy: {
        args: {
          type: 'object',
          properties: {
            id: {
              type: 'integer',
              minimum: 1,
              description: trans.__('The session id; asked for when absent')
            }
          }
        }
      },
      icon: nsightLabIcon,
      execute: async args => {
        const id = args.id ?? (await askSessionId(trans));
        return id === null ? undefined : openOrSay(panels, [id], trans);
      }
    });
    app.commands.addCommand(CommandIDs.compareSessions, {
      label: args =>
        args.a === undefined && args.b === undefined
          ? trans.__('nsight-lab: Compare sessions…')
          : trans.__(
              'nsight-lab: Compare session #%1 with #%2',
              String(args.b),
              String(args.a)
            ),
      caption: trans.__(
        'Compare two profile sessions (ratio of medians b/a with its interval) in the main area; without ids, the two picked in the history list'
      ),
      describedBy: {
        args: {
          type: 'object',
          properties: {
            a: { type: 'integer', minimum: 1, description: 'The baseline' },
            b: { type: 'integer', minimum: 1, description: 'Compared with a' }
          }
        }
      },
      icon: nsightLabIcon,
      execute: async args => {
        let ids: readonly unknown[] | null;
        if (args.a !== undefined || args.b !== undefined) {
          ids = [args.a, args.b];
        } else if (model.selectedIds.length === 2) {
          ids = model.selectedIds;
        } else {
          ids = await askComparedIds(trans);
        }
        return ids === null ? undefined : openOrSay(panels, ids, trans);
      }
    });
    if (restorer) {
      void restorer.restore(panels.sessions, {
        command: CommandIDs.openSession,
        args: panel => ({ id: panel.ids[0] }),
        name: panel => `${panel.ids[0]}`
      });
      void restorer.restore(panels.comparisons, {
        command: CommandIDs.compareSessions,
        args: panel => ({ a: panel.ids[0], b: panel.ids[1] }),
        name: panel => `${panel.ids[0]}-${panel.ids[1]}`
      });
    }

    // The history list opens a session, or compares the two picked.
    sidebar.openRequested.connect((_, ids) => {
      if (ids.length === 1) {
        void app.commands.execute(CommandIDs.openSession, { id: ids[0] });
      } else if (ids.length === 2) {
        void app.commands.execute(CommandIDs.compareSessions, {
          a: ids[0],
          b: ids[1]
        });
      }
    });
    // Inline widgets link to their session: mark the page so they show the link,
    // and open the session's panel when one is clicked.
    document.body.dataset[SIDEBAR_MARKER] = 'true';
    // A saved output's link names a session of the store it was made with: it is
    // opened only when this lab's store holds that session (its UUID) under its id.
    document.addEventListener(OPEN_SESSION_EVENT, event => {
      const detail = (
        event as CustomEvent<{ session_id?: unknown; link?: unknown }>
      ).detail;
      const link = parseSessionLink(detail?.link, detail?.session_id);
      if (link === null) {
        return;
      }
      void openLinkedSession(app, link, trans);
    });

    if (palette) {
      for (const command of [
        CommandIDs.openSidebar,
        CommandIDs.openSession,
        CommandIDs.compareSessions
      ]) {
        palette.addItem({ command, category: trans.__('nsight-lab') });
      }
    }

    if (settingRegistry) {
      settingRegistry
        .load(SIDEBAR_SETTINGS_ID)
        .then(settings => {
          sidebar.settings = readSettings(settings);
          settings.changed.connect(() => {
            sidebar.settings = readSettings(settings);
          });
        })
        .catch(reason => {
          console.error(
            '[nsight-lab] failed to load the sidebar settings',
            reason
          );
        });
    }
  }
};

export default plugin;
