// SPDX-License-Identifier: GPL-2.0-only
// The compare report (/api/v1/compare) as table rows: every object with a "verdict" is a
// metric, named by its path in the report ("stages.compute.p95", "functions.hot_loop.cpu").

/** Walks report and returns [{path, m}] for each metric object m (one with a verdict), in the
 * report's order; conditions are skipped. An array element is named by its "stage" or
 * "function" key, else its index. */
export function metrics(report) {
  const out = [];
  const walk = (v, path) => {
    if (!v || typeof v !== "object") return;
    if (!Array.isArray(v) && typeof v.verdict === "string") {
      out.push({ path: path.join("."), m: v });
      return;
    }
    if (Array.isArray(v)) {
      v.forEach((e, i) => {
        const name = e && typeof e === "object" ? e.stage || e.function || String(i) : String(i);
        walk(e, path.concat(name));
      });
      return;
    }
    for (const [k, c] of Object.entries(v)) {
      if (path.length === 0 && (k === "conditions" || k === "regressions")) continue;
      if (k === "stage" || k === "function") continue;
      walk(c, path.concat(k));
    }
  };
  walk(report, []);
  return out;
}

/** A metric's figures as strings: {before, after, diff, ci}; durations (keys ending in _ns, or
 * a unit "ns/...") formatted by fmtNs, others with their unit. */
export function figures(m, fmtNs) {
  const ns = m.before_ns !== undefined || m.diff_ns !== undefined;
  const get = (k) => (ns ? m[k + "_ns"] : m[k]);
  const f = (v) => {
    if (v == null) return "-";
    if (ns) return fmtNs(v);
    // a rate of time ("ns/s": off-CPU time a second) reads as a duration a second
    if (m.unit && m.unit.startsWith("ns/")) return fmtNs(v) + m.unit.slice(2);
    const s = Math.abs(v) >= 100 ? Math.round(v).toLocaleString("en-US") : Number(v).toPrecision(3);
    return m.unit ? s + " " + m.unit : s;
  };
  const lo = get("ci_low");
  const hi = get("ci_high");
  return {
    before: f(get("before")),
    after: f(get("after")),
    diff: f(get("diff")),
    ci: lo == null && hi == null ? "-" : "[" + f(lo) + ", " + f(hi) + "]",
  };
}
