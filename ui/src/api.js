// SPDX-License-Identifier: GPL-2.0-only
// The JSON API as the page uses it: GET with errors as exceptions carrying the server's
// {"error": ...} sentence, and the query strings of the flame graph and pprof links. Every call
// carries the tab's API token when it has one (auth.js).
import { rangeQuery, windowSpan } from "./range.js";
import { apiFetch } from "./auth.js";

/** GET path -> parsed JSON; throws Error(message) with the server's error sentence on 4xx/5xx
 * (a 401 also shows the token form: auth.js). */
export async function getJSON(path) {
  const r = await apiFetch(path, { cache: "no-store" });
  const text = await r.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(path.split("?")[0] + ": HTTP " + r.status + " " + text.slice(0, 200));
  }
  if (!r.ok) throw new Error(path.split("?")[0] + ": " + (body.error || "HTTP " + r.status));
  return body;
}

function push(parts, k, v) {
  if (v !== undefined && v !== null && v !== "") parts.push(k + "=" + encodeURIComponent(v));
}

/** The query of /api/v1/flamegraph for a view: q = {type, range: {fromNs, toNs} | null,
 * spike: ID | null, baseline: "spike" | {fromNs, toNs} | null, pid, comm, stage, container,
 * minShare}. A spike takes precedence over a range; no range and no spike: every window. */
export function flamegraphQuery(q) {
  const parts = [];
  push(parts, "type", q.type || "cpu");
  if (q.spike) push(parts, "spike", q.spike);
  else if (q.range) parts.push(rangeQuery(q.range));
  if (q.baseline === "spike" && q.spike) parts.push("baseline=1");
  else if (q.baseline && q.baseline.fromNs != null) {
    const b = rangeQuery(q.baseline)
      .replace("from=", "baseline_from=")
      .replace("&to=", "&baseline_to=");
    parts.push(b);
  }
  push(parts, "pid", q.pid);
  push(parts, "comm", q.comm);
  push(parts, "stage", q.stage);
  push(parts, "container", q.container);
  if (q.minShare != null) push(parts, "min_share", q.minShare);
  return parts.join("&");
}

/** The query of /api/v1/profile (gzip pprof) for the same selection as flamegraphQuery: the
 * range form with its filters, or the spike form (type, stage; its own windows). */
export function profileQuery(q) {
  const parts = [];
  push(parts, "type", q.type || "cpu");
  if (q.spike) {
    push(parts, "spike", q.spike);
    push(parts, "stage", q.stage);
    return parts.join("&");
  }
  if (q.range) parts.push(rangeQuery(q.range));
  push(parts, "pid", q.pid);
  push(parts, "comm", q.comm);
  push(parts, "stage", q.stage);
  push(parts, "container", q.container);
  return parts.join("&");
}

/** The query of /api/v1/heatmap for type ("cpu" | "offcpu") over the windows the timeline shows
 * (/api/v1/windows, oldest first): to= just after the newest one's start (Unix seconds, to the
 * microsecond), so a window opened since then is left out and the heat map's columns are the
 * timeline's windows. No windows: the whole ring. */
export function heatmapQuery(type, windows) {
  const parts = [];
  push(parts, "type", type || "cpu");
  if (windows && windows.length) {
    // 1 ms after the start: a JSON integer of Unix ns reads back within 128 ns
    const toNs = windowSpan(windows[windows.length - 1]).startNs + 1e6;
    push(parts, "to", (toNs / 1e9).toFixed(6));
  }
  return parts.join("&");
}
