/**
 * The contract between the inline widget and the lab extension's sidebar: the
 * sidebar marks the page, the widget then shows a link that dispatches the event.
 */

/** Event dispatched (bubbling) when the user asks to open the session's sidebar. */
export const OPEN_SESSION_EVENT = 'nsight-lab:open-session';

/** `document.body` dataset key the lab extension sets when its sidebar is present. */
export const SIDEBAR_MARKER = 'nsightLabSidebar';

/** The parts of a session's link: `#nsight-lab/sessions/<id>[?uuid=<uuid>]`. */
export interface ISessionLink {
  /** The session's id in the store the output was made with. */
  id: number;
  /** Its identity in any store; `null` in outputs saved before it existed. */
  uuid: string | null;
}

const LINK =
  /^#nsight-lab\/sessions\/([0-9]+)(?:\?uuid=([0-9a-fA-F-]{1,64}))?$/;

/**
 * Read a session link (nsight_lab/views/bundle.py `session_link`); a link that is
 * absent or unreadable falls back to `sessionId` without a UUID.
 *
 * @returns The link's parts, or `null` when neither names a session.
 */
export function parseSessionLink(
  link: unknown,
  sessionId?: unknown
): ISessionLink | null {
  const match = typeof link === 'string' ? LINK.exec(link) : null;
  if (match) {
    const id = Number(match[1]);
    if (Number.isSafeInteger(id) && id > 0) {
      return { id, uuid: match[2] ? match[2].toLowerCase() : null };
    }
  }
  const id = Number(sessionId);
  return Number.isSafeInteger(id) && id > 0 ? { id, uuid: null } : null;
}

/** What this lab's store holds under an id: its UUID, or `null` for no session. */
export type SessionLookup = (id: number) => Promise<{ uuid?: string } | null>;

/** Open session `open`, or say `message` instead (one line: what and why). */
export type LinkDecision = { open: number } | { message: string };

/**
 * Decide what a click on a session link does: ids are numbers of one store, so
 * the session is opened only when this lab's store holds the link's UUID under
 * the link's id. A link without a UUID (an output saved before they existed) is
 * opened by its id, as before.
 *
 * @param link The clicked link's parts.
 * @param lookup Reads the session of an id in this lab's store.
 * @param where This lab's store, for the message (its path or URL).
 */
export async function checkSessionLink(
  link: ISessionLink,
  lookup: SessionLookup,
  where: string
): Promise<LinkDecision> {
  if (link.uuid === null) {
    return { open: link.id };
  }
  const stored = await lookup(link.id);
  if (stored === null) {
    return {
      message:
        `session ${link.id} of this output is not in this lab's store (${where}): ` +
        'the notebook was run against another store; open it from a lab on that store'
    };
  }
  if ((stored.uuid ?? '').toLowerCase() !== link.uuid) {
    return {
      message:
        `session ${link.id} of this lab's store (${where}) is another profile than ` +
        `this output's (UUID ${link.uuid}): the notebook was run against another store, ` +
        'so it is not opened'
    };
  }
  return { open: link.id };
}
