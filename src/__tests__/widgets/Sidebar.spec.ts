/**
 * The sidebar's status view and connection line: what the user reads for each state.
 */

import { ServerConnection } from '@jupyterlab/services';

import { renderStatus } from '../../components/StatusView';
import { NsightLabResponseError, describeError } from '../../request';
import { SERVER_EXTENSION_MISSING_MSG } from '../../tokens';
import { ROW_HEIGHT } from '../../components/SessionList';
import {
  HISTORY_ROWS,
  connectionText,
  fitSections
} from '../../widgets/Sidebar';

// plotly.js needs a real browser; the chart module is tested in charts/.
jest.mock('../../charts/mount', () => ({ mountChart: jest.fn() }));

describe('renderStatus', () => {
  it('lists the version, the store location and its state', () => {
    const node = document.createElement('div');

    renderStatus(node, {
      kind: 'ready',
      status: {
        version: '0.1.0',
        store_path: '/tmp/<b>store</b>.sqlite',
        store_exists: true,
        schema_version: 1
      }
    });

    const values = Array.from(node.querySelectorAll('dd')).map(
      dd => dd.textContent
    );
    expect(values).toEqual([
      '0.1.0',
      '/tmp/<b>store</b>.sqlite',
      'present',
      'v1'
    ]);
    // Values are text, never markup.
    expect(node.querySelector('b')).toBeNull();
  });

  it('says when the store is a PostgreSQL team store', () => {
    const node = document.createElement('div');

    renderStatus(node, {
      kind: 'ready',
      status: {
        version: '0.1.0',
        store_engine: 'postgresql',
        store_path: 'postgresql://ada:***@db.example:5432/profiles',
        store_exists: true,
        schema_version: 4
      }
    });

    const values = Array.from(node.querySelectorAll('dd')).map(
      dd => dd.textContent
    );
    expect(values[1]).toBe(
      'PostgreSQL (team store): postgresql://ada:***@db.example:5432/profiles'
    );
  });

  it('shows an error in words', () => {
    const node = document.createElement('div');

    renderStatus(node, {
      kind: 'error',
      message: SERVER_EXTENSION_MISSING_MSG
    });

    const error = node.querySelector('.jp-nsightLab-Status-error');
    expect(error?.textContent).toBe(SERVER_EXTENSION_MISSING_MSG);
  });
});

describe('describeError', () => {
  it('passes a response error message through', () => {
    const error = new NsightLabResponseError(
      404,
      SERVER_EXTENSION_MISSING_MSG,
      null
    );

    expect(describeError(error)).toBe(SERVER_EXTENSION_MISSING_MSG);
  });

  it('names an unreachable server', () => {
    const error = new ServerConnection.NetworkError(
      new TypeError('Failed to fetch')
    );

    expect(describeError(error)).toBe(
      'cannot reach the Jupyter server: Failed to fetch'
    );
  });
});

describe('connectionText', () => {
  it('says that a dropped websocket reconnects, and nothing once open', () => {
    expect(connectionText('reconnecting')).toContain('reconnecting…');
    expect(connectionText('open')).toBe('');
  });
});

describe('fitSections', () => {
  it('gives the history its filter bar, summary and rows; the live view the rest', () => {
    const [live, history, store] = fitSections(800, 30, 32);

    expect(history).toBe(Math.round(30 + 32 + HISTORY_ROWS * ROW_HEIGHT));
    expect(live + history).toBe(800);
    expect(store).toBe(0);
    // Five whole rows fit in the list below the filter bar and the summary.
    expect(Math.floor((history - 30 - 32) / ROW_HEIGHT)).toBeGreaterThanOrEqual(
      5
    );
  });

  it('counts a two-line summary even while it reads one line', () => {
    expect(fitSections(800, 30, 16)).toEqual(fitSections(800, 30, 32));
  });

  it('leaves the live view 40 % of a short sidebar', () => {
    const [live, history] = fitSections(300, 30, 32);

    expect(history).toBe(180);
    expect(live).toBe(120);
  });

  it('folds the live view away while nothing runs: the history takes the room', () => {
    expect(fitSections(800, 30, 32, false)).toEqual([0, 800, 0]);
  });

  it('gives an expanded store its lines', () => {
    const [live, history, store] = fitSections(800, 30, 32, false, 96);

    expect([live, history, store]).toEqual([0, 704, 96]);
    // Never more than 40 % of the room.
    expect(fitSections(200, 30, 32, false, 500)[2]).toBe(80);
  });
});
