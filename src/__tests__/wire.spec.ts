/**
 * The JSON contract: `tests/fixtures/wire.json` is produced by the Python side
 * (`tests/fixtures/make_wire.py`, checked by `tests/test_wire.py`) and read here.
 * Each payload must have exactly the keys of its TypeScript interface, with values
 * of the declared kinds, and the renderers must show what Python computed (the
 * progress line, the summary rows, the chart order) without computing anything.
 * A change of the wire on either side fails here until both sides agree.
 */
import { servedOrder } from '../charts/grid';
import { IChartHandle, IFigure } from '../charts/mount';
import { renderComparison, renderVerdicts } from '../components/CompareView';
import { renderSessionRow } from '../components/SessionList';
import { verdictsNode } from '../mime/renderer';
import { liveChartOrder, progressLine } from '../components/LiveView';
import { runTable } from '../components/RunTable';
import {
  FINDING_CONFIDENCES,
  FINDING_FAMILIES,
  IBaselineVerdict,
  ICompareResponse,
  ICompareRow,
  ICompareScope,
  IFinding,
  IProgress,
  IRunRecord,
  ISessionInfo,
  ISessionResponse,
  ISessionSummary,
  ISessionVerdict,
  ISessionsResponse,
  ITelemetry,
  IVerdictTable,
  IViewDelta
} from '../types';
import { ISessionBundle } from '../mime/types';
import widget from '../widget/index';
import type { IWidgetModel, IWidgetTraits } from '../widget/types';

jest.mock('../charts/mount', () => ({
  mountChart: jest.fn((el: HTMLElement, figure: IFigure): IChartHandle => ({
    element: el,
    figure,
    isDisposed: false,
    update: jest.fn(),
    append: jest.fn(),
    dispose: jest.fn()
  }))
}));

/** The directory of this spec (jest's CommonJS wrapper defines it). */
declare const __dirname: string;

/** Node's `fs`, as much of it as is used (no @types/node in this build). */
interface IFs {
  readFileSync(path: string, encoding: 'utf-8'): string;
}

const WIRE = JSON.parse(
  jest
    .requireActual<IFs>('fs')
    .readFileSync(`${__dirname}/../../tests/fixtures/wire.json`, 'utf-8')
) as Record<string, unknown>;

/** What a value may be on the wire. */
type Kind = 'string' | 'number' | 'boolean' | 'object' | 'array' | 'null';

/** Every key of `T`, with the kinds its value may have: the interface, at run time. */
type Shape<T> = { [K in keyof Required<T>]: readonly Kind[] };

function kindOf(value: unknown): Kind {
  if (value === null) {
    return 'null';
  }
  if (Array.isArray(value)) {
    return 'array';
  }
  return typeof value as Kind;
}

/** Where `value` differs from `shape`: missing or extra keys, wrong kinds. */
function mismatches<T>(
  value: unknown,
  shape: Shape<T>,
  optional: readonly (keyof T)[] = []
): string[] {
  const object = value as Record<string, unknown>;
  const expected = Object.keys(shape);
  const out: string[] = [];
  for (const key of Object.keys(object)) {
    if (!expected.includes(key)) {
      out.push(`extra key ${key}`);
    }
  }
  for (const key of expected) {
    if (!(key in object)) {
      if (!optional.includes(key as keyof T)) {
        out.push(`missing key ${key}`);
      }
      continue;
    }
    const kinds = shape[key as keyof T];
    const kind = kindOf(object[key]);
    if (!kinds.includes(kind)) {
      out.push(`${key}: ${kind}, not ${kinds.join('|')}`);
    }
  }
  return out;
}

const S = ['string'] as const;
const N = ['number'] as const;
const B = ['boolean'] as const;
const O = ['object'] as const;
const A = ['array'] as const;
const S_NULL = ['string', 'null'] as const;
const N_NULL = ['number', 'null'] as const;

const SESSION_INFO: Shape<ISessionInfo> = {
  id: N,
  status: S,
  backend: S,
  created_at: S,
  name: S_NULL,
  notebook: S_NULL,
  device: S_NULL,
  host: S_NULL,
  user: S_NULL,
  pid: N_NULL,
  backend_reason: S,
  options: O,
  configs: A,
  config_count: N,
  runs_per_config: N,
  runs_planned_total: N,
  cell_source: S,
  notes: A,
  error: S_NULL,
  finished_at: S_NULL,
  uuid: S,
  schema_version: N
};
const SESSION_SUMMARY: Shape<ISessionSummary> = {
  ...SESSION_INFO,
  run_count: N,
  baseline_verdict: ['object', 'null'],
  has_report: B,
  progress: O,
  runs_done: N,
  regions: A
};
const BASELINE_VERDICT: Shape<IBaselineVerdict> = {
  baseline: S,
  baseline_session_id: N_NULL,
  verdict: S_NULL,
  threshold: N,
  computed_at: S
};
const SESSION_VERDICT: Shape<ISessionVerdict> = {
  verdict: S_NULL,
  slower: N,
  faster: N,
  unchanged: N,
  inconclusive: N,
  folded: N,
  flagged: N,
  threshold: N,
  note: S
};
const VERDICT_TABLE: Shape<IVerdictTable> = {
  a: N,
  b: N,
  baseline: S_NULL,
  threshold: N,
  method: S,
  confidence: N,
  verdict: O,
  rows: A,
  scope: O,
  tolerances: O,
  legend: S
};
const PROGRESS: Shape<IProgress> = {
  status: S,
  configs_total: N,
  config_index: N,
  runs_per_config: N,
  runs_planned_total: N,
  runs_done_in_config: N,
  runs_done_total: N,
  elapsed_s: N_NULL,
  eta_s: N_NULL,
  fraction: N,
  text: S
};
const RUN: Shape<IRunRecord> = {
  id: N,
  schema_version: N,
  session_id: N,
  config_index: N,
  config: O,
  run_index: N,
  annotation: S,
  duration_ns: N,
  backend: S,
  kernels: A,
  metrics: O,
  telemetry: O,
  thermal_wait_s: N,
  finished_at: S
};
const TELEMETRY: Shape<ITelemetry> = {
  sm_clock_mhz: N_NULL,
  mem_clock_mhz: N_NULL,
  temperature_c: N_NULL,
  power_w: N_NULL,
  clock_event_reasons: A,
  throttled: B
};
const SESSION_RESPONSE: Shape<ISessionResponse> = {
  schema_version: N,
  session: O,
  runs: A,
  last_run_id: N,
  next_after_id: N,
  has_more: B,
  figures: O,
  chart_order: A,
  summary: A,
  counters: O,
  checks: A,
  findings: A,
  kernels: A,
  verdicts: ['object', 'null'],
  view_version: S,
  delta: O
};
/** A refresh since a version (issue 32): the page and the delta, no view. */
const DELTA_RESPONSE: Shape<
  Pick<ISessionResponse, 'view_version' | 'delta' | 'runs' | 'session'>
> &
  Record<string, readonly Kind[]> = {
  schema_version: N,
  session: O,
  runs: A,
  last_run_id: N,
  next_after_id: N,
  has_more: B,
  view_version: S,
  delta: O
};
const VIEW_DELTA: Shape<IViewDelta> = { charts: O, summary: O, tables: O };
const SESSIONS_RESPONSE: Shape<ISessionsResponse> = {
  schema_version: N,
  total: N,
  sessions: A
};
const COMPARE_RESPONSE: Shape<ICompareResponse> = {
  schema_version: N,
  a: O,
  b: O,
  baseline: S_NULL,
  threshold: N,
  method: S,
  confidence: N,
  verdict: O,
  rows: A,
  scope: O,
  tolerances: O,
  legend: S
};
const COMPARE_SCOPE: Shape<ICompareScope> = {
  regions: A,
  regions_only_a: A,
  regions_only_b: A,
  configs: A,
  configs_only_a: A,
  configs_only_b: A,
  note: S,
  reason: S_NULL
};
const COMPARE_ROW: Shape<ICompareRow> = {
  annotation: S,
  metric: S,
  unit: S,
  config: O,
  config_index_a: N,
  config_index_b: N,
  median_a: N_NULL,
  median_b: N_NULL,
  mean_a: N_NULL,
  mean_b: N_NULL,
  std_a: N_NULL,
  std_b: N_NULL,
  ratio: N_NULL,
  ci_low: N_NULL,
  ci_high: N_NULL,
  n_a: N,
  n_b: N,
  significant: B,
  verdict: S_NULL,
  threshold: N,
  sm_clock_mhz_a: N_NULL,
  sm_clock_mhz_b: N_NULL,
  clock_differs: B,
  throttled_a: N,
  throttled_b: N,
  host_probe_ns_a: N_NULL,
  host_probe_ns_b: N_NULL,
  host_differs: B,
  flagged: B,
  note: S,
  label: S,
  timed: B,
  cycle_ratio: N_NULL,
  measured: S_NULL,
  folded: B,
  cells: O
};
const WIDGET: Shape<IWidgetTraits> = {
  session_id: N,
  status: S,
  progress: O,
  message: S,
  figures: O,
  chart_order: A,
  figures_seq: N,
  append: O,
  summary: A,
  sidebar_link: S,
  findings: A,
  headline: S,
  checks: A
};
const BUNDLE: Shape<ISessionBundle> = {
  version: N,
  session_id: N,
  status: S,
  progress: O,
  message: S,
  chart_order: A,
  figures: O,
  summary: A,
  summary_columns: A,
  sidebar_link: S,
  verdicts: ['object', 'null'],
  findings: A,
  headline: S,
  checks: A
};
/** One finding (nsight_lab/analysis/findings/session.py `findings_json`). */
const FINDING: Shape<IFinding> = {
  region: S,
  regions: A,
  config: S,
  config_index: N_NULL,
  family: S,
  kind: S,
  statement: S,
  evidence: A,
  action: S,
  gain: N_NULL,
  gain_basis: S,
  confidence: S,
  basis: S,
  answered_by: S,
  time_ns: N,
  rank: N,
  top: B
};

const list = WIRE.sessions_list as ISessionsResponse;
const detail = WIRE.session_detail as ISessionResponse;
const live = WIRE.live_session as ISessionResponse;
const compare = WIRE.compare as ICompareResponse;
const regressed = WIRE.regressed_session as ISessionResponse;
const running = WIRE.widget_running as IWidgetTraits;
const final = WIRE.widget_final as IWidgetTraits;
const bundle = WIRE.final_bundle as ISessionBundle;

describe('wire.json matches the TypeScript interfaces', () => {
  it('the session list and its items', () => {
    expect(mismatches(list, SESSIONS_RESPONSE)).toEqual([]);
    expect(list.sessions.length).toBeGreaterThan(0);
    for (const item of list.sessions) {
      // List items carry no progress: it is per session (GET sessions/{id}).
      expect(mismatches(item, SESSION_SUMMARY, ['progress'])).toEqual([]);
      // One meaning of "runs": executions of the cell, not region records.
      expect(item.runs_done).toBeLessThanOrEqual(item.runs_planned_total);
      expect(item.progress).toBeUndefined();
    }
  });

  it('a session with its runs, progress, figures, chart order and summary', () => {
    for (const response of [detail, live]) {
      expect(mismatches(response, SESSION_RESPONSE, ['delta'])).toEqual([]);
      // runs_done and regions are the list's; a session has its progress.
      expect(
        mismatches(response.session, SESSION_SUMMARY, ['runs_done', 'regions'])
      ).toEqual([]);
      expect(mismatches(response.session.progress, PROGRESS)).toEqual([]);
      for (const run of response.runs) {
        expect(mismatches(run, RUN)).toEqual([]);
        expect(mismatches(run.telemetry, TELEMETRY)).toEqual([]);
      }
    }
  });

  it('a refresh since a version: the page and what changed in the view', () => {
    const streamed = WIRE.live_deltas as {
      first: ISessionResponse;
      answers: ISessionResponse[];
    };
    expect(mismatches(streamed.first, SESSION_RESPONSE, ['delta'])).toEqual([]);
    for (const answer of streamed.answers) {
      expect(mismatches(answer, DELTA_RESPONSE)).toEqual([]);
      expect(
        mismatches(answer.delta, VIEW_DELTA, ['summary', 'tables'])
      ).toEqual([]);
    }
  });

  it('the events of the websocket', () => {
    const events = WIRE.events as Record<string, unknown>[];
    expect(events.map(e => e.type)).toEqual([
      'sessions-changed',
      'runs-changed'
    ]);
    expect(Object.keys(events[1]).sort()).toEqual(
      ['last_run_id', 'schema_version', 'session_id', 'type'].sort()
    );
  });

  it('a comparison', () => {
    expect(mismatches(compare, COMPARE_RESPONSE)).toEqual([]);
    expect(mismatches(compare.scope, COMPARE_SCOPE)).toEqual([]);
    expect(compare.rows.length).toBeGreaterThan(0);
    for (const row of compare.rows) {
      expect(mismatches(row, COMPARE_ROW)).toEqual([]);
    }
  });

  it('verdicts against a baseline: kept, served with the session and the bundle', () => {
    expect(mismatches(compare.verdict, SESSION_VERDICT)).toEqual([]);
    expect(mismatches(regressed, SESSION_RESPONSE, ['delta'])).toEqual([]);
    const kept = regressed.session.baseline_verdict!;
    expect(mismatches(kept, BASELINE_VERDICT)).toEqual([]);
    expect(kept.verdict).toBe('slower');
    const listed = list.sessions.filter(s => s.baseline_verdict !== null);
    expect(listed.map(s => s.id)).toEqual([regressed.session.id]);
    for (const table of [regressed.verdicts!, bundle.verdicts!]) {
      expect(mismatches(table, VERDICT_TABLE)).toEqual([]);
      expect(mismatches(table.verdict, SESSION_VERDICT)).toEqual([]);
      expect(mismatches(table.scope, COMPARE_SCOPE)).toEqual([]);
      expect(table.rows.length).toBeGreaterThan(0);
      for (const row of table.rows) {
        expect(mismatches(row, COMPARE_ROW)).toEqual([]);
      }
    }
    expect(regressed.verdicts!.verdict.verdict).toBe('slower');
    expect(detail.verdicts).toBeNull(); // profiled without --baseline
  });

  it('the widget traits, running and final', () => {
    for (const traits of [running, final]) {
      // The live widget has no findings: a cell's final output carries them.
      expect(
        mismatches(traits, WIDGET, ['findings', 'headline', 'checks'])
      ).toEqual([]);
      expect(mismatches(traits.progress, PROGRESS)).toEqual([]);
    }
  });

  it("a cell's final output (nsight-lab's session JSON)", () => {
    expect(mismatches(bundle, BUNDLE)).toEqual([]);
    expect(mismatches(bundle.progress, PROGRESS)).toEqual([]);
    // The widget's final state, drawn without a kernel: the same summary, order
    // and charts.
    expect(bundle.summary).toEqual(final.summary);
    expect(bundle.chart_order).toEqual(final.chart_order);
    expect(Object.keys(bundle.figures)).toEqual(Object.keys(final.figures));
    expect(bundle.progress).toEqual(final.progress);
    expect(bundle.summary_columns).toEqual(Object.keys(final.summary[0]));
  });
});

describe('the findings, as the session view and the final output get them', () => {
  const served: [string, IFinding[]][] = [
    ['session_detail', detail.findings!],
    ['live_session', live.findings!],
    ['regressed_session', regressed.findings!],
    ['final_bundle', bundle.findings!]
  ];

  it.each(served)(
    '%s: every finding has the keys and kinds of IFinding',
    (_, findings) => {
      expect(findings.length).toBeGreaterThan(0);
      for (const finding of findings) {
        expect(mismatches(finding, FINDING)).toEqual([]);
        expect(FINDING_FAMILIES).toContain(finding.family);
        expect(FINDING_CONFIDENCES).toContain(finding.confidence);
        for (const line of [...finding.regions, ...finding.evidence]) {
          expect(typeof line).toBe('string');
        }
      }
      // Ranked from 1, in order; at most the three that matter most marked top.
      expect(findings.map(f => f.rank)).toEqual(findings.map((_f, i) => i + 1));
      const top = findings.filter(f => f.top).length;
      expect(top).toBeGreaterThan(0);
      expect(top).toBeLessThanOrEqual(3);
    }
  );
});

describe('the renderers show what Python computed', () => {
  it('the live view shows the served progress line, totals as totals', () => {
    const session = live.session;
    const newest = live.runs[live.runs.length - 1];
    const line = progressLine(session, newest);
    expect(line.startsWith(`${session.progress!.text} · last `)).toBe(true);
    expect(session.progress!.text).toBe(
      `${session.progress!.runs_done_total} / ${session.runs_planned_total} runs` +
        ` · config 2 / 3 · run 1 / ${session.runs_per_config}`
    );
    expect(liveChartOrder(live.chart_order!, {}, 'duration')).toEqual([
      'duration',
      'clocks'
    ]);
    expect(liveChartOrder(live.chart_order!, {}, 'clocks')).toEqual([
      'clocks',
      'duration'
    ]);
  });

  it('the run table renders the served summary rows over every run', () => {
    const table = runTable(detail.summary!);
    const head = Array.from(table.tHead!.rows[0].cells).map(c => c.textContent);
    // Every served column, in the served order: the answer first.
    expect(head).toEqual(Object.keys(detail.summary![0]));
    expect(head[0]).toBe('Region');
    expect(table.tBodies[0].rows).toHaveLength(detail.summary!.length);
    const duration = head.findIndex(name => name?.startsWith('Duration'));
    // The server's text, shown as sent.
    expect(table.tBodies[0].rows[0].cells[duration].textContent).toBe(
      detail.summary![0][head[duration]!]
    );
    expect(table.tBodies[0].rows[0].cells[duration].textContent).toMatch(
      / (ns|µs|ms|s)$/
    );
    const runs = detail.summary!.reduce(
      (sum, row) => sum + Number(row.Runs),
      0
    );
    expect(runs).toBeGreaterThan(detail.runs.length); // not the page's runs
  });

  it('the sidebar and the widget get the same summary and chart order', () => {
    expect(final.summary).toEqual(detail.summary);
    expect(final.chart_order).toEqual(detail.chart_order);
    // One chart grid lays out both, in `servedOrder`: the served figures, in order.
    expect(
      servedOrder(detail.figures!, detail.chart_order).filter(
        name => name in detail.figures!
      )
    ).toEqual(Object.keys(detail.figures!));
  });

  it('the widget renders the served progress and charts in the served order', () => {
    for (const traits of [running, final]) {
      const model: IWidgetModel = {
        get: <K extends keyof IWidgetTraits>(key: K) => traits[key],
        on: () => undefined,
        off: () => undefined
      };
      const el = document.createElement('div');
      const cleanup = widget.render({ model, el });
      const progress = traits.progress as IProgress;
      expect(
        el.querySelector('.jp-nsightLab-Widget-progressText')!.textContent
      ).toBe(progress.text);
      const boxes = Array.from(
        el.querySelectorAll<HTMLElement>('.jp-nsightLab-Widget-chart')
      ).map(box => box.dataset.chart);
      expect(boxes).toEqual(
        traits.chart_order.filter(name => name in traits.figures)
      );
      cleanup();
    }
  });

  it('the history badges exactly the sessions slower than their baseline', () => {
    const badged: number[] = [];
    list.sessions.forEach((item, index) => {
      const row = document.createElement('div');
      renderSessionRow(row, item, index);
      const badge = row.querySelector('.jp-nsightLab-SessionList-regression');
      if (badge) {
        badged.push(item.id);
        expect(badge.textContent).toBe('slower');
        expect(badge.getAttribute('title')).toBe(
          `slower than baseline ${item.baseline_verdict!.baseline} (session #${item.baseline_verdict!.baseline_session_id}) beyond noise`
        );
      }
    });
    expect(badged).toEqual(
      list.sessions
        .filter(s => s.baseline_verdict?.verdict === 'slower')
        .map(s => s.id)
    );
    expect(badged).toHaveLength(1);
  });

  it('the verdict table renders every served row, verdict and note', () => {
    const table = regressed.verdicts!;
    const node = document.createElement('div');
    renderVerdicts(node, table);
    const overall = node.querySelector<HTMLElement>(
      '.jp-nsightLab-CompareView-overall'
    )!;
    expect(overall.dataset.verdict).toBe('slower');
    expect(overall.textContent).toBe(`slower: ${table.verdict.note}`);
    // The rows the server did not fold, each with its served cells.
    const shown = table.rows.filter(row => !row.folded);
    const rows = Array.from(
      node.querySelectorAll<HTMLTableRowElement>(
        '.jp-nsightLab-CompareView-table tbody tr'
      )
    );
    expect(rows).toHaveLength(shown.length);
    rows.forEach((tr, i) => {
      const served = shown[i];
      expect(tr.dataset.verdict).toBe(served.verdict ?? '');
      expect(tr.cells[0].textContent).toBe(served.annotation); // markup as text
      const verdict = tr.querySelector('[data-column="verdict"]');
      expect(verdict?.textContent).toBe(served.cells!.verdict);
      expect(tr.classList.contains('jp-mod-flagged')).toBe(served.flagged);
    });
    expect(node.querySelector('b')).toBeNull();
    // The cell's final output draws the same table under its heading.
    const output = verdictsNode(bundle.verdicts!);
    expect(
      output.querySelector('.jp-nsightLab-SessionOutput-verdictsHeading')!
        .textContent
    ).toBe(`Against baseline main (session ${bundle.verdicts!.a})`);
    expect(output.querySelectorAll('tbody tr')).toHaveLength(
      bundle.verdicts!.rows.length
    ); // shown and folded
  });

  it('the comparison renders every row the core computed', () => {
    const node = document.createElement('div');
    renderComparison(node, compare);
    // Every row: those shown, and those folded behind the toggle.
    expect(node.querySelectorAll('tbody tr')).toHaveLength(compare.rows.length);
    // Each row's verdict and medians with their unit, as served.
    const first = node.querySelector('tbody tr') as HTMLTableRowElement;
    expect(first.dataset.verdict).toBe(compare.rows[0].verdict ?? '');
    expect(compare.rows[0].unit).toBe('ns');
    const median = first.querySelector('[data-column="median_a"]');
    expect(median?.textContent).toBe(compare.rows[0].cells!.median_a);
    expect(median?.textContent).toMatch(/ (ns|µs|ms|s)$/);
    // The legend as served, not written here.
    expect(
      node.querySelector('.jp-nsightLab-CompareView-legend')?.textContent
    ).toBe(compare.legend);
  });
});
