/**
 * The one duration format (sidebar, main-area panels, comparison, inline widget).
 */

import { formatDuration, formatQuantity } from '../../components/format';

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

  it('is what formatQuantity gives for a value in ns', () => {
    for (const ns of [3, 4567, 8.9e6, 1.2e10]) {
      expect(formatQuantity(ns, 'ns')).toBe(formatDuration(ns));
    }
  });
});

describe('formatQuantity', () => {
  it('reads prefixed rates in the prefix that fits', () => {
    expect(formatQuantity(2.082e-5, 'TFLOP/s')).toBe('20.82 MFLOP/s');
    expect(formatQuantity(812.25, 'GB/s')).toBe('812.3 GB/s');
    expect(formatQuantity(0.001952, 'GB/s')).toBe('1.952 MB/s');
    expect(formatQuantity(3.2e12, 'bytes/s')).toBe('3.200 TB/s');
  });
});
