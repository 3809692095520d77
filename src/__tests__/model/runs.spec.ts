/**
 * runs.ts: keepLast (the live model keeps the newest runs).
 */

import { keepLast } from '../../model/runs';

describe('keepLast', () => {
  it('keeps the last items only', () => {
    expect(keepLast([1, 2, 3], 2)).toEqual([2, 3]);
    expect(keepLast([1], 2)).toEqual([1]);
  });
});
