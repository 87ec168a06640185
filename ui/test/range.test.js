// SPDX-License-Identifier: GPL-2.0-only
// Range maths: window spans, overlap as the API selects, snapping, spikes to windows.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  rfc3339,
  windowSpan,
  overlapping,
  snapRange,
  pxToNs,
  rangeQuery,
  spikeWindows,
  markTimeNs,
  fmtNs,
} from "../src/range.js";

const S = 1e9;
const T0 = 1796000000 * S;
const spans = [0, 1, 2, 3].map((i) => ({ startNs: T0 + i * 10 * S, endNs: T0 + (i + 1) * 10 * S }));

test("rfc3339 and windowSpan", () => {
  assert.equal(rfc3339(1796000000250e6), "2026-11-30T00:53:20.250Z");
  assert.deepEqual(windowSpan({ start_unix_ns: 5, end_unix_ns: 9 }), { startNs: 5, endNs: 9 });
  assert.deepEqual(windowSpan({ start: "2026-11-30T00:53:20.250Z" }, 1e9), {
    startNs: 1796000000250e6,
    endNs: 1796000001250e6,
  });
});

test("overlapping is half-open, as the API's ranges", () => {
  assert.deepEqual(overlapping(spans, T0 + 10 * S, T0 + 20 * S), [1, 1]);
  assert.deepEqual(overlapping(spans, T0 + 9 * S, T0 + 21 * S), [0, 2]);
  assert.equal(overlapping(spans, T0 + 40 * S, T0 + 50 * S), null);
});

test("snapRange snaps either order to whole windows; a point selects its window", () => {
  assert.deepEqual(snapRange(spans, T0 + 25 * S, T0 + 12 * S), {
    i0: 1,
    i1: 2,
    fromNs: T0 + 10 * S,
    toNs: T0 + 30 * S,
  });
  assert.deepEqual(snapRange(spans, T0 + 15 * S, T0 + 15 * S), {
    i0: 1,
    i1: 1,
    fromNs: T0 + 10 * S,
    toNs: T0 + 20 * S,
  });
  assert.equal(snapRange(spans, T0 - 5 * S, T0 - S), null);
});

test("pxToNs clamps to the plot", () => {
  assert.equal(pxToNs(50, 200, 0, 400), 100);
  assert.equal(pxToNs(-10, 200, 0, 400), 0);
  assert.equal(pxToNs(300, 200, 0, 400), 400);
});

test("rangeQuery writes RFC 3339", () => {
  assert.equal(
    rangeQuery({ fromNs: 1796000000000e6, toNs: 1796000010000e6 }),
    "from=2026-11-30T00%3A53%3A20.001Z&to=2026-11-30T00%3A53%3A29.999Z",
  );
});

test("spikeWindows and markTimeNs", () => {
  const spikes = [
    { id: "a", start_unix_ns: T0 + 10 * S, end_unix_ns: T0 + 30 * S, source: "detected" },
    { id: "m", start_unix_ns: T0 + 30 * S, end_unix_ns: T0 + 40 * S, source: "mark" },
    { id: "old", start_unix_ns: T0 - 20 * S, end_unix_ns: T0 - 10 * S, source: "detected" },
  ];
  assert.deepEqual(spikeWindows(spans, spikes), [
    { id: "a", i0: 1, i1: 2 },
    { id: "m", i0: 3, i1: 3 },
  ]);
  assert.equal(markTimeNs(spikes[0]), null);
  assert.equal(markTimeNs(spikes[1]), T0 + 35 * S);
  assert.equal(markTimeNs({ source: "alertmanager", alert_starts_unix_ns: 7 }), 7);
});

test("fmtNs", () => {
  assert.equal(fmtNs(850), "850 ns");
  assert.equal(fmtNs(12345), "12.3 us");
  assert.equal(fmtNs(4560000), "4.56 ms");
  assert.equal(fmtNs(1.2e9), "1.20 s");
});

test("rangeQuery keeps a tiny range non-empty", () => {
  assert.equal(
    rangeQuery({ fromNs: 1796000000000e6, toNs: 1796000000001e6 }),
    "from=2026-11-30T00%3A53%3A20.001Z&to=2026-11-30T00%3A53%3A20.002Z",
  );
});
