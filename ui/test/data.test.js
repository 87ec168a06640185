// SPDX-License-Identifier: GPL-2.0-only
// The timeline's series from the windows and stages JSON, the compare report's rows, and the
// API query strings.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { buildTimeline, logMs } from "../src/timelinedata.js";
import { metrics, figures } from "../src/comparedata.js";
import { flamegraphQuery, profileQuery, heatmapQuery } from "../src/api.js";
import { fmtNs } from "../src/range.js";

const fixture = (n) => JSON.parse(readFileSync(new URL("fixtures/" + n, import.meta.url)));

test("buildTimeline: one point per window, nested or flat keys, stages joined by start", () => {
  const w = fixture("windows.json").windows;
  const m = buildTimeline(w, fixture("stages.json"));
  assert.equal(m.x.length, 3);
  assert.deepEqual(m.samples, [100, 250, 90]);
  assert.deepEqual(m.drops, [0, 3, 1]);
  assert.deepEqual(m.offcpuS, [0.5, 1.5, 2]);
  assert.deepEqual(m.runqMs, [0.25, 4, null]);
  assert.deepEqual(m.gcMs, [null, 12, null]);
  assert.equal(m.stages.length, 1);
  assert.equal(m.stages[0].name, "compute");
  // the second window has no stage entry: a gap
  assert.deepEqual(m.stages[0].p95Ms, [3, null, 18]);
  assert.deepEqual(m.stages[0].thresholdMs, [6, null, 6]);
  assert.equal(logMs(0), null);
});

test("compare report: metrics by path, figures with units and intervals", () => {
  const rep = fixture("compare.json");
  const rows = metrics(rep);
  assert.deepEqual(
    rows.map((r) => r.path),
    ["stages.compute.p95", "stages.compute.rate", "cpu", "functions.hot_loop.cpu"],
  );
  const f = figures(rows[0].m, fmtNs);
  assert.deepEqual(f, {
    before: "3.00 ms",
    after: "4.50 ms",
    diff: "1.50 ms",
    ci: "[1.20 ms, 1.80 ms]",
  });
  const g = figures(rows[1].m, fmtNs);
  assert.equal(g.before, "120 /s");
  assert.equal(g.ci, "-");
});

test("query strings of the flame graph and its pprof link", () => {
  const range = { fromNs: 1796000000000e6, toNs: 1796000010000e6 };
  assert.equal(
    flamegraphQuery({
      type: "cpu",
      range,
      baseline: { fromNs: 1795999990000e6, toNs: 1796000000000e6 },
      comm: "app",
      minShare: "0.0005",
    }),
    "type=cpu&from=2026-11-30T00%3A53%3A20.001Z&to=2026-11-30T00%3A53%3A29.999Z" +
      "&baseline_from=2026-11-30T00%3A53%3A10.001Z&baseline_to=2026-11-30T00%3A53%3A19.999Z" +
      "&comm=app&min_share=0.0005",
  );
  assert.equal(
    flamegraphQuery({
      type: "wall",
      spike: "compute-1",
      range,
      baseline: "spike",
      stage: "compute",
    }),
    "type=wall&spike=compute-1&baseline=1&stage=compute",
  );
  assert.equal(
    profileQuery({ type: "cpu", spike: "compute-1", stage: "compute", pid: "5" }),
    "type=cpu&spike=compute-1&stage=compute",
  );
  assert.equal(
    profileQuery({ type: "offcpu", range, pid: "42" }),
    "type=offcpu&from=2026-11-30T00%3A53%3A20.001Z&to=2026-11-30T00%3A53%3A29.999Z&pid=42",
  );
});

test("buildTimeline takes a stage's configured threshold where the windows have none", () => {
  const w = fixture("windows.json").windows;
  const st = {
    windows: [{ start_unix_ns: w[0].start_unix_ns, stages: [{ stage: "io", p95_ns: 1e6 }] }],
  };
  const m = buildTimeline(w, st, new Map([["io", 5e6]]));
  assert.deepEqual(m.stages[0].p95Ms, [1, null, null]);
  assert.deepEqual(m.stages[0].thresholdMs, [5, null, null]);
});

test("compare figures: a rate of time reads as a duration a second", () => {
  const m = {
    before: 39181916920,
    after: 112069423100,
    diff: 72887506180,
    ci_low: 5.4e10,
    ci_high: 9.2e10,
    unit: "ns/s",
    verdict: "regressed",
  };
  assert.deepEqual(figures(m, fmtNs), {
    before: "39.2 s/s",
    after: "112 s/s",
    diff: "72.9 s/s",
    ci: "[54.0 s/s, 92.0 s/s]",
  });
});

test("the heat map's query ends just after the newest window's start", () => {
  assert.equal(heatmapQuery("offcpu", []), "type=offcpu");
  const ws = [
    { start_unix_ns: 1764000000000000000, end_unix_ns: 1764000001000000000 },
    { start_unix_ns: 1764000001000000000, end_unix_ns: 1764000001500000000 },
  ];
  // 1764000001.001: after the newest window's start, before the next window's (a second later)
  assert.equal(heatmapQuery("cpu", ws), "type=cpu&to=1764000001.001000");
  assert.equal(
    heatmapQuery(undefined, [{ start: "2026-11-29T21:04:05.250Z" }]),
    "type=cpu&to=1795986245.251000",
  );
});
