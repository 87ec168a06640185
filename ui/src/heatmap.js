// SPDX-License-Identifier: GPL-2.0-only
// Heat map maths (FlameScope's view of /api/v1/heatmap): columns are windows, rows the offset
// within the window; counts to colours, pixels to cells, two clicked cells to a time range.

/** Count -> intensity 0..1: the square root of count/max, so a short stall's few samples still
 * show beside a burst. 0 for max <= 0. */
export function intensity(count, max) {
  if (max <= 0 || count <= 0) return 0;
  return Math.sqrt(Math.min(count, max) / max);
}

/** Intensity -> [r, g, b]: 0 a light grey (240,240,240); above it from pale yellow
 * (255,240,180) through orange to dark red (160,0,0) at 1. */
export function heatRgb(t) {
  if (t <= 0) return [240, 240, 240];
  const stops = [
    [0, [255, 240, 180]],
    [0.5, [250, 140, 40]],
    [1, [160, 0, 0]],
  ];
  for (let i = 1; i < stops.length; i++) {
    const [t1, c1] = stops[i];
    const [t0, c0] = stops[i - 1];
    if (t <= t1) {
      const f = (t - t0) / (t1 - t0);
      return c0.map((c, k) => Math.round(c + (c1[k] - c) * f));
    }
  }
  return stops[stops.length - 1][1];
}

/** Pixel (x, y) of a grid of cols x rows cells drawn over width x height -> {col, row}, clamped
 * to the grid. Row 0 is at the top (the start of each window). */
export function cellAt(x, y, cols, rows, width, height) {
  const col = Math.min(cols - 1, Math.max(0, Math.floor((x / width) * cols)));
  const row = Math.min(rows - 1, Math.max(0, Math.floor((y / height) * rows)));
  return { col, row };
}

/** Two clicked cells (either order) -> {fromNs, toNs}: from the start of the earlier cell to the
 * end of the later one. starts: each column's window start (Unix ns); rowNs: a row's length. */
export function cellRange(a, b, starts, rowNs) {
  const t = (c) => starts[c.col] + c.row * rowNs;
  const [p, q] = t(a) <= t(b) ? [a, b] : [b, a];
  return { fromNs: t(p), toNs: t(q) + rowNs };
}

/** The n cells with the most counts: [{col, row, count}], most first (ties: earlier first). */
export function brightest(windows, n) {
  const cells = [];
  windows.forEach((w, col) => w.counts.forEach((count, row) => cells.push({ col, row, count })));
  cells.sort((p, q) => q.count - p.count || p.col - q.col || p.row - q.row);
  return cells.slice(0, n);
}

/** Sum of counts per row over all windows: [rows] (a burst at a fixed offset in each window
 * makes its rows stand out). */
export function rowTotals(windows, rows) {
  const t = new Array(rows).fill(0);
  for (const w of windows) w.counts.forEach((c, r) => (t[r] += c));
  return t;
}

/** Sum of counts per window: [cols]. */
export function columnTotals(windows) {
  return windows.map((w) => w.counts.reduce((a, b) => a + b, 0));
}
