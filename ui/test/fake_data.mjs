// SPDX-License-Identifier: GPL-2.0-only
// A stand-in for tailprofd's JSON API (docs/api.md and the heatmap/flamegraph endpoints), made
// up from a seeded generator: for developing the page without a daemon and for the browser
// benchmark (a full ring of 360 windows and 100,000 distinct stacks). Deterministic per seed.

function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

const iso = (ns) => new Date(Math.round(ns / 1e6)).toISOString();

/** opts: {windows: N, windowNs, stacks: distinct stacks, endNs}. Returns the fake's data: the
 * JSON of each endpoint (functions for those with parameters). */
export function makeData(opts = {}) {
  const n = opts.windows || 60;
  const wns = opts.windowNs || 10e9;
  const end = opts.endNs || Math.floor(Date.now() / 1000) * 1e9;
  const t0 = end - n * wns;
  const rand = rng(opts.seed || 7);
  const windows = [];
  const stageWindows = [];
  const heat = [];
  for (let i = 0; i < n; i++) {
    const s = t0 + i * wns;
    const burst = i % 4 === 3;
    windows.push({
      start: iso(s),
      start_unix_ns: s,
      end: iso(s + wns),
      end_unix_ns: s + wns,
      current: i === n - 1,
      samples: Math.round(900 + 100 * rand() + (burst ? 600 : 0)),
      idle_samples: 1000,
      drops: { total: i === 10 ? 5 : 0 },
      distinct_stacks: 300,
      processes: 12,
      runq: {
        count: 500,
        p50_ns: 20000,
        p95_ns: 200000,
        p99_ns: Math.round(400000 + 300000 * rand()),
      },
      offcpu: { samples: 40, blocked_ns: Math.round(2e9 + 1e9 * rand()) },
      gc: { pauses: i % 6 === 0 ? 2 : 0, pause_ns: i % 6 === 0 ? 8e6 : 0 },
    });
    const p95 = burst ? 18e6 : 3e6 + 5e5 * rand();
    stageWindows.push({
      start: iso(s),
      start_unix_ns: s,
      end_unix_ns: s + wns,
      stages: [
        {
          stage: "compute",
          count: 200,
          p50_ns: 3e6,
          p95_ns: Math.round(p95),
          p99_ns: Math.round(p95 * 1.1),
          threshold_ns: 6e6,
        },
      ],
    });
    const counts = [];
    for (let r = 0; r < 20; r++)
      counts.push(Math.round(40 + 10 * rand() + (burst && r >= 6 && r < 9 ? 200 : 0)));
    heat.push({ start: iso(s), start_unix_ns: s, counts });
  }
  const spikes = [];
  for (let i = 7; i < n - 1; i += 4) {
    const s = t0 + i * wns;
    spikes.push({
      id: "compute-" + iso(s).replace(/[-:]/g, "").replace(/\.\d+/, ""),
      stage: "compute",
      kind: "spike",
      source: "detected",
      start: iso(s),
      start_unix_ns: s,
      end: iso(s + wns),
      end_unix_ns: s + wns,
      open: false,
      windows: 1,
      p95_ns: 18e6,
      baseline_p95_ns: 3.2e6,
      peak_p95_ns: 18e6,
      request_count: 200,
      pattern: "periodic",
      period_ns: 4 * wns,
      causes: [
        {
          kind: "cpu",
          share: 0.8,
          summary: "on-CPU time rose: compute_burst_path",
          spike_median_ns: 18e6,
          baseline_median_ns: 3e6,
          delta_ns: 15e6,
          functions: [
            {
              function: "compute_burst_path",
              spike_samples: 500,
              baseline_samples: 10,
              spike_share: 0.4,
              baseline_share: 0.01,
            },
          ],
        },
        {
          kind: "runq",
          share: 0.1,
          summary: "waiting for a CPU",
          spike_median_ns: 2e5,
          baseline_median_ns: 1e5,
          delta_ns: 1e5,
        },
        {
          kind: "offcpu",
          share: 0.05,
          summary: "blocked",
          spike_median_ns: 0,
          baseline_median_ns: 0,
          delta_ns: 0,
        },
        {
          kind: "gc",
          share: 0.05,
          summary: "no GC",
          spike_median_ns: 0,
          baseline_median_ns: 0,
          delta_ns: 0,
        },
      ],
    });
  }
  spikes.push({
    id: "mark-" + (n - 2),
    stage: "",
    kind: "spike",
    source: "mark",
    reason: "deploy",
    start: iso(t0 + (n - 3) * wns),
    start_unix_ns: t0 + (n - 3) * wns,
    end: iso(t0 + (n - 1) * wns),
    end_unix_ns: t0 + (n - 1) * wns,
    windows: 2,
    causes: [],
  });
  return { windows, stageWindows, heat, spikes, t0, wns, n, stacks: opts.stacks || 3000, rand };
}

/** A flame graph tree of `stacks` distinct stacks (made up, depth 4-30) with the hot function
 * `hot_loop` under app/main, and with spike=true `compute_burst_path` much wider than in the
 * baseline. Trimmed as the server does: nodes whose value and baseline are both under minShare
 * of their totals merged into "(other)". */
export function makeTree(stacks, { spike = false, minShare = 0.0005, seed = 11 } = {}) {
  const rand = rng(seed);
  const root = {
    name: "all",
    kind: "other",
    value: 0,
    self: 0,
    baseline: 0,
    children: [],
    map: new Map(),
  };
  const procs = ["app", "db", "kworker/0:1", "sshd", "python3"];
  const add = (path, v, b) => {
    let nd = root;
    root.value += v;
    root.baseline += b;
    for (const [name, kind] of path) {
      let c = nd.map.get(name);
      if (!c) {
        c = { name, kind, value: 0, self: 0, baseline: 0, children: [], map: new Map() };
        nd.map.set(name, c);
        nd.children.push(c);
      }
      c.value += v;
      c.baseline += b;
      nd = c;
    }
    nd.self += v;
  };
  for (let i = 0; i < stacks; i++) {
    const p = procs[Math.floor(rand() * rand() * procs.length)];
    const depth = 4 + Math.floor(rand() * 26);
    const path = [
      [p, "process"],
      ["main", "user"],
    ];
    for (let d = 2; d < depth; d++)
      path.push([
        "fn_" + Math.floor(rand() * (d < 5 ? 6 : 40)) + "_" + d,
        d > depth - 3 && p.startsWith("kworker") ? "kernel" : "user",
      ]);
    const v = Math.ceil(rand() * 5);
    add(path, v, Math.ceil(rand() * 5));
  }
  add(
    [
      ["app", "process"],
      ["main", "user"],
      ["run", "user"],
      ["hot_loop", "user"],
    ],
    Math.round(stacks * 1.5),
    Math.round(stacks * 1.5),
  );
  add(
    [
      ["app", "process"],
      ["main", "user"],
      ["run", "user"],
      ["compute", "user"],
      ["compute_burst_path", "user"],
    ],
    spike ? stacks * 2 : 50,
    50,
  );
  // trim
  const total = root.value;
  const btotal = root.baseline;
  let truncated = 0;
  const trim = (nd) => {
    const keep = [];
    const other = { name: "(other)", kind: "other", value: 0, self: 0, baseline: 0, children: [] };
    for (const c of nd.children) {
      if (c.value < minShare * total && c.baseline < minShare * btotal) {
        other.value += c.value;
        other.self += c.value;
        other.baseline += c.baseline;
        truncated++;
      } else keep.push(c);
    }
    if (other.value || other.baseline) keep.push(other);
    keep.sort((a, b) => b.value - a.value);
    nd.children = keep;
    delete nd.map;
    for (const c of keep) if (c.children.length) trim(c);
    delete nd.map;
  };
  trim(root);
  return { root, total, baseline_total: btotal, truncated_nodes: truncated };
}
