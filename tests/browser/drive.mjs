// SPDX-License-Identifier: GPL-2.0-only
// Drives tailprofd's page in headless Chromium (playwright-core from ui/node_modules, Debian's
// /usr/bin/chromium) for test_ui.py: clicks as a person would, saves a screenshot of each view,
// and prints what the page showed as one JSON object (test_ui.py asserts on it).
// Usage: node drive.mjs CONFIG_JSON — {url, shots: dir, spike: the mark's id to click,
// comm: the workload's process name, hot, burst: its functions, quietFrom, quietTo: Unix ns
// between two bursts to brush, chromium: path}.
import { createRequire } from "node:module";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, "..", "..", "ui", "package.json"));
const { chromium } = require("playwright-core");
const cfg = JSON.parse(process.argv[2]);
const out = { errors: [], console: [] };

const browser = await chromium.launch({
  executablePath: cfg.chromium || "/usr/bin/chromium",
  args: ["--no-sandbox"],
});
try {
  const page = await browser.newPage({
    viewport: { width: 1400, height: 1000 },
    deviceScaleFactor: 1,
  });
  page.on("pageerror", (e) => out.errors.push(e.message));
  page.on("console", (m) => m.type() === "error" && out.console.push(m.text()));
  const shot = (name) => page.screenshot({ path: join(cfg.shots, name + ".png"), fullPage: true });
  const t0 = Date.now();
  await page.goto(cfg.url);
  await page.waitForFunction(() => window.tailprofUI && window.tailprofUI.S.loads > 0, null, {
    timeout: 15000,
  });
  out.firstPaintMs = Date.now() - t0;
  const counts = () =>
    page.evaluate(() => ({
      loads: window.tailprofUI.S.loads,
      windows: window.tailprofUI.S.windows.length,
    }));
  const atStart = await counts();
  // the marks are applied at a window close: the page shows them after a refresh
  await page.waitForFunction(
    (id) => window.tailprofUI.timeline.bands.some((b) => b.id === id),
    cfg.spike,
    { timeout: 20000 },
  );
  out.timeline = await page.evaluate(() => {
    const ui = window.tailprofUI;
    const m = ui.timeline.model;
    return {
      windows: m.x.length,
      apiWindows: ui.S.windows.length,
      spans: m.spans,
      bands: ui.timeline.bands,
      stages: m.stages.map((s) => s.name),
      plotPoints: ui.timeline.plots[0].data[0].length,
    };
  });
  await shot("timeline");

  // click the middle of the spike's band on the timeline
  const pt = await page.evaluate((id) => {
    const ui = window.tailprofUI;
    const b = ui.timeline.bands.find((x) => x.id === id);
    const sp = ui.timeline.model.spans;
    return ui.timeline.pagePoint((sp[b.i0].startNs + sp[b.i1].endNs) / 2);
  }, cfg.spike);
  const loads = await page.evaluate(() => window.tailprofUI.S.flameLoads);
  await page.mouse.click(pt.x, pt.y);
  await page.waitForFunction((n) => window.tailprofUI.S.flameLoads > n, loads, { timeout: 20000 });
  const flameInfo = ({ comm, hotName, burstName }) => {
    const ui = window.tailprofUI;
    const f = ui.flame;
    const root = f.data.root;
    const proc = root.children.find((c) => c.kind === "process" && c.name === comm);
    if (!proc) return { processes: root.children.map((c) => c.name), query: ui.S.flameQuery };
    let n = proc;
    const path = [];
    while (n.children.length) {
      n = n.children.reduce((a, c) => (c.value > a.value ? c : a));
      path.push(n.name);
    }
    const pixel = (node) => {
      const r = f.pageRect(node);
      if (!r) return null;
      const b = f.canvas.getBoundingClientRect();
      const d = f.canvas
        .getContext("2d")
        .getImageData(Math.round(r.x - b.left + 1), Math.round(r.y - b.top + 3), 1, 1).data;
      return [d[0], d[1], d[2]];
    };
    const find = (name) => {
      const st = [proc];
      while (st.length) {
        const x = st.pop();
        if (x.name === name) return x;
        st.push(...x.children);
      }
      return null;
    };
    const about = (name) => {
      const x = find(name);
      return x && { value: x.value, baseline: x.baseline, pixel: pixel(x), colour: f.colourOf(x) };
    };
    return {
      query: ui.S.flameQuery,
      selection: ui.S.spike && ui.S.spike.id,
      diff: f.diff,
      total: f.total,
      baselineTotal: f.baselineTotal,
      processValue: proc.value,
      widestPath: path,
      hot: about(hotName),
      burst: about(burstName),
    };
  };
  const info = (comm) => page.evaluate(flameInfo, { comm, hotName: cfg.hot, burstName: cfg.burst });
  out.spikeFlame = await info(cfg.comm);
  await shot("flame-spike-diff");
  // search highlights
  await page.fill("#f-search", cfg.burst);
  out.search = await page.evaluate(() => document.getElementById("f-found").textContent);
  await shot("flame-search");
  await page.fill("#f-search", "");

  // brushing the timeline between two bursts: that range's flame graph (not differential)
  await page.click("nav button[data-tab=timeline]");
  const loads2 = await page.evaluate(() => window.tailprofUI.S.flameLoads);
  // the drag as one script, so that no refresh (which rescales the time axis) comes between
  // finding the points and pressing, moving and releasing the button
  await page.evaluate(
    ([from, to]) => {
      const tl = window.tailprofUI.timeline;
      const over = tl.plots[0].over;
      const [a, b] = [tl.pagePoint(from), tl.pagePoint(to)];
      const ev = (type, x, target = over) =>
        target.dispatchEvent(
          // (uPlot ignores a move without movement while the button is down)
          new MouseEvent(type, {
            clientX: x,
            clientY: a.y,
            movementX: 1,
            bubbles: true,
            view: window,
          }),
        );
      // a real pointer enters the plot first: uPlot takes the plot's position then (it keeps
      // the one it last took, which a layout change since, a tab shown, leaves stale)
      ev("mouseenter", a.x);
      ev("mousemove", a.x);
      ev("mousedown", a.x);
      for (let i = 1; i <= 8; i++) ev("mousemove", a.x + ((b.x - a.x) * i) / 8);
      ev("mouseup", b.x);
      ev("click", b.x);
    },
    [cfg.quietFrom, cfg.quietTo],
  );
  await page.waitForFunction((n) => window.tailprofUI.S.flameLoads > n, loads2, { timeout: 20000 });
  out.rangeFlame = await info(cfg.comm);
  out.rangeFlame.range = await page.evaluate(() => window.tailprofUI.S.range);
  await shot("flame-range");

  // the heat map: its brightest cells, then two clicks select a range
  await page.click("nav button[data-tab=heatmap]");
  out.heat = await page.evaluate((n) => {
    const ui = window.tailprofUI;
    const h = ui.S.heat;
    const cells = [];
    h.windows.forEach((w, col) =>
      w.counts.forEach((count, row) =>
        cells.push({ col, row, count, startNs: ui.heat.starts[col] + row * h.row_ns }),
      ),
    );
    return { rows: h.rows, rowNs: h.row_ns, columns: h.windows.length, max: h.max, cells };
  });
  await shot("heatmap");
  const c0 = await page.evaluate(() => window.tailprofUI.heat.pagePoint(2, 3));
  const c1 = await page.evaluate(() => window.tailprofUI.heat.pagePoint(4, 10));
  const loads3 = await page.evaluate(() => window.tailprofUI.S.flameLoads);
  await page.mouse.click(c0.x, c0.y);
  await page.mouse.click(c1.x, c1.y);
  await page.waitForFunction((n) => window.tailprofUI.S.flameLoads > n, loads3, { timeout: 20000 });
  out.heatSelection = await page.evaluate(() => {
    const ui = window.tailprofUI;
    return {
      range: ui.S.range,
      expectFrom: ui.heat.starts[2] + 3 * ui.S.heat.row_ns,
      expectTo: ui.heat.starts[4] + 11 * ui.S.heat.row_ns,
      query: ui.S.flameQuery,
    };
  });

  // spikes: the list, then the mark's details
  await page.click("nav button[data-tab=spikes]");
  await page.click(`tr.spike-row[data-id="${cfg.spike}"]`);
  await page.waitForSelector(".spike-detail h3", { timeout: 10000 });
  out.spikes = await page.evaluate(() => ({
    rows: document.querySelectorAll("tr.spike-row").length,
    detail: document.querySelector(".spike-detail").innerText.slice(0, 400),
  }));
  await shot("spikes");

  // compare: the first and second halves of the ring
  await page.click("nav button[data-tab=compare]");
  await page.evaluate(() => {
    const ui = window.tailprofUI;
    const sp = ui.timeline.model.spans.filter((s, i, a) => i < a.length - 1);
    const mid = Math.floor(sp.length / 2);
    const iso = (ns) => new Date(Math.round(ns / 1e6)).toISOString();
    document.querySelector(".before-from").value = iso(sp[0].startNs);
    document.querySelector(".before-to").value = iso(sp[mid - 1].endNs);
    document.querySelector(".after-from").value = iso(sp[mid].startNs);
    document.querySelector(".after-to").value = iso(sp[sp.length - 1].endNs);
  });
  await page.click("button.run-compare");
  await page.waitForFunction(
    () => document.querySelector(".compare-out table, .compare-out .error"),
    null,
    { timeout: 30000 },
  );
  out.compare = await page.evaluate(() => ({
    rows: document.querySelectorAll(".compare-out tbody tr").length,
    error: (document.querySelector(".compare-out .error") || {}).textContent || null,
    verdicts: [...document.querySelectorAll(".compare-out tbody tr")].map((r) => r.className),
  }));
  await shot("compare");
  out.pageErrors = await page.evaluate(() => window.tailprofUI.S.errors);
  // the page refreshes itself after drains (it polls every 2 s): more loads, more windows.
  // On a quiet machine the driving above can take less than that: wait for one.
  await page.waitForFunction(
    (n) => window.tailprofUI.S.loads > n.loads && window.tailprofUI.S.windows.length > n.windows,
    atStart,
    { timeout: 15000 },
  );
  out.refresh = { atStart, atEnd: await counts() };
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
