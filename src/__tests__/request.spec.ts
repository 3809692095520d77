/**
 * requestAPI: URL building, success, and how failures are mapped to errors.
 */

import { ServerConnection } from '@jupyterlab/services';

import {
  NsightLabResponseError,
  requestAPI,
  toResponseError
} from '../request';
import { SERVER_EXTENSION_MISSING_MSG } from '../tokens';
import { IStatusResponse } from '../types';

function fakeResponse(status: number, body: string, statusText = ''): Response {
  return {
    ok: status >= 200 && status < 300,
    status,
    statusText,
    text: () => Promise.resolve(body)
  } as unknown as Response;
}

const settings = ServerConnection.makeSettings({
  baseUrl: 'http://localhost:8888/base/'
});

describe('requestAPI', () => {
  let makeRequest: jest.SpyInstance;

  beforeEach(() => {
    makeRequest = jest.spyOn(ServerConnection, 'makeRequest');
  });

  afterEach(() => {
    makeRequest.mockRestore();
  });

  it('requests below /nsight-lab/api/ and returns the parsed body', async () => {
    const status: IStatusResponse = {
      version: '0.1.0',
      store_path: '/home/u/.local/share/nsight-lab/store.sqlite',
      store_exists: false,
      schema_version: 1
    };
    makeRequest.mockResolvedValue(fakeResponse(200, JSON.stringify(status)));

    const answer = await requestAPI<IStatusResponse>('status', settings);

    expect(answer).toEqual(status);
    expect(makeRequest).toHaveBeenCalledTimes(1);
    expect(makeRequest.mock.calls[0][0]).toBe(
      'http://localhost:8888/base/nsight-lab/api/status'
    );
  });

  it('says the server extension is missing on a bare 404', async () => {
    makeRequest.mockResolvedValue(
      fakeResponse(404, '<html>404 : Not Found</html>', 'Not Found')
    );

    const failure = requestAPI('status', settings);

    await expect(failure).rejects.toBeInstanceOf(NsightLabResponseError);
    await expect(failure).rejects.toMatchObject({
      status: 404,
      error: null,
      message: SERVER_EXTENSION_MISSING_MSG
    });
  });

  it("keeps the handler's message and error class on a JSON error", async () => {
    makeRequest.mockResolvedValue(
      fakeResponse(
        400,
        JSON.stringify({
          message: "unknown backend 'cuda'; expected one of 'cpu', 'events'",
          error: 'OptionError'
        })
      )
    );

    await expect(requestAPI('sessions', settings)).rejects.toMatchObject({
      status: 400,
      error: 'OptionError',
      message: "unknown backend 'cuda'; expected one of 'cpu', 'events'"
    });
  });

  it('turns a transport failure into a NetworkError', async () => {
    makeRequest.mockRejectedValue(new TypeError('Failed to fetch'));

    await expect(requestAPI('status', settings)).rejects.toBeInstanceOf(
      ServerConnection.NetworkError
    );
  });
});

describe('toResponseError', () => {
  it('reports a 404 from one of our handlers as that handler said', () => {
    const error = toResponseError(404, 'Not Found', {
      message: "no session with id 'abc'",
      error: 'KeyError'
    });

    expect(error.message).toBe("no session with id 'abc'");
    expect(error.error).toBe('KeyError');
  });

  it('falls back to the status text for other failures', () => {
    const error = toResponseError(502, 'Bad Gateway', null);

    expect(error.status).toBe(502);
    expect(error.message).toBe('nsight-lab server answered 502: Bad Gateway');
  });
});
