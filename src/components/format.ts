/**
 * Number, time and config formatting for the sidebar, the main-area panels and the
 * inline widget (bundled there too: this module imports types only): words and
 * units, no markup.
 */

import type { ISessionInfo, JsonScalar } from '../types';

/** Duration units, largest first: nanoseconds per unit and the unit's symbol. */
const DURATION_UNITS: readonly [number, string][] = [
  [1e9, 's'],
  [1e6, 'ms'],
  [1e3, 'µs']
];

/**
 * A duration in nanoseconds in the unit that reads best, always with its unit:
 * four significant digits (`21.56 ms`, `7.200 µs`), whole nanoseconds as they are
 * (`512 ns`). The unit is picked after rounding, so 999,960 ns reads `1.000 ms`,
 * not `1000 µs`. The one duration format of the sidebar, the main-area panels and
 * the inline widget; `–` for a missing or non-finite value.
 */
export function formatDuration(ns: number | null | undefined): string {
  if (ns === null || ns === undefined || !Number.isFinite(ns)) {
    return '–';
  }
  for (const [scale, unit] of DURATION_UNITS) {
    const scaled = Number((ns / scale).toPrecision(4));
    if (Math.abs(scaled) >= 1) {
      return `${(ns / scale).toPrecision(4)} ${unit}`;
    }
  }
  if (Number.isInteger(ns)) {
    return `${ns} ns`;
  }
  return `${ns.toPrecision(4)} ns`;
}

/** A plain number with 4 significant digits. */
export function formatNumber(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) {
    return '–';
  }
  if (value !== 0 && (Math.abs(value) >= 1e6 || Math.abs(value) < 1e-3)) {
    return value.toExponential(3);
  }
  return `${Number(value.toPrecision(4))}`;
}

/** SI prefixes for quantities such as bytes and FLOP (decimal, as Nsight does). */
const SI_PREFIXES: readonly [number, string][] = [
  [1e15, 'P'],
  [1e12, 'T'],
  [1e9, 'G'],
  [1e6, 'M'],
  [1e3, 'k']
];

/** Units shown with an SI prefix, by the unit the server names. */
const SI_UNITS: Record<string, string> = {
  bytes: 'B',
  'bytes/s': 'B/s',
  FLOP: 'FLOP',
  'FLOP/s': 'FLOP/s'
};

/**
 * Units served already prefixed (`--derive` rates: nsight_lab/results.py), as their
 * base unit and its scale, so that they read like the others: 2.08e-5 TFLOP/s is
 * `20.82 MFLOP/s`.
 */
const PREFIXED_UNITS: Record<string, [number, string]> = {
  'TFLOP/s': [1e12, 'FLOP/s'],
  'GFLOP/s': [1e9, 'FLOP/s'],
  'TB/s': [1e12, 'bytes/s'],
  'GB/s': [1e9, 'bytes/s'],
  'MB/s': [1e6, 'bytes/s']
};

/**
 * A value with its unit, as served (nsight_lab/analysis/compare.py's `metric_unit`):
 * durations (`ns`) through {@link formatDuration}, bytes and FLOP with an SI
 * prefix (`1.049 MB`, `2.5 GFLOP`, `812.3 GB/s`), anything else as a number
 * followed by its unit; a plain number when the unit is unknown (`''`).
 */
export function formatQuantity(
  value: number | null | undefined,
  unit: string
): string {
  if (value === null || value === undefined || !Number.isFinite(value)) {
    return '–';
  }
  if (unit === 'ns') {
    return formatDuration(value);
  }
  const prefixed = PREFIXED_UNITS[unit];
  if (prefixed !== undefined) {
    return formatQuantity(value * prefixed[0], prefixed[1]);
  }
  const si = SI_UNITS[unit];
  if (si !== undefined) {
    const abs = Math.abs(value);
    for (const [scale, prefix] of SI_PREFIXES) {
      if (abs >= scale) {
        return `${(value / scale).toPrecision(4)} ${prefix}${si}`;
      }
    }
    return `${Number(value.toPrecision(4))} ${si}`;
  }
  const number = formatNumber(value);
  if (!unit) {
    return number;
  }
  return unit === '%' ? `${number} %` : `${number} ${unit}`;
}

/** An ISO-8601 UTC time in the browser's local time, to the second. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) {
    return '–';
  }
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) {
    return iso;
  }
  const pad = (n: number): string => `${n}`.padStart(2, '0');
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`
  );
}

/** A config as `n=512, dtype=fp16`; `–` when empty. */
export function formatConfig(config: Record<string, JsonScalar>): string {
  const parts = Object.entries(config).map(
    ([key, value]) => `${key}=${String(value)}`
  );
  return parts.length > 0 ? parts.join(', ') : '–';
}

/** The last path segment of a notebook path. */
export function baseName(path: string | null): string {
  if (!path) {
    return '';
  }
  const parts = path.replace(/\\/g, '/').split('/');
  return parts[parts.length - 1] || path;
}

/** Regions named in a line: the first few, then how many more. */
export function regionsText(regions: readonly string[], shown = 3): string {
  if (regions.length === 0) {
    return '';
  }
  const head = regions.slice(0, shown).join(', ');
  const more = regions.length - shown;
  return more > 0 ? `${head} +${more}` : head;
}

/**
 * How a session is named in lists: its name, else its notebook, else its regions
 * (what the cell timed), else `session N`.
 */
export function sessionTitle(
  session: ISessionInfo & { regions?: readonly string[] }
): string {
  if (session.name) {
    return session.name;
  }
  const notebook = baseName(session.notebook);
  if (notebook) {
    return notebook;
  }
  const regions = regionsText(session.regions ?? []);
  return regions ? regions : `session ${session.id}`;
}

/**
 * A session's runs, in the one meaning of "runs" everywhere (the progress line,
 * the history, the session panel, `nsight-lab show`): executions of the cell, one
 * per config and repetition, whatever the number of regions.
 * `30 of 30 runs`; `1 run` when nothing is planned.
 */
export function runsText(done: number, planned: number): string {
  const unit = planned === 1 || (planned <= 0 && done === 1) ? 'run' : 'runs';
  return planned > 0 ? `${done} of ${planned} ${unit}` : `${done} ${unit}`;
}
