/**
 * Time and config formatting for the sidebar, the main-area panels and the inline
 * widget (bundled there too: this module imports types only): words, no markup.
 * Values with units arrive formatted by the server (nsight_lab/text/units.py, the
 * one formatter); the one duration formatted here, the live view's newest run, is
 * pinned to Python's by tests/fixtures/units.json.
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
 * not `1000 µs`. Python's `format_duration` writes the same text (jest checks it
 * against tests/fixtures/units.json); `–` for a missing or non-finite value.
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
