/**
 * Canned server payloads for the frontend unit tests (keys as the server sends them).
 */

import {
  ICompareResponse,
  IRunRecord,
  ISessionResponse,
  ISessionSummary,
  ISessionsResponse
} from '../types';

export const XSS = '<img src=x onerror=alert(1)>';

export function session(
  id: number,
  overrides: Partial<ISessionSummary> = {}
): ISessionSummary {
  return {
    id,
    status: 'completed',
    backend: 'cpu',
    created_at: `2025-06-01T12:00:${`${id % 60}`.padStart(2, '0')}.000000+00:00`,
    name: null,
    notebook: `/home/user/work/nb${id}.ipynb`,
    device: 'cpu',
    host: 'host',
    user: null,
    pid: 1,
    backend_reason: 'requested',
    options: {},
    configs: [{}],
    config_count: 1,
    runs_per_config: 10,
    runs_planned_total: 10,
    cell_source: 'pass',
    notes: [],
    error: null,
    finished_at: null,
    uuid: `00000000-0000-4000-8000-${`${id}`.padStart(12, '0')}`,
    schema_version: 1,
    run_count: 10,
    baseline_verdict: null,
    has_report: false,
    ...overrides
  };
}

export function run(
  id: number,
  sessionId: number,
  overrides: Partial<IRunRecord> = {}
): IRunRecord {
  return {
    id,
    schema_version: 1,
    session_id: sessionId,
    config_index: 0,
    config: {},
    run_index: id - 1,
    annotation: 'cell',
    duration_ns: 1000 * id,
    backend: 'cpu',
    kernels: [],
    metrics: {},
    telemetry: {
      sm_clock_mhz: null,
      mem_clock_mhz: null,
      temperature_c: null,
      power_w: null,
      clock_event_reasons: [],
      throttled: false
    },
    thermal_wait_s: 0,
    finished_at: '2025-06-01T12:00:00.000000+00:00',
    ...overrides
  };
}

/** A page of sessions `[offset, offset + limit)` out of `total`, newest first. */
export function sessionsPage(
  total: number,
  offset: number,
  limit: number
): ISessionsResponse {
  const sessions: ISessionSummary[] = [];
  for (let i = offset; i < Math.min(total, offset + limit); i++) {
    sessions.push(session(total - i));
  }
  return { schema_version: 1, total, sessions };
}

export function sessionResponse(
  s: ISessionSummary,
  runs: IRunRecord[],
  page: { after?: number; hasMore?: boolean } = {}
): ISessionResponse {
  const last = runs.reduce((max, r) => Math.max(max, r.id), page.after ?? 0);
  return {
    schema_version: 1,
    session: s,
    runs,
    last_run_id: last,
    next_after_id: last,
    has_more: page.hasMore ?? false,
    figures: {
      duration: {
        data: [{ type: 'scatter', y: runs.map(r => r.duration_ns) }],
        layout: {}
      },
      clocks: null,
      roofline: null,
      traffic: { data: [], layout: {} }
    },
    chart_order: ['duration', 'clocks', 'roofline', 'traffic'],
    summary: [
      {
        Annotation: 'cell',
        Metric: 'gpu__time_duration.sum',
        AvgValue: 1500,
        NumRuns: runs.length
      }
    ]
  };
}

export function compareResponse(a: number, b: number): ICompareResponse {
  return {
    schema_version: 1,
    a: session(a),
    b: session(b),
    baseline: null,
    threshold: 0,
    method: 'median-ratio-price-bonett',
    confidence: 0.95,
    verdict: {
      verdict: 'slower',
      slower: 1,
      faster: 0,
      unchanged: 1,
      flagged: 0,
      threshold: 0,
      note: '1 slower, 1 no change'
    },
    rows: [
      {
        annotation: XSS,
        metric: 'gpu__time_duration.sum',
        unit: 'ns',
        config: { n: 512 },
        config_index_a: 0,
        config_index_b: 0,
        std_a: 1,
        std_b: 1,
        median_a: 100,
        median_b: 150,
        mean_a: 100,
        mean_b: 150,
        ratio: 1.5,
        ci_low: 1.4,
        ci_high: 1.6,
        n_a: 10,
        n_b: 10,
        significant: true,
        verdict: 'slower',
        threshold: 0,
        sm_clock_mhz_a: null,
        sm_clock_mhz_b: null,
        clock_differs: false,
        throttled_a: 0,
        throttled_b: 0,
        host_probe_ns_a: null,
        host_probe_ns_b: null,
        host_differs: false,
        flagged: false,
        note: ''
      },
      {
        annotation: 'b',
        metric: 'gpu__time_duration.sum',
        unit: 'ns',
        config: { n: 512 },
        config_index_a: 0,
        config_index_b: 0,
        std_a: 1,
        std_b: 1,
        median_a: 100,
        median_b: 101,
        mean_a: 100,
        mean_b: 101,
        ratio: 1.01,
        ci_low: 0.95,
        ci_high: 1.07,
        n_a: 10,
        n_b: 10,
        significant: false,
        verdict: 'no change',
        threshold: 0,
        sm_clock_mhz_a: null,
        sm_clock_mhz_b: null,
        clock_differs: false,
        throttled_a: 0,
        throttled_b: 0,
        host_probe_ns_a: null,
        host_probe_ns_b: null,
        host_differs: false,
        flagged: false,
        note: ''
      }
    ],
    scope: {
      regions: [XSS, 'b'],
      regions_only_a: [],
      regions_only_b: [],
      configs: [{ n: 512 }],
      configs_only_a: [],
      configs_only_b: [],
      note: '',
      reason: null
    }
  };
}
