// SPDX-License-Identifier: GPL-2.0-only
// Heat map maths: intensities, colours, pixels to cells, clicked cells to a time range.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  intensity,
  heatRgb,
  cellAt,
  cellRange,
  brightest,
  rowTotals,
  columnTotals,
} from "../src/heatmap.js";

test("intensity is sqrt(count/max), clamped", () => {
  assert.equal(intensity(0, 100), 0);
  assert.equal(intensity(25, 100), 0.5);
  assert.equal(intensity(100, 100), 1);
  assert.equal(intensity(400, 100), 1);
  assert.equal(intensity(5, 0), 0);
});

test("heatRgb: grey for none, pale yellow to orange to dark red", () => {
  assert.deepEqual(heatRgb(0), [240, 240, 240]);
  assert.deepEqual(heatRgb(0.5), [250, 140, 40]);
  assert.deepEqual(heatRgb(1), [160, 0, 0]);
  assert.deepEqual(heatRgb(0.25), [253, 190, 110]);
});

test("cellAt maps pixels to cells, clamped", () => {
  assert.deepEqual(cellAt(0, 0, 360, 20, 720, 280), { col: 0, row: 0 });
  assert.deepEqual(cellAt(3, 15, 360, 20, 720, 280), { col: 1, row: 1 });
  assert.deepEqual(cellAt(719.9, 279.9, 360, 20, 720, 280), { col: 359, row: 19 });
  assert.deepEqual(cellAt(800, -5, 360, 20, 720, 280), { col: 359, row: 0 });
});

test("cellRange: from the earlier cell's start to the later one's end, either order", () => {
  const starts = [1000e9, 1010e9, 1020e9];
  const rowNs = 500e6;
  const a = { col: 0, row: 4 };
  const b = { col: 2, row: 1 };
  assert.deepEqual(cellRange(a, b, starts, rowNs), { fromNs: 1002e9, toNs: 1021e9 });
  assert.deepEqual(cellRange(b, a, starts, rowNs), { fromNs: 1002e9, toNs: 1021e9 });
  assert.deepEqual(cellRange(a, a, starts, rowNs), { fromNs: 1002e9, toNs: 1002.5e9 });
});

test("brightest, row and column totals", () => {
  const w = [{ counts: [1, 9, 2] }, { counts: [3, 9, 7] }];
  assert.deepEqual(brightest(w, 3), [
    { col: 0, row: 1, count: 9 },
    { col: 1, row: 1, count: 9 },
    { col: 1, row: 2, count: 7 },
  ]);
  assert.deepEqual(rowTotals(w, 3), [4, 18, 9]);
  assert.deepEqual(columnTotals(w), [12, 19]);
});
