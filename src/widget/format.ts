/**
 * Text shown by the inline widget: progress, durations and table cells.
 */
import type { IWidgetTraits, SummaryValue } from './types';

/** Seconds as `12.3 s`, `4 min 05 s` or `1 h 02 min`. */
export function formatSeconds(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) {
    return '–';
  }
  if (seconds < 60) {
    return `${seconds.toFixed(1)} s`;
  }
  const whole = Math.round(seconds);
  const minutes = Math.floor(whole / 60);
  if (minutes < 60) {
    return `${minutes} min ${String(whole % 60).padStart(2, '0')} s`;
  }
  const hours = Math.floor(minutes / 60);
  return `${hours} h ${String(minutes % 60).padStart(2, '0')} min`;
}

/** Fraction of the planned runs done, 0..1 (1 once the session ended). */
export function progressFraction(
  traits: Pick<
    IWidgetTraits,
    'status' | 'configs_total' | 'config_index' | 'runs_done' | 'runs_target'
  >
): number {
  if (traits.status === 'completed') {
    return 1;
  }
  const perConfig = Math.max(traits.runs_target, 1);
  const total = Math.max(traits.configs_total, 1) * perConfig;
  const done =
    traits.config_index * perConfig + Math.min(traits.runs_done, perConfig);
  return Math.min(Math.max(done / total, 0), 1);
}

/** The progress line: `config 2/3 · run 5/10 · elapsed 1.2 s · ETA 3.4 s`. */
export function describeProgress(
  traits: Pick<
    IWidgetTraits,
    | 'status'
    | 'configs_total'
    | 'config_index'
    | 'runs_done'
    | 'runs_target'
    | 'elapsed_s'
    | 'eta_s'
  >
): string {
  const configs = Math.max(traits.configs_total, 1);
  const parts = [
    `config ${Math.min(traits.config_index + 1, configs)}/${configs}`,
    `run ${traits.runs_done}/${traits.runs_target}`,
    `elapsed ${formatSeconds(traits.elapsed_s)}`
  ];
  if (traits.status === 'running' && traits.eta_s !== null) {
    parts.push(`ETA ${formatSeconds(traits.eta_s)}`);
  }
  return parts.join(' · ');
}

/** A summary table cell as text (numbers to four significant digits). */
export function formatCell(value: SummaryValue): string {
  if (value === null) {
    return '';
  }
  if (typeof value === 'number') {
    if (Number.isInteger(value) || !Number.isFinite(value)) {
      return String(value);
    }
    return Number(value.toPrecision(4)).toString();
  }
  return String(value);
}
