// SPDX-License-Identifier: GPL-2.0-only
// A fake tailprofd for the page: serves ui/dist at / and /ui/ and answers the JSON endpoints
// the page uses from fake_data.mjs. `node test/fake_server.mjs [PORT] [--windows N]
// [--stacks N]`; prints "listening URL". Never part of the product.
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { makeData, makeTree } from "./fake_data.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "..", "dist");
const arg = (name, def) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const port = Number(process.argv[2]) || 0;
const D = makeData({ windows: arg("--windows", 60), stacks: arg("--stacks", 3000) });
const trees = new Map();
const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "application/javascript",
  ".css": "text/css",
  ".txt": "text/plain",
};

function json(res, code, body) {
  const s = JSON.stringify(body);
  res.writeHead(code, { "Content-Type": "application/json" });
  res.end(s);
}

const server = createServer((req, res) => {
  const u = new URL(req.url, "http://x");
  const p = u.pathname;
  const q = u.searchParams;
  if (p === "/" || p.startsWith("/ui/")) {
    const f = p === "/" ? "index.html" : p.slice(4);
    try {
      const body = readFileSync(join(dist, f.replace(/\.\./g, "")));
      res.writeHead(200, {
        "Content-Type": TYPES[f.slice(f.lastIndexOf("."))] || "application/octet-stream",
        "Cache-Control": "no-cache",
      });
      return res.end(body);
    } catch {
      return json(res, 404, { error: "no such file" });
    }
  }
  switch (p) {
    case "/api/v1/status":
      return json(res, 200, {
        version: "fake",
        hostname: "fake-host",
        windows: D.n,
        max_windows: 360,
        window_ns: D.wns,
        samples: 1,
        received_samples: 1,
      });
    case "/api/v1/windows":
      return json(res, 200, { windows: D.windows });
    case "/api/v1/stages":
      return json(res, 200, { stages: [{ stage: "compute" }], windows: D.stageWindows });
    case "/api/v1/spikes":
      return json(res, 200, { spikes: D.spikes });
    case "/api/v1/snapshots":
      return json(res, 200, {
        snapshots: [{ name: "before-deploy", saved: "2026-12-01T10:00:00.000Z" }],
      });
    case "/api/v1/heatmap": {
      const max = Math.max(...D.heat.flatMap((w) => w.counts));
      return json(res, 200, {
        type: q.get("type") || "cpu",
        window_ns: D.wns,
        rows: 20,
        row_ns: D.wns / 20,
        max,
        windows: D.heat,
      });
    }
    case "/api/v1/flamegraph": {
      const spike = q.has("spike");
      const base = q.has("baseline") || q.has("baseline_from");
      const minShare = Number(q.get("min_share") || 0.0005);
      const k = spike + "/" + minShare;
      if (!trees.has(k)) trees.set(k, JSON.stringify(makeTree(D.stacks, { spike, minShare })));
      const t = JSON.parse(trees.get(k));
      const out = {
        type: q.get("type") || "cpu",
        unit: "samples",
        from: "",
        to: "",
        total: t.total,
        root: t.root,
        truncated_nodes: t.truncated_nodes,
      };
      if (base) out.baseline_total = t.baseline_total;
      return json(res, 200, out);
    }
    case "/api/v1/compare":
      return json(res, 200, JSON.parse(readFileSync(join(here, "fixtures", "compare.json"))));
  }
  if (p.startsWith("/api/v1/spikes/")) {
    const s = D.spikes.find((x) => x.id === decodeURIComponent(p.slice(15)));
    if (!s) return json(res, 404, { error: "no such spike" });
    return json(res, 200, {
      ...s,
      evidence: { spike_windows: [s.start] },
      requests: [
        {
          id: "123-456",
          stage: "compute",
          pid: 100,
          tid: 123,
          start: s.start,
          start_unix_ns: s.start_unix_ns + 1e8,
          duration_ns: 19e6,
          cpu_ns: 16e6,
          runq_ns: 2e6,
          offcpu_ns: 1e6,
          gc_ns: 0,
          accounting: "exact",
        },
      ],
    });
  }
  json(res, 404, { error: "unknown path " + p });
});
server.listen(port, "127.0.0.1", () =>
  console.log("listening http://127.0.0.1:" + server.address().port),
);
