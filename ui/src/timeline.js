// SPDX-License-Identifier: GPL-2.0-only
// The timeline view: two uPlot charts with a shared cursor, one point per window. Top: CPU
// samples, drops and off-CPU seconds; bottom (log scale, ms): run-queue p99, GC pause time and
// each stage's p95 with its threshold. Spike episodes are shaded bands, marks and alerts
// vertical lines; the legend shows the hovered window's figures; dragging selects a range,
// clicking a band selects its spike, clicking elsewhere selects the window.
import uPlot from "uplot";
import { buildTimeline } from "./timelinedata.js";
import { spikeWindows, markTimeNs, snapRange, fmtNs } from "./range.js";

const PALETTE = ["#7b3294", "#008837", "#e66101", "#0571b0", "#ca0020", "#5e3c99", "#1b7837"];

/** A timeline in container; opts.onRange({fromNs, toNs, i0, i1}), opts.onSpike(spike). Call
 * update(windows, stagesJson, spikes, selection, thresholds) with fresh data. */
export class Timeline {
  constructor(container, opts) {
    this.el = container;
    this.opts = opts;
    this.plots = [];
    this.key = "";
    this.model = null;
    this.spikes = [];
    this.bands = [];
    this.selection = null;
    window.addEventListener("resize", () => this.resize());
    document.addEventListener("mouseup", () => {
      this.dragging = false;
      const p = this.pending;
      this.pending = null;
      // after uPlot's own mouseup (the selection is read against the old scale)
      if (p) setTimeout(() => this.update(...p), 0);
    });
  }

  width() {
    return Math.max(400, this.el.clientWidth - 10);
  }

  resize() {
    for (const p of this.plots) p.setSize({ width: this.width(), height: p.height });
  }

  /** Redraws with fresh data; the charts are rebuilt only when the set of series changes. */
  update(windows, stagesJson, spikes, selection, thresholds) {
    // a refresh while a range is being dragged would move the times under the mouse: later
    if (this.dragging) {
      this.pending = [windows, stagesJson, spikes, selection, thresholds];
      return;
    }
    const m = buildTimeline(windows, stagesJson, thresholds);
    this.model = m;
    this.spikes = spikes;
    this.bands = spikeWindows(m.spans, spikes);
    this.selection = selection;
    const key = m.stages.map((s) => s.name + (s.thresholdMs ? "+t" : "")).join(",");
    const data = this.data(m);
    if (key !== this.key || !this.plots.length) {
      this.key = key;
      this.build(m, data);
    } else {
      this.plots[0].setData(data[0]);
      this.plots[1].setData(data[1]);
    }
  }

  data(m) {
    const lat = [m.x, m.runqMs, m.gcMs];
    for (const s of m.stages) {
      lat.push(s.p95Ms);
      if (s.thresholdMs) lat.push(s.thresholdMs);
    }
    return [[m.x, m.samples, m.drops, m.offcpuS], lat];
  }

  build(m, data) {
    for (const p of this.plots) p.destroy();
    this.el.replaceChildren();
    const overlay = (u) => this.drawOverlay(u);
    const common = (title, height) => ({
      title,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"),
      width: this.width(),
      height,
      cursor: { sync: { key: "tailprof-timeline" }, drag: { x: true, y: false, setScale: false } },
      select: { show: true },
      hooks: { draw: [overlay], setSelect: [(u) => this.selected(u)] },
    });
    const count = (u, v) => (v == null ? "-" : v.toLocaleString());
    const load = new uPlot(
      {
        ...common("CPU samples, drops, off-CPU time", 200),
        scales: { x: { time: true }, n: { auto: true }, s: { auto: true } },
        axes: [
          {},
          { scale: "n", label: "samples" },
          { scale: "s", side: 1, label: "off-CPU s", grid: { show: false } },
        ],
        series: [
          { label: "window" },
          { label: "CPU samples", scale: "n", stroke: "#d7301f", width: 1.5, value: count },
          { label: "drops", scale: "n", stroke: "#555", dash: [4, 3], value: count },
          {
            label: "off-CPU",
            scale: "s",
            stroke: "#2c7fb8",
            value: (u, v) => (v == null ? "-" : fmtNs(v * 1e9)),
          },
        ],
      },
      data[0],
      this.el,
    );
    const ms = (u, v) => (v == null ? "-" : fmtNs(v * 1e6));
    const series = [
      { label: "window" },
      { label: "run-queue p99", scale: "ms", stroke: "#6a51a3", value: ms, spanGaps: false },
      { label: "GC pause", scale: "ms", stroke: "#238b45", value: ms },
    ];
    m.stages.forEach((s, i) => {
      const c = PALETTE[i % PALETTE.length];
      series.push({ label: s.name + " p95", scale: "ms", stroke: c, width: 2, value: ms });
      if (s.thresholdMs)
        series.push({
          label: s.name + " threshold",
          scale: "ms",
          stroke: c,
          dash: [6, 4],
          value: ms,
        });
    });
    const lat = new uPlot(
      {
        ...common("Latency (log scale): run-queue p99, GC pauses, stage p95 and threshold", 220),
        scales: { x: { time: true }, ms: { distr: 3, log: 10 } },
        axes: [
          {},
          {
            scale: "ms",
            label: "ms",
            values: (u, vals) => vals.map((v) => (v == null ? "" : +v.toPrecision(3) + "")),
          },
          // an empty right axis as wide as the top chart's, so both time axes line up
          {
            scale: "ms",
            side: 1,
            label: " ",
            values: (u, vals) => vals.map(() => ""),
            grid: { show: false },
            ticks: { show: false },
          },
        ],
        series,
      },
      data[1],
      this.el,
    );
    this.plots = [load, lat];
    for (const u of this.plots) {
      u.over.addEventListener("click", (e) => this.click(u, e));
      u.over.addEventListener("mousedown", () => (this.dragging = true));
    }
  }

  drawOverlay(u) {
    const m = this.model;
    if (!m || !m.spans.length) return;
    const ctx = u.ctx;
    const top = u.bbox.top;
    const hgt = u.bbox.height;
    const xAt = (ns) => u.valToPos(ns / 1e9, "x", true);
    ctx.save();
    if (this.selection) {
      const x0 = xAt(this.selection.fromNs);
      const x1 = xAt(this.selection.toNs);
      ctx.fillStyle = "rgba(60,120,220,0.10)";
      ctx.fillRect(x0, top, Math.max(1, x1 - x0), hgt);
    }
    for (const b of this.bands) {
      const x0 = xAt(m.spans[b.i0].startNs);
      const x1 = xAt(m.spans[b.i1].endNs);
      ctx.fillStyle = "rgba(230,60,40,0.16)";
      ctx.fillRect(x0, top, Math.max(2, x1 - x0), hgt);
    }
    for (const s of this.spikes) {
      const t = markTimeNs(s);
      if (t == null) continue;
      const x = xAt(t);
      ctx.strokeStyle = s.source === "alertmanager" ? "#b30000" : "#333";
      ctx.setLineDash([3, 3]);
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + hgt);
      ctx.stroke();
    }
    ctx.restore();
  }

  selected(u) {
    if (u.select.width < 3) return;
    const a = u.posToVal(u.select.left, "x") * 1e9;
    const b = u.posToVal(u.select.left + u.select.width, "x") * 1e9;
    const r = snapRange(this.model.spans, a, b);
    // the click that ends the drag comes next: it is not a click on a window
    this.dragged = true;
    for (const p of this.plots) p.setSelect({ left: 0, width: 0, top: 0, height: 0 }, false);
    if (r) this.opts.onRange(r);
  }

  click(u, e) {
    if (this.dragged) {
      this.dragged = false;
      return;
    }
    const rect = u.over.getBoundingClientRect();
    const t = u.posToVal(e.clientX - rect.left, "x") * 1e9;
    const spike = this.spikeAt(t);
    if (spike) {
      this.opts.onSpike(spike);
      return;
    }
    const r = snapRange(this.model.spans, t, t);
    if (r) this.opts.onRange(r);
  }

  /** The spike whose band covers Unix ns t (the newest when several do), or null. */
  spikeAt(t) {
    const m = this.model;
    let found = null;
    for (const b of this.bands) {
      if (m.spans[b.i0].startNs <= t && t < m.spans[b.i1].endNs)
        found = this.spikes.find((s) => s.id === b.id) || found;
    }
    return found;
  }

  /** For tests: the page x (CSS px, relative to the viewport) of Unix ns t on the top chart,
   * and the y of its middle. */
  pagePoint(t) {
    const u = this.plots[0];
    const rect = u.over.getBoundingClientRect();
    return { x: rect.left + u.valToPos(t / 1e9, "x"), y: rect.top + rect.height / 2 };
  }
}
