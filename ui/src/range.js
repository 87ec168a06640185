// SPDX-License-Identifier: GPL-2.0-only
// Range selection maths: times of the API (Unix ns as numbers, RFC 3339 strings), windows
// overlapping a range, brushes in pixels to ranges of whole windows, spikes to window indices.

const NS_PER_MS = 1e6;

/** Unix ns (number) -> RFC 3339 UTC, rounded to the millisecond, as the API writes them. */
export function rfc3339(ns) {
  return new Date(Math.round(ns / NS_PER_MS)).toISOString();
}

/** A window of /api/v1/windows (or /api/v1/heatmap) -> {startNs, endNs} in Unix ns. Uses
 * start_unix_ns/end_unix_ns when present, else the RFC 3339 strings; a window without an end
 * gets windowNs (the heat map's windows). */
export function windowSpan(w, windowNs = 0) {
  const startNs =
    w.start_unix_ns != null ? Number(w.start_unix_ns) : Date.parse(w.start) * NS_PER_MS;
  let endNs;
  if (w.end_unix_ns != null) endNs = Number(w.end_unix_ns);
  else if (w.end) endNs = Date.parse(w.end) * NS_PER_MS;
  else endNs = startNs + windowNs;
  return { startNs, endNs };
}

/** Indices [i0, i1] (inclusive) of the spans (sorted, oldest first) that overlap the half-open
 * range [fromNs, toNs), as the API selects windows; null when none does. */
export function overlapping(spans, fromNs, toNs) {
  let i0 = -1;
  let i1 = -1;
  for (let i = 0; i < spans.length; i++) {
    if (spans[i].endNs > fromNs && spans[i].startNs < toNs) {
      if (i0 < 0) i0 = i;
      i1 = i;
    }
  }
  return i0 < 0 ? null : [i0, i1];
}

/** Snaps a range (in either order) to the whole windows it overlaps: {i0, i1, fromNs, toNs}
 * with fromNs the first window's start and toNs the last one's end; null when it overlaps
 * none. A zero-length range selects the window holding the point. */
export function snapRange(spans, aNs, bNs) {
  let lo = Math.min(aNs, bNs);
  let hi = Math.max(aNs, bNs);
  if (hi === lo) hi = lo + 1;
  const r = overlapping(spans, lo, hi);
  if (!r) return null;
  return { i0: r[0], i1: r[1], fromNs: spans[r[0]].startNs, toNs: spans[r[1]].endNs };
}

/** Pixel x within a plot of width px showing [minNs, maxNs] -> Unix ns. */
export function pxToNs(x, width, minNs, maxNs) {
  if (width <= 0) return minNs;
  return minNs + (Math.max(0, Math.min(width, x)) / width) * (maxNs - minNs);
}

/** The query string of a range: "from=RFC3339&to=RFC3339", each end moved 1 ms inwards.
 * Unix ns past 2^53 are doubles here (256 ns apart) and the API takes milliseconds, while a
 * window's end is the next one's start: an end rounded the wrong way would add a neighbour
 * (the API's ranges are half-open). Windows are at least 100 ms, so 1 ms in keeps the same
 * windows. */
export function rangeQuery(r) {
  let fromMs = Math.floor(r.fromNs / NS_PER_MS) + 1;
  let toMs = Math.ceil(r.toNs / NS_PER_MS) - 1;
  if (toMs <= fromMs) fromMs = toMs = Math.round((r.fromNs + r.toNs) / 2 / NS_PER_MS);
  const iso = (ms) => new Date(ms).toISOString();
  return (
    "from=" +
    encodeURIComponent(iso(fromMs)) +
    "&to=" +
    encodeURIComponent(iso(toMs === fromMs ? toMs + 1 : toMs))
  );
}

/** For each spike of /api/v1/spikes, the indices of the spans its episode overlaps:
 * [{id, i0, i1}] (spikes outside every span left out). */
export function spikeWindows(spans, spikes) {
  const out = [];
  for (const s of spikes) {
    const { startNs, endNs } = windowSpan(s);
    const r = overlapping(spans, startNs, Math.max(endNs, startNs + 1));
    if (r) out.push({ id: s.id, i0: r[0], i1: r[1] });
  }
  return out;
}

/** The time a spike is drawn as a vertical line at: an alert's startsAt, a mark's time (the
 * middle of its before/after episode), null for a detected spike (drawn as a band only). */
export function markTimeNs(s) {
  if (s.source === "alertmanager" && s.alert_starts_unix_ns != null)
    return Number(s.alert_starts_unix_ns);
  if (s.source === "mark") {
    const { startNs, endNs } = windowSpan(s);
    return (startNs + endNs) / 2;
  }
  return null;
}

/** A duration in ns for people: "850 ns", "12.3 us", "4.56 ms", "1.20 s". */
export function fmtNs(ns) {
  if (ns == null || Number.isNaN(ns)) return "-";
  const a = Math.abs(ns);
  if (a < 1e3) return ns.toFixed(0) + " ns";
  if (a < 1e6) return (ns / 1e3).toPrecision(3) + " us";
  if (a < 1e9) return (ns / 1e6).toPrecision(3) + " ms";
  return (ns / 1e9).toPrecision(3) + " s";
}
