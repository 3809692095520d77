/**
 * Types of the transport layer that the model interface names too: how the events
 * websocket stands (events.ts) and a downloaded file (request.ts).
 *
 * A leaf: it imports nothing, so tokens.ts can name these types without importing
 * the modules that implement them.
 */

/**
 * Where the events connection stands: `connecting` before the first open, `open`,
 * then `reconnecting` after a drop until it is open again; `closed` once disposed.
 */
export type ConnectionState = 'connecting' | 'open' | 'reconnecting' | 'closed';

/** A file the server answered, ready to hand to the browser. */
export interface IDownload {
  /** The file name from `Content-Disposition`, or the fallback. */
  filename: string;
  blob: Blob;
}
