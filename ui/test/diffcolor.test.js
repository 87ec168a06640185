// SPDX-License-Identifier: GPL-2.0-only
// Differential colours: share growth, its scale, and growth to red/blue/grey.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  shareGrowth,
  growthScale,
  diffRgb,
  classifyRgb,
  kindRgb,
  hash,
  NEUTRAL,
} from "../src/diffcolor.js";

test("shareGrowth compares shares, not counts", () => {
  // 50 of 100 now, 10 of 100 before: +0.4
  assert.equal(shareGrowth({ value: 50, baseline: 10 }, 100, 100), 0.4);
  // twice the samples but the same share: 0
  assert.equal(shareGrowth({ value: 40, baseline: 20 }, 200, 100), 0);
  // a new frame: its whole share
  assert.equal(shareGrowth({ value: 25, baseline: 0 }, 100, 50), 0.25);
  // gone: minus its old share
  assert.equal(shareGrowth({ value: 0, baseline: 30 }, 100, 60), -0.5);
  assert.equal(shareGrowth({ value: 5, baseline: 5 }, 0, 0), 0);
});

test("growthScale is the largest |growth| below the root, at least 0.01", () => {
  const t = {
    value: 100,
    baseline: 100,
    children: [
      { value: 70, baseline: 40, children: [] },
      { value: 30, baseline: 60, children: [] },
    ],
  };
  assert.ok(Math.abs(growthScale(t, 100, 100) - 0.3) < 1e-12);
  const flat = { value: 100, baseline: 100, children: [{ value: 50, baseline: 50, children: [] }] };
  assert.equal(growthScale(flat, 100, 100), 0.01);
});

test("diffRgb: grey within NEUTRAL, red grown, blue shrunk, saturating at the scale", () => {
  assert.deepEqual(diffRgb(0, 0.1), [200, 200, 200]);
  assert.deepEqual(diffRgb(NEUTRAL / 2, 0.1), [200, 200, 200]);
  assert.deepEqual(diffRgb(0.1, 0.1), [220, 40, 40]);
  assert.deepEqual(diffRgb(0.5, 0.1), [220, 40, 40]);
  assert.deepEqual(diffRgb(-0.1, 0.1), [40, 90, 220]);
  // halfway: halfway between the pale tint and the full colour
  assert.deepEqual(diffRgb(0.05, 0.1), [235, 125, 125]);
  assert.deepEqual(diffRgb(-0.05, 0.1), [125, 155, 235]);
  assert.equal(classifyRgb(diffRgb(0.05, 0.1)), "grown");
  assert.equal(classifyRgb(diffRgb(-0.05, 0.1)), "shrunk");
  assert.equal(classifyRgb(diffRgb(0, 0.1)), "unchanged");
});

test("kind colours are stable per name and differ by kind", () => {
  assert.equal(hash("main"), hash("main"));
  assert.notEqual(hash("main"), hash("mainx"));
  assert.equal(hash(""), 0x811c9dc5);
  assert.deepEqual(kindRgb("user", "f"), kindRgb("user", "f"));
  assert.deepEqual(kindRgb("process", "a"), [150, 170, 200]);
  const k = kindRgb("kernel", "schedule");
  assert.ok(k[0] >= 200 && k[2] === 60);
});
