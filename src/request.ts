/**
 * The one request helper: every REST call and download of the server extension goes
 * through `requestAPI`/`requestDownload`, which turn failures into errors that say
 * what to do.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { API_NAMESPACE, SERVER_EXTENSION_MISSING_MSG } from './constants';
import type { IDownload } from './transport';
import { IErrorBody } from './types';

export type { IDownload } from './transport';

/**
 * A non-2xx answer from the nsight-lab server extension.
 */
export class NsightLabResponseError extends Error {
  /**
   * @param status The HTTP status code.
   * @param message What failed, in words, ready to show to the user.
   * @param error The server's exception class name, or `null` when the answer did
   *   not come from an nsight-lab handler.
   */
  constructor(
    readonly status: number,
    message: string,
    readonly error: string | null
  ) {
    super(message);
    this.name = 'NsightLabResponseError';
  }
}

/**
 * Whether a parsed body is the `{message, error}` shape our handlers answer with.
 */
export function isErrorBody(body: unknown): body is IErrorBody {
  if (typeof body !== 'object' || body === null) {
    return false;
  }
  const record = body as Record<string, unknown>;
  return typeof record.message === 'string' && typeof record.error === 'string';
}

/**
 * Parse a response body as JSON, or keep it as text when it is not JSON.
 */
function parseBody(text: string): unknown {
  if (text.length === 0) {
    return null;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * Turn a non-2xx response into an {@link NsightLabResponseError}.
 *
 * A 404 that does not come from one of our handlers means that the server extension
 * is not loaded, which is said as such.
 */
export function toResponseError(
  status: number,
  statusText: string,
  body: unknown
): NsightLabResponseError {
  if (isErrorBody(body)) {
    return new NsightLabResponseError(status, body.message, body.error);
  }
  if (status === 404) {
    return new NsightLabResponseError(
      status,
      SERVER_EXTENSION_MISSING_MSG,
      null
    );
  }
  const detail =
    typeof body === 'string' && body.length > 0 && body.length <= 200
      ? body
      : statusText;
  return new NsightLabResponseError(
    status,
    `nsight-lab server answered ${status}${detail ? `: ${detail}` : ''}`,
    null
  );
}

/**
 * Call the nsight-lab server extension.
 *
 * @param endPoint The path below `/nsight-lab/api/`, e.g. `status`.
 * @param serverSettings The server settings to use for the request.
 * @param init Initial values for the request.
 * @returns The response body parsed as JSON, typed by the caller.
 * @throws {ServerConnection.NetworkError} When the server cannot be reached.
 * @throws {NsightLabResponseError} When the server answers with a non-2xx status.
 */
export async function requestAPI<T>(
  endPoint: string,
  serverSettings: ServerConnection.ISettings,
  init: RequestInit = {}
): Promise<T> {
  const requestUrl = URLExt.join(
    serverSettings.baseUrl,
    API_NAMESPACE,
    endPoint
  );

  let response: Response;
  try {
    response = await ServerConnection.makeRequest(
      requestUrl,
      init,
      serverSettings
    );
  } catch (error) {
    throw new ServerConnection.NetworkError(
      error instanceof TypeError ? error : new TypeError(String(error))
    );
  }

  const body = parseBody(await response.text());
  if (!response.ok) {
    throw toResponseError(response.status, response.statusText, body);
  }
  return body as T;
}

/**
 * Say in words why a request failed.
 */
export function describeError(error: unknown): string {
  if (error instanceof NsightLabResponseError) {
    return error.message;
  }
  if (error instanceof ServerConnection.NetworkError) {
    return `cannot reach the Jupyter server: ${error.message}`;
  }
  return `nsight-lab request failed: ${String(error)}`;
}

/**
 * Build `path?key=value&…` from the parameters that are set.
 *
 * Empty strings, `null` and `undefined` are left out; every value is URI-encoded.
 */
export function withQuery(
  path: string,
  params: Record<string, string | number | boolean | null | undefined>
): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === '') {
      continue;
    }
    const text = typeof value === 'boolean' ? (value ? '1' : '0') : `${value}`;
    parts.push(`${encodeURIComponent(key)}=${encodeURIComponent(text)}`);
  }
  return parts.length > 0 ? `${path}?${parts.join('&')}` : path;
}

/**
 * Read the file name from a `Content-Disposition` header.
 */
export function filenameFromDisposition(
  header: string | null,
  fallback: string
): string {
  if (!header) {
    return fallback;
  }
  const star = /filename\*\s*=\s*(?:UTF-8'')?([^;]+)/i.exec(header);
  if (star) {
    try {
      return decodeURIComponent(star[1].trim().replace(/^"|"$/g, ''));
    } catch {
      // fall through to the plain form
    }
  }
  const plain = /filename\s*=\s*"?([^";]+)"?/i.exec(header);
  return plain ? plain[1].trim() : fallback;
}

/**
 * Download a file from the nsight-lab server extension (export, report).
 *
 * The request goes through `ServerConnection`, so the token and XSRF handling are
 * the same as for every other call.
 *
 * @param endPoint The path below `/nsight-lab/api/`.
 * @param serverSettings The server settings to use for the request.
 * @param fallbackName The file name when the server sends none.
 * @throws {ServerConnection.NetworkError} When the server cannot be reached.
 * @throws {NsightLabResponseError} When the server answers with a non-2xx status.
 */
export async function requestDownload(
  endPoint: string,
  serverSettings: ServerConnection.ISettings,
  fallbackName: string
): Promise<IDownload> {
  const requestUrl = URLExt.join(
    serverSettings.baseUrl,
    API_NAMESPACE,
    endPoint
  );
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(
      requestUrl,
      {},
      serverSettings
    );
  } catch (error) {
    throw new ServerConnection.NetworkError(
      error instanceof TypeError ? error : new TypeError(String(error))
    );
  }
  if (!response.ok) {
    throw toResponseError(
      response.status,
      response.statusText,
      parseBody(await response.text())
    );
  }
  return {
    filename: filenameFromDisposition(
      response.headers.get('Content-Disposition'),
      fallbackName
    ),
    blob: await response.blob()
  };
}
