/**
 * Wire types: keys exactly as the Python server sends them (snake_case).
 *
 * Records mirror `nsight_lab/contract/records.py`; responses mirror the REST handlers of
 * `nsight_lab/server/` below `/nsight-lab/api/`.
 */

import sidebarSchema from '../schema/sidebar.json';

/** The chart a session opens on (schema/sidebar.json `defaultChart`). */
export type ChartKind =
  'duration' | 'clocks' | 'roofline' | 'traffic' | 'counters';

/**
 * The chart kinds the sidebar knows (settings, titles). The order charts are
 * shown in is the server's (`chart_order`, nsight_lab/figures `CHART_ORDER`).
 */
export const CHART_KINDS: readonly ChartKind[] = [
  'duration',
  'clocks',
  'roofline',
  'traffic',
  'counters'
];

/** A JSON scalar: what a config value can be (records.py `JsonScalar`). */
export type JsonScalar = string | number | boolean | null;

/** records.py `SessionStatus`. */
export type SessionStatus = 'running' | 'completed' | 'failed' | 'interrupted';

/**
 * `GET /nsight-lab/api/status` (nsight_lab/server/handlers.py `StatusHandler`).
 */
export interface IStatusResponse {
  /** The installed nsight_lab version. */
  version: string;
  /** Which store the server reads: the SQLite file, or a PostgreSQL team store. */
  store_engine?: 'sqlite' | 'postgresql';
  /**
   * Absolute path of the SQLite run store on the server's machine, or the
   * PostgreSQL URL with its password replaced by `***`.
   */
  store_path: string;
  /** Whether the store file exists yet (it is created by the first profile). */
  store_exists: boolean;
  /** The record schema version of nsight_lab.contract.records. */
  schema_version: number;
  /** Every backend of the registry (nsight_lab.backends.BACKENDS), in its order. */
  backends?: IBackendInfo[];
}

/** One backend as `GET status` lists it. */
export interface IBackendInfo {
  id: string;
  description: string;
}

/** The JSON body of an error answered by an nsight-lab handler. */
export interface IErrorBody {
  message: string;
  error: string;
}

/** records.py `SessionInfo`: one profile of a cell or script. */
export interface ISessionInfo {
  id: number;
  status: SessionStatus;
  backend: string;
  /** ISO-8601 UTC. */
  created_at: string;
  name: string | null;
  /** Absolute notebook path of the writing kernel, where known. */
  notebook: string | null;
  device: string | null;
  host: string | null;
  /** The writer's user name (a shared store's history filters by it). */
  user: string | null;
  pid: number | null;
  backend_reason: string;
  options: Record<string, unknown>;
  /** Its first configs only (at most 20): `config_count` says how many. */
  configs: Record<string, JsonScalar>[];
  /** How many configs it has (the payload never grows with the grid). */
  config_count: number;
  /** Measured runs planned per config (`--runs`). */
  runs_per_config: number;
  /** Measured runs planned over all configs (configs × runs per config). */
  runs_planned_total: number;
  cell_source: string;
  notes: string[];
  error: string | null;
  /** ISO-8601 UTC, `null` while running. */
  finished_at: string | null;
  /** Its identity in any store (ids are numbers of one store); schema 5 on. */
  uuid: string;
  schema_version: number;
}

/**
 * Where a profile stands (nsight_lab/contract/progress.py `Progress.to_json`),
 * computed in Python; the views show `text` and `fraction` as they are.
 */
export interface IProgress {
  status: SessionStatus;
  configs_total: number;
  /** 0-based config running now (of the newest run). */
  config_index: number;
  runs_per_config: number;
  runs_planned_total: number;
  runs_done_in_config: number;
  /** Complete runs over all configs (one per config and repetition). */
  runs_done_total: number;
  /** Seconds since the start, where known (the widget; `null` in the sidebar). */
  elapsed_s: number | null;
  /** Estimated seconds left while running; `null` when unknown or ended. */
  eta_s: number | null;
  /** Share of the planned runs done, 0..1 (1 once completed). */
  fraction: number;
  /** The progress line, e.g. `30 / 90 runs · config 2 / 3 · run 0 / 30`. */
  text: string;
}

/** One cell of a summary table. */
export type SummaryValue = string | number | boolean | null;

/**
 * One row of the summary table (nsight_lab/results.py `summary_rows`): column name
 * -> display text, columns in order (`Region`, the config parameters, `Duration`,
 * `RSD`, `GB/s`, `TFLOP/s`, `% of roof`, `Bound`, ...). Computed and formatted in
 * Python over every run; shown as sent.
 */
export interface ISummaryRow {
  [column: string]: SummaryValue;
}

/**
 * The counter table beside the summary (nsight_lab/views/show.py
 * `counter_table`): every metric but the duration, per region and config, as
 * display text; `zero` rows read 0 in every run (folded away).
 */
export interface ICounterTable {
  columns: string[];
  rows: { cells: string[]; zero: boolean }[];
  /** How many rows are `zero`. */
  zero: number;
}

/**
 * One check of a region (nsight_lab/analysis/validity.py `checks_json`): a number
 * that cannot be true (`kind` `over_roof`, `over_span`, `low_coverage`) with its
 * likely cause and what to do, or a launch-bound note (`launch_bound`, no cause or
 * action). Decided in Python; shown as sent.
 */
export interface ICheck {
  /** Untrusted: shown as text only. */
  region: string;
  /** The config's parameters as text, or `''` for a single config. */
  config: string;
  kind:
    | 'over_roof'
    | 'over_span'
    | 'low_coverage'
    | 'unsteady'
    | 'throttled'
    | 'launch_bound'
    | 'not_modelled';
  text: string;
  cause: string;
  action: string;
}

/**
 * What a finding is about (nsight_lab/analysis/findings/finding.py `FAMILIES`), in
 * the order a region's findings are said: the measurement's quality first.
 */
export const FINDING_FAMILIES = [
  'quality',
  'launch',
  'traffic',
  'cache',
  'bound',
  'sweep',
  'coverage'
] as const;
export type FindingFamily = (typeof FINDING_FAMILIES)[number];

/**
 * How sure a finding is (finding.py `Confidence`): it rests on a hardware counter,
 * activity timestamps or NVML (`measured`), on the FLOPs and bytes the work model
 * counted (`work model`), or on durations alone (`timing`).
 */
export const FINDING_CONFIDENCES = [
  'measured',
  'work model',
  'timing'
] as const;
export type FindingConfidence = (typeof FINDING_CONFIDENCES)[number];

/**
 * Why a region is as slow as it is, and what would help (issue 31;
 * nsight_lab/analysis/findings/session.py `findings_json`): decided in Python,
 * ranked most important first; shown as sent. Untrusted text: shown as text only.
 */
export interface IFinding {
  /** Where: the region, a chain `a → b`, `a, b, c and 9 more`; `''`: the session. */
  region: string;
  /** Every region it is about, in run order. */
  regions: string[];
  /** The config's parameters as text (`n=1024`), or `''` across configs. */
  config: string;
  config_index: number | null;
  family: FindingFamily;
  /** What it says, one word (`memory_bound`, `throttled`, ...). */
  kind: string;
  /** One line: the diagnosis. */
  statement: string;
  /** The numbers it rests on, each with its unit. */
  evidence: string[];
  /** What to try (`''`: nothing to be done). */
  action: string;
  /** The most the action could speed it up (x), or null where no bound is known. */
  gain: number | null;
  /** Why that bound ("at most 1.9× if it reached the DRAM roof"), or `''`. */
  gain_basis: string;
  confidence: FindingConfidence;
  /** What exactly was measured or modelled, in a few words. */
  basis: string;
  /** The backend (option line) that would settle it, or `''`. */
  answered_by: string;
  /** The time at stake: the region's (or chain's) median duration, ns. */
  time_ns: number;
  /** 1 for the most important. */
  rank: number;
  /** One of the (three) the views show first. */
  top: boolean;
}

/**
 * One region's kernels (nsight_lab/figures/kernels.py `kernels_json`): what a
 * per-kernel backend (cupti, pm, ncu) saw it launch, each by its whole name and a
 * readable short one. Untrusted: shown as text only.
 */
export interface IKernelRow {
  region: string;
  /** The config's parameters as text, or `''` for a single config. */
  config: string;
  kernels: { name: string; short: string }[];
}

/**
 * A session's overall verdict against the baseline it was profiled with
 * (`%%nsight --baseline NAME`), kept at profile time (store/baselines.py
 * `StoredVerdict.to_json`).
 */
export interface IBaselineVerdict {
  /** The baseline's name. */
  baseline: string;
  /** The baseline's session then; null once that session was deleted. */
  baseline_session_id: number | null;
  /** `slower` (a regression), `faster`, `no change`; null: nothing judged. */
  verdict: 'slower' | 'faster' | 'no change' | null;
  /** The threshold judged with, a fraction (0.02 = 2 %). */
  threshold: number;
  computed_at: string;
}

/** A session as the list endpoint sends it: with its stored run count. */
export interface ISessionSummary extends ISessionInfo {
  /** Run records stored so far (one per region per run). */
  run_count: number;
  /** Its verdict against its `--baseline`; null when profiled without one. */
  baseline_verdict: IBaselineVerdict | null;
  /**
   * Whether its backend keeps an Nsight Compute report to download
   * (`GET sessions/{id}/report`): the registry's `keeps_report`, decided in Python.
   */
  has_report: boolean;
  /** Sent with `GET sessions/{id}` (not in list items): where it stands. */
  progress?: IProgress;
  /**
   * In list items: its runs, one per config and repetition whatever the number of
   * regions (what `runs_planned_total` and the progress line count).
   */
  runs_done?: number;
  /** In list items: its regions (annotations), sorted. */
  regions?: string[];
}

/** `GET sessions?…`: one page of sessions, newest first. */
export interface ISessionsResponse {
  schema_version: number;
  /** Sessions matching the filters, over all pages. */
  total: number;
  sessions: ISessionSummary[];
}

/** records.py `Telemetry`: GPU state just outside one run's timed regions. */
export interface ITelemetry {
  sm_clock_mhz: number | null;
  mem_clock_mhz: number | null;
  temperature_c: number | null;
  power_w: number | null;
  /** Active clock-event (throttle) reasons, in words. */
  clock_event_reasons: string[];
  throttled: boolean;
}

/** records.py `record_to_json` plus the store's run id. */
export interface IRunRecord {
  /** The store's run id; increasing in the order runs were written. */
  id: number;
  schema_version?: number;
  session_id: number;
  config_index: number;
  config: Record<string, JsonScalar>;
  run_index: number;
  /** Untrusted: shown as text only. */
  annotation: string;
  duration_ns: number;
  backend: string;
  /** Untrusted: shown as text only. */
  kernels: string[];
  metrics: Record<string, number>;
  telemetry: ITelemetry;
  thermal_wait_s: number;
  /** ISO-8601 UTC of the moment the run was measured. */
  finished_at: string;
}

/** A plotly figure as `fig.to_plotly_json()` sends it; only mounted, never read. */
export interface IPlotlyFigure {
  data: Record<string, unknown>[];
  layout: Record<string, unknown>;
}

/** The four figures of a session; a missing or `null` one has no data to draw. */
export type ISessionFigures = Partial<Record<ChartKind, IPlotlyFigure | null>>;

/**
 * `GET sessions/{id}?after_id=N&limit=N|tail=N&figures=1`: one page of runs.
 *
 * A page holds at most `limit` runs (server default 5,000, at most 20,000); while
 * `has_more` is true, the next page is `after_id=next_after_id`. `tail=N` asks for
 * the last N runs after `after_id` instead (then `has_more` is false).
 */
export interface ISessionResponse {
  schema_version: number;
  session: ISessionSummary;
  /** Runs with an id above `after_id`, in store order. */
  runs: IRunRecord[];
  /** The largest run id returned, or `after_id` when none. */
  last_run_id: number;
  /** Where the next page starts (`after_id` of the next request). */
  next_after_id: number;
  /** Whether runs after this page exist. */
  has_more: boolean;
  /**
   * Present when asked for with `figures=1`: built on the server from every run of
   * the session, each trace thinned to at most the point budget (the default of
   * `maxPoints`, DEFAULT_SIDEBAR_SETTINGS).
   */
  figures?: ISessionFigures;
  /** With `figures=1`: the order to show the charts in. */
  chart_order?: string[];
  /** With `figures=1`: the summary table's rows, over every run. */
  summary?: ISummaryRow[];
  /** With `figures=1`: the counter table, all-zero rows flagged. */
  counters?: ICounterTable;
  /**
   * With `figures=1`: what cannot be true of a region (its cause, what to do) and
   * launch-bound notes, listed under the summary.
   */
  checks?: ICheck[];
  /**
   * With `figures=1`: why its regions are slow and what would help, ranked; `top`
   * marks those shown first.
   */
  findings?: IFinding[];
  /** With `figures=1`: each region's kernels (per-kernel backends; else empty). */
  kernels?: IKernelRow[];
  /** With `figures=1`: the verdict table against the session's baseline, or null. */
  verdicts?: IVerdictTable | null;
  /**
   * With `figures=1`: the version of the view served (or reached by `delta`); ask
   * with `since=` it next time to get only what changed.
   */
  view_version?: string;
  /**
   * With `figures=1&since=V`, when the server can tell what changed since V: in
   * place of the view's keys (nsight_lab/viewmodel/delta.py).
   */
  delta?: IViewDelta;
}

/**
 * What changed in a session's view since the version a client holds
 * (nsight_lab/viewmodel/delta.py). Applied to that view (`applyViewDelta`), it
 * gives the view of `view_version`.
 */
export interface IViewDelta {
  /**
   * Chart name -> its change: new traces and points (`Plotly.extendTraces`'s, each
   * trace its latest `max_points`) and the chart's whole layout when it changed;
   * `figure` for a chart drawn whole; `null` for a chart gone.
   */
  charts: Record<string, IViewChartChange | null>;
  /** The summary rows that changed, by index, and how many rows there are now. */
  summary?: { length: number; rows: Record<string, ISummaryRow> };
  /** Every other key of the view that changed, whole (`counters`, `checks`...). */
  tables?: Partial<
    Pick<
      ISessionResponse,
      'chart_order' | 'counters' | 'checks' | 'kernels' | 'verdicts'
    >
  >;
}

/** One chart's change in a delta (`src/charts/append.ts`'s `IChartAppend`). */
export interface IViewChartChange {
  traces?: Record<string, unknown>[];
  extend?: { indices: number[]; data: Record<string, unknown[][]> }[];
  max_points?: number | null;
  figure?: IPlotlyFigure;
  layout?: Record<string, unknown>;
}

/**
 * The verdict of a compare row (nsight_lab/analysis/compare.py): `faster`/`slower` for
 * durations and rates, `higher`/`lower` for other quantities when the interval
 * excludes 1, `no change` when it holds 1, `deterministic` for rows without noise
 * (work-model `model__*` metrics, or one value in every run of both sessions).
 */
export type CompareVerdict =
  | 'faster'
  | 'slower'
  | 'higher'
  | 'lower'
  | 'no change'
  | 'inconclusive: clocks'
  | 'deterministic';

/** A compare row as display text (nsight_lab/views/verdicts.py `verdict_cells`). */
export interface ICompareCells {
  region: string;
  metric: string;
  config: string;
  median_a: string;
  median_b: string;
  /** The signed change, e.g. `+7.8 %`. */
  change: string;
  /** The ratio and its interval, e.g. `1.078× [1.033, 1.125]`. */
  ratio: string;
  verdict: string;
  note: string;
}

/** One row of `GET compare?a=&b=`: one annotation, metric and config. */
export interface ICompareRow {
  annotation: string;
  metric: string;
  /** The unit of the medians, means and std: `ns`, `bytes`, `FLOP`, `bytes/s`... */
  unit: string;
  config: Record<string, JsonScalar>;
  config_index_a: number;
  config_index_b: number;
  median_a: number | null;
  median_b: number | null;
  mean_a: number | null;
  mean_b: number | null;
  /** median_b / median_a. */
  ratio: number | null;
  /** The 95% interval of the ratio of medians (order statistics; null: too few runs). */
  ci_low: number | null;
  ci_high: number | null;
  n_a: number;
  n_b: number;
  std_a: number | null;
  std_b: number | null;
  /** Whether the ratio's CI excludes 1 (never for deterministic rows). */
  significant: boolean;
  /** null: too few runs for an interval. */
  verdict: CompareVerdict | null;
  /** The threshold the verdict was judged with, a fraction. */
  threshold: number;
  /** Median SM clock of each side's runs of this region and config (MHz). */
  sm_clock_mhz_a: number | null;
  sm_clock_mhz_b: number | null;
  /** The medians differ by more than 2 %. */
  clock_differs: boolean;
  /** Runs of each side that NVML said were throttled. */
  throttled_a: number;
  throttled_b: number;
  /** Median host probe of each side (ns; cpu backend, timed rows; host_speed.py). */
  host_probe_ns_a: number | null;
  host_probe_ns_b: number | null;
  /** The probes differ by more than 5 %: the host ran at another speed. */
  host_differs: boolean;
  /** Clocks or host speeds apart, or throttled runs: the ratio may not be the code's. */
  flagged: boolean;
  /** What qualifies the verdict, in words ('' for nothing). */
  note: string;
  /** The metric as a person reads it (`duration`, `duration (host timer)`). */
  label?: string;
  /** A duration or a rate made from one. */
  timed?: boolean;
  /** The ratio per SM cycle (both clocks read). */
  cycle_ratio?: number | null;
  /** The verdict of the ratio alone (differs when inconclusive). */
  measured?: string | null;
  /** Folded away by the views: a deterministic row. */
  folded?: boolean;
  /** The row as display text, formatted by the server. */
  cells?: ICompareCells;
}

/** Session b against a in one word (compare.py `SessionVerdict`). */
export interface ISessionVerdict {
  /** `slower` when any timed row is slower; null when nothing was judged. */
  verdict: 'slower' | 'faster' | 'no change' | 'inconclusive: clocks' | null;
  slower: number;
  faster: number;
  unchanged: number;
  /** Timed rows inconclusive for the clocks. */
  inconclusive?: number;
  /** Deterministic rows, folded away. */
  folded?: number;
  flagged: number;
  threshold: number;
  /** One line: the counts and the clock and throttling caveats. */
  note: string;
}

/**
 * The verdict table of session b against a (baselines.py `VerdictTable.to_json`):
 * in a cell's final output, the session view and, with the sessions in full,
 * `GET compare`.
 */
export interface IVerdictTable {
  a: number;
  b: number;
  /** The baseline's name, when a was named by one. */
  baseline: string | null;
  /** The verdicts' threshold, a fraction. */
  threshold: number;
  method: string;
  confidence: number;
  verdict: ISessionVerdict;
  rows: ICompareRow[];
  scope: ICompareScope;
  /** What the verdicts were judged with (clock, host, drift...), as served. */
  tolerances?: Record<string, unknown>;
  /** The legend under the table, in words, as served. */
  legend?: string;
}

/** What two compared sessions share, and what only one of them has. */
export interface ICompareScope {
  regions: string[];
  regions_only_a: string[];
  regions_only_b: string[];
  /** Configs both sessions ran, in a's order. */
  configs: Record<string, JsonScalar>[];
  configs_only_a: Record<string, JsonScalar>[];
  configs_only_b: Record<string, JsonScalar>[];
  /** One line, e.g. `compared on n=1024, n=4096; only in a: n=512` ('' if same). */
  note: string;
  /** Why nothing could be compared; null when something was. */
  reason: string | null;
}

/** `GET compare?a=ID&b=ID[&threshold=PCT]` (nsight_lab/analysis/compare.py, baselines.py). */
export interface ICompareResponse {
  schema_version: number;
  a: ISessionSummary;
  b: ISessionSummary;
  /** null: the sessions were named by id. */
  baseline: string | null;
  /** The verdicts' threshold, a fraction. */
  threshold: number;
  /** The interval's method, e.g. `median-ratio-price-bonett`. */
  method: string;
  /** The interval's confidence level, e.g. 0.95. */
  confidence: number;
  /** b's overall verdict against a. */
  verdict: ISessionVerdict;
  rows: ICompareRow[];
  scope: ICompareScope;
  /** What the verdicts were judged with, as served. */
  tolerances?: Record<string, unknown>;
  /** The legend under the table, in words, as served. */
  legend?: string;
}

/** Websocket `events`: runs were added to a session. */
export interface IRunsChangedEvent {
  type: 'runs-changed';
  /** Sent by the server; not needed to act on the event. */
  schema_version?: number;
  session_id: number;
  last_run_id: number;
}

/** Websocket `events`: a session was created, finished or deleted. */
export interface ISessionsChangedEvent {
  type: 'sessions-changed';
  /** Sent by the server; not needed to act on the event. */
  schema_version?: number;
  latest_session_id: number | null;
}

/** A message of the `events` websocket. */
export type EventMessage = IRunsChangedEvent | ISessionsChangedEvent;

/** Filters of the session list; empty strings are left out of the query. */
export interface ISessionFilters {
  /** Free text over name, notebook, device and cell source. */
  text: string;
  notebook: string;
  annotation: string;
  device: string;
  /** Exact host name the session ran on. */
  host: string;
  /** Exact user name that ran the session. */
  user: string;
  backend: string;
  status: string;
  /** ISO date or date-time; inclusive lower bound of `created_at`. */
  since: string;
  /** ISO date or date-time; upper bound of `created_at`. */
  until: string;
}

/** No filter set. */
export const EMPTY_FILTERS: ISessionFilters = {
  text: '',
  notebook: '',
  annotation: '',
  device: '',
  host: '',
  user: '',
  backend: '',
  status: '',
  since: '',
  until: ''
};

/** The sidebar settings (schema/sidebar.json). */
export interface ISidebarSettings {
  /** Least time between two re-fetches of a changing session, in milliseconds. */
  refreshInterval: number;
  /** Maximum number of runs kept and listed per session. */
  maxPoints: number;
  /** The chart shown first. */
  defaultChart: ChartKind;
  /** A session's findings shown before the rest are folded. */
  findingsShown: number;
}

const SETTINGS = sidebarSchema.properties;

/**
 * Defaults of schema/sidebar.json, used until the settings registry answers: read
 * from the schema itself, the one place each is defined. `maxPoints` is the point
 * budget Python reads from there too (`nsight_lab/contract/points.py`).
 */
export const DEFAULT_SIDEBAR_SETTINGS: ISidebarSettings = {
  refreshInterval: SETTINGS.refreshInterval.default,
  maxPoints: SETTINGS.maxPoints.default,
  defaultChart: SETTINGS.defaultChart.default as ChartKind,
  findingsShown: SETTINGS.findingsShown.default
};
