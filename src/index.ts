import {
  ILabShell,
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { nsightLabIcon } from './icons';
// The model backs the sidebar, which is added at activation.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { RunsModel } from './model';
import { CommandIDs, PLUGIN_ID, SIDEBAR_SETTINGS_ID } from './tokens';
import { OPEN_SESSION_EVENT, SIDEBAR_MARKER } from './widget/link';
import { DEFAULT_SIDEBAR_SETTINGS, ISidebarSettings } from './types';
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
 * The nsight-lab sidebar: the live view and history of GPU profiles.
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
      label: trans.__('nsight-lab: open'),
      caption: trans.__('Open the nsight-lab sidebar'),
      describedBy: { args: { type: 'object', properties: {} } },
      icon: nsightLabIcon,
      execute: () => {
        app.shell.activateById(sidebar.id);
      }
    });
    // Inline widgets link to their session here: mark the page so they show the link,
    // and open the sidebar on that session when one is clicked.
    document.body.dataset[SIDEBAR_MARKER] = 'true';
    document.addEventListener(OPEN_SESSION_EVENT, event => {
      const detail = (event as CustomEvent<{ session_id?: unknown }>).detail;
      const id = Number(detail?.session_id);
      if (Number.isInteger(id) && id > 0) {
        app.shell.activateById(sidebar.id);
        void model.select(id);
      }
    });

    if (palette) {
      palette.addItem({
        command: CommandIDs.openSidebar,
        category: trans.__('nsight-lab')
      });
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
