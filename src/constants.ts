/**
 * Identifiers and fixed words of the nsight-lab frontend: plugin, settings and
 * widget ids, the server's URL namespace.
 *
 * A leaf: it imports nothing, so the transport (request.ts, events.ts) and the
 * model interface (tokens.ts) can all read it without importing each other.
 */

/** The id of the main nsight-lab plugin. */
export const PLUGIN_ID = 'nsight-lab:plugin';

/** The settings of the sidebar live under this id (schema/sidebar.json). */
export const SIDEBAR_SETTINGS_ID = 'nsight-lab:sidebar';

/** The DOM id of the sidebar widget, also its layout-restorer key. */
export const SIDEBAR_ID = 'nsight-lab-sidebar';

/** The URL namespace of the server extension, below the server's base URL. */
export const API_NAMESPACE = 'nsight-lab/api';

/** The message shown when the server extension does not answer. */
export const SERVER_EXTENSION_MISSING_MSG =
  'nsight-lab server extension is not enabled; pip install nsight-lab and restart JupyterLab';

/**
 * Command ids, `nsight-lab:<verb>-<noun>`.
 */
export namespace CommandIDs {
  export const openSidebar = 'nsight-lab:open-sidebar';
  /** Open (or activate) a session's panel in the main area; args `{ id }`. */
  export const openSession = 'nsight-lab:open-session';
  /** Open (or activate) the comparison panel of b over a; args `{ a, b }`. */
  export const compareSessions = 'nsight-lab:compare-sessions';
}
