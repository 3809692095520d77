/**
 * The arithmetic of a virtualised list with a fixed row height.
 */

/** Rows `[start, end)` of a list. */
export interface IRowRange {
  start: number;
  end: number;
}

/**
 * The rows to render for a scroll position: those in the viewport plus `overscan`
 * rows above and below, clipped to `[0, total)`.
 *
 * @param scrollTop The container's `scrollTop`, in pixels.
 * @param viewportHeight The container's `clientHeight`, in pixels.
 * @param rowHeight The fixed row height, in pixels (> 0).
 * @param total The number of rows.
 * @param overscan Extra rows on each side, so fast scrolling shows no gap.
 */
export function visibleRange(
  scrollTop: number,
  viewportHeight: number,
  rowHeight: number,
  total: number,
  overscan: number = 5
): IRowRange {
  if (total <= 0 || rowHeight <= 0) {
    return { start: 0, end: 0 };
  }
  const top = Math.max(0, scrollTop);
  const first = Math.floor(top / rowHeight);
  const last = Math.ceil((top + Math.max(0, viewportHeight)) / rowHeight);
  const start = Math.min(Math.max(0, first - overscan), total);
  const end = Math.min(total, Math.max(start, last + overscan));
  return { start, end };
}

/** The height of the scrolled content, in pixels. */
export function contentHeight(total: number, rowHeight: number): number {
  return Math.max(0, total) * rowHeight;
}

/** The pixel offset of row `index`. */
export function rowOffset(index: number, rowHeight: number): number {
  return index * rowHeight;
}
