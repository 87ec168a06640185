// SPDX-License-Identifier: GPL-2.0-only
// The timeline's series from /api/v1/windows and /api/v1/stages: one point per window, at the
// window's start (Unix seconds, as uPlot wants x), stage latencies joined to windows by start.
import { windowSpan } from "./range.js";

const num = (v) => (v == null || Number.isNaN(Number(v)) ? null : Number(v));

/** A latency in ns -> ms for a log scale: null (a gap) for missing, zero or negative values. */
export function logMs(ns) {
  const v = num(ns);
  return v == null || v <= 0 ? null : v / 1e6;
}

/** Builds the timeline: {spans: [{startNs, endNs}], x: [s], samples, drops, offcpuS, runqMs,
 * gcMs, stages: [{name, p95Ms: [], thresholdMs: [] | null}]}, each array one entry per window.
 * Accepts the windows' keys of docs/api.md (runq.p99_ns, offcpu.blocked_ns, gc.pause_ns,
 * drops.total) or the flat ones (runq_p99_ns, offcpu_ns, gc_pause_ns, drops as a number). A
 * stage's threshold is the window's threshold_ns (or baseline_p95_ns), else its configured one
 * from thresholds (a Map of stage name -> ns, /api/v1/status's stages). */
export function buildTimeline(windows, stagesJson, thresholds = new Map()) {
  const spans = windows.map((w) => windowSpan(w));
  const x = spans.map((s) => s.startNs / 1e9);
  const samples = windows.map((w) => num(w.samples));
  const drops = windows.map((w) =>
    typeof w.drops === "object" && w.drops ? num(w.drops.total) : num(w.drops),
  );
  const offcpuS = windows.map((w) => {
    const ns = w.offcpu_ns != null ? w.offcpu_ns : w.offcpu && w.offcpu.blocked_ns;
    return ns == null ? null : Number(ns) / 1e9;
  });
  const runqMs = windows.map((w) =>
    logMs(w.runq_p99_ns != null ? w.runq_p99_ns : w.runq && w.runq.p99_ns),
  );
  const gcMs = windows.map((w) =>
    logMs(w.gc_pause_ns != null ? w.gc_pause_ns : w.gc && w.gc.pause_ns),
  );
  const index = new Map(spans.map((s, i) => [s.startNs, i]));
  const byName = new Map();
  for (const sw of (stagesJson && stagesJson.windows) || []) {
    const i = index.get(windowSpan(sw).startNs);
    if (i == null) continue;
    for (const st of sw.stages || []) {
      let e = byName.get(st.stage);
      if (!e) {
        e = { name: st.stage, p95Ms: new Array(windows.length).fill(null), thresholdMs: null };
        byName.set(st.stage, e);
      }
      e.p95Ms[i] = logMs(st.p95_ns);
      const th =
        st.threshold_ns != null
          ? st.threshold_ns
          : st.baseline_p95_ns != null
            ? st.baseline_p95_ns
            : thresholds.get(st.stage);
      if (th != null) {
        if (!e.thresholdMs) e.thresholdMs = new Array(windows.length).fill(null);
        e.thresholdMs[i] = logMs(th);
      }
    }
  }
  const stages = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
  return { spans, x, samples, drops, offcpuS, runqMs, gcMs, stages };
}
