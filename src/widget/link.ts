/**
 * The contract between the inline widget and the lab extension's sidebar: the
 * sidebar marks the page, the widget then shows a link that dispatches the event.
 */

/** Event dispatched (bubbling) when the user asks to open the session's sidebar. */
export const OPEN_SESSION_EVENT = 'nsight-lab:open-session';

/** `document.body` dataset key the lab extension sets when its sidebar is present. */
export const SIDEBAR_MARKER = 'nsightLabSidebar';
