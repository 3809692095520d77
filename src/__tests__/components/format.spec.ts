/**
 * The one duration formatted in TypeScript (the live view's newest run): the same
 * text as Python's one formatter (nsight_lab/text/units.py), read from
 * tests/fixtures/units.json (tests/fixtures/make_units.py).
 */

import * as format from '../../components/format';

const { formatDuration } = format;

/** The directory of this spec (jest's CommonJS wrapper defines it). */
declare const __dirname: string;

/** Node's `fs`, as much of it as is used (no @types/node in this build). */
interface IFs {
  readFileSync(path: string, encoding: 'utf-8'): string;
}

const UNITS = JSON.parse(
  jest
    .requireActual<IFs>('fs')
    .readFileSync(`${__dirname}/../../../tests/fixtures/units.json`, 'utf-8')
) as { durations: [number, string][] };

describe('formatDuration', () => {
  it('picks ns, µs, ms or s and always shows the unit', () => {
    expect(formatDuration(512)).toBe('512 ns');
    expect(formatDuration(0)).toBe('0 ns');
    expect(formatDuration(12.34)).toBe('12.34 ns');
    expect(formatDuration(7200)).toBe('7.200 µs');
    expect(formatDuration(21560000)).toBe('21.56 ms');
    expect(formatDuration(2.5e9)).toBe('2.500 s');
    expect(formatDuration(-1500)).toBe('-1.500 µs');
  });

  it('chooses the unit after rounding, so no value reads 1000 of a unit', () => {
    expect(formatDuration(999.96)).toBe('1.000 µs');
    expect(formatDuration(999960)).toBe('1.000 ms');
    expect(formatDuration(999960000)).toBe('1.000 s');
    expect(formatDuration(999)).toBe('999 ns');
    expect(formatDuration(999940)).toBe('999.9 µs');
  });

  it('says – for a missing or non-finite value', () => {
    expect(formatDuration(null)).toBe('–');
    expect(formatDuration(undefined)).toBe('–');
    expect(formatDuration(Number.NaN)).toBe('–');
    expect(formatDuration(Number.POSITIVE_INFINITY)).toBe('–');
  });

  it('writes what Python writes, for every duration of the fixture', () => {
    expect(UNITS.durations.length).toBeGreaterThan(10);
    for (const [ns, text] of UNITS.durations) {
      expect(`${ns}: ${formatDuration(ns)}`).toBe(`${ns}: ${text}`);
    }
  });
});

describe('values with units', () => {
  it('are formatted by the server only: no second formatter here', () => {
    const names = Object.keys(format);
    expect(names).not.toContain('formatQuantity');
    expect(names).not.toContain('formatNumber');
  });
});
