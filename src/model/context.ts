/**
 * What every part of the sidebar model is built with.
 */

import { ServerConnection } from '@jupyterlab/services';

import { ISidebarSettings } from '../types';

/** The server to ask and the settings now (they change while the sidebar runs). */
export interface IModelContext {
  serverSettings: ServerConnection.ISettings;
  settings: () => ISidebarSettings;
}
