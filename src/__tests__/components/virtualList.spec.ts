/**
 * The virtual list arithmetic: which rows render for a scroll position.
 */

import {
  contentHeight,
  rowOffset,
  visibleRange
} from '../../components/virtualList';

describe('visibleRange', () => {
  it('renders the first screen plus the overscan at the top', () => {
    expect(visibleRange(0, 440, 44, 10000, 5)).toEqual({ start: 0, end: 15 });
  });

  it('renders the rows around a scroll offset in the middle', () => {
    // Row 1000 starts at 44000 px; 10 rows fit; 5 extra on each side.
    expect(visibleRange(44000, 440, 44, 10000, 5)).toEqual({
      start: 995,
      end: 1015
    });
  });

  it('counts a partly visible row', () => {
    expect(visibleRange(22, 44, 44, 100, 0)).toEqual({ start: 0, end: 2 });
  });

  it('clips at the end of the list', () => {
    expect(visibleRange(44 * 9995, 440, 44, 10000, 5)).toEqual({
      start: 9990,
      end: 10000
    });
  });

  it('renders nothing for an empty list or a scroll past the end', () => {
    expect(visibleRange(0, 440, 44, 0)).toEqual({ start: 0, end: 0 });
    const past = visibleRange(1e9, 440, 44, 100, 5);
    expect(past.start).toBe(100);
    expect(past.end).toBe(100);
  });

  it('treats a negative scroll (overscroll bounce) as zero', () => {
    expect(visibleRange(-50, 88, 44, 100, 0)).toEqual({ start: 0, end: 2 });
  });

  it('keeps the rendered row count bounded whatever the list length', () => {
    const range = visibleRange(44 * 500000, 600, 44, 1000000, 8);
    expect(range.end - range.start).toBeLessThanOrEqual(
      Math.ceil(600 / 44) + 1 + 16
    );
  });
});

describe('contentHeight and rowOffset', () => {
  it('size the spacer and place rows at fixed height', () => {
    expect(contentHeight(10000, 44)).toBe(440000);
    expect(rowOffset(3, 44)).toBe(132);
  });
});
