// SPDX-License-Identifier: GPL-2.0-only
// The flame graph renderer: a canvas icicle (root on top, callees below) of a tree from
// /api/v1/flamegraph. Widths from the selection's values; colours by kind, or in a
// differential graph by the growth of each frame's share against the baseline (red grown,
// blue shrunk); search highlights matches; a click zooms on a frame (the root zooms out).
import { indexTree, layout, search, pathOf } from "./flametree.js";
import { shareGrowth, growthScale, diffRgb, kindRgb, css } from "./diffcolor.js";
import { fmtNs } from "./range.js";

const ROW = 18;
const MATCH = [230, 60, 200];

export class FlameGraph {
  constructor(container, tip) {
    this.canvas = document.createElement("canvas");
    this.canvas.className = "flame";
    this.tip = tip;
    container.append(this.canvas);
    this.el = container;
    this.data = null;
    this.found = { matches: new Set(), value: 0, share: 0 };
    this.canvas.addEventListener("mousemove", (e) => this.hover(e));
    this.canvas.addEventListener("mouseleave", () => (this.tip.textContent = ""));
    this.canvas.addEventListener("click", (e) => {
      const r = this.rectAt(e);
      if (r) this.zoom(r.node);
    });
    window.addEventListener("resize", () => this.draw());
  }

  /** Shows the server's answer: {root, total, baseline_total, unit, type}. diff: colour by share
   * growth (needs baseline_total > 0). */
  setData(json, diff) {
    const idx = indexTree(json.root);
    this.data = json;
    this.total = Number(json.total) || json.root.value;
    this.baselineTotal = Number(json.baseline_total) || 0;
    this.diff = Boolean(diff && this.baselineTotal > 0);
    this.scale = this.diff ? growthScale(json.root, this.total, this.baselineTotal) : 1;
    this.maxDepth = idx.depth;
    this.nodes = idx.nodes;
    this.focus = json.root;
    this.found = search(json.root, this.query || "");
    this.draw();
  }

  setSearch(q) {
    this.query = q;
    if (this.data) this.found = search(this.data.root, q);
    this.draw();
    return this.found;
  }

  zoom(node) {
    this.focus = node && node.parent ? node : this.data.root;
    this.draw();
  }

  width() {
    return Math.max(300, this.el.clientWidth - 4);
  }

  /** [r, g, b] of node as drawn (before search highlighting). */
  colourOf(node) {
    if (this.diff) return diffRgb(shareGrowth(node, this.total, this.baselineTotal), this.scale);
    return kindRgb(node.kind, node.name);
  }

  draw() {
    if (!this.data) return;
    const W = this.width();
    const t0 = performance.now();
    this.rects = layout(this.focus, 0.5 / W);
    this.byDepth = [];
    for (const r of this.rects) (this.byDepth[r.depth] ||= []).push(r);
    const H = (this.maxDepth + 1) * ROW;
    const dpr = window.devicePixelRatio || 1;
    const c = this.canvas;
    c.style.width = W + "px";
    c.style.height = H + "px";
    c.width = Math.round(W * dpr);
    c.height = Math.round(H * dpr);
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.font = "12px sans-serif";
    ctx.textBaseline = "middle";
    const searching = this.found.matches.size > 0;
    for (const r of this.rects) {
      const x = r.x * W;
      const w = r.w * W;
      const y = r.depth * ROW;
      let rgb = this.colourOf(r.node);
      if (searching && this.found.matches.has(r.node)) rgb = MATCH;
      else if (searching) rgb = rgb.map((v) => Math.round(v + (255 - v) * 0.5));
      ctx.fillStyle = css(rgb);
      ctx.fillRect(x, y, Math.max(0.5, w - 0.5), ROW - 1);
      if (w > 28) {
        const chars = Math.floor((w - 6) / 6.5);
        const name =
          r.node.name.length > chars
            ? r.node.name.slice(0, Math.max(0, chars - 1)) + "\u2026"
            : r.node.name;
        ctx.fillStyle = "#111";
        ctx.fillText(name, x + 3, y + ROW / 2);
      }
    }
    this.drawMs = performance.now() - t0;
  }

  rectAt(e) {
    if (!this.rects) return null;
    const b = this.canvas.getBoundingClientRect();
    const W = this.width();
    const depth = Math.floor((e.clientY - b.top) / ROW);
    const fx = (e.clientX - b.left) / W;
    for (const r of this.byDepth[depth] || []) if (fx >= r.x && fx < r.x + r.w) return r;
    return null;
  }

  fmt(v) {
    return this.data.unit === "nanoseconds"
      ? fmtNs(v)
      : Math.round(v).toLocaleString() + " " + (this.data.unit || "samples");
  }

  hover(e) {
    const r = this.rectAt(e);
    if (!r) {
      this.tip.textContent = "";
      return;
    }
    const n = r.node;
    const share = this.total > 0 ? n.value / this.total : 0;
    let s =
      n.name +
      " [" +
      (n.kind || "") +
      "]: " +
      this.fmt(n.value) +
      " (" +
      (100 * share).toFixed(2) +
      "% of the selection; self " +
      this.fmt(n.self) +
      ")";
    if (this.diff) {
      const bs = n.baseline / this.baselineTotal;
      const g = shareGrowth(n, this.total, this.baselineTotal);
      s +=
        "; baseline " +
        (100 * bs).toFixed(2) +
        "%, " +
        (g >= 0 ? "+" : "") +
        (100 * g).toFixed(2) +
        " points";
    }
    this.tip.textContent = s + " — " + pathOf(n).slice(1).join(" > ");
  }

  /** For tests: the viewport rectangle of node as drawn, or null when not drawn. */
  pageRect(node) {
    const r = this.rects && this.rects.find((q) => q.node === node);
    if (!r) return null;
    const b = this.canvas.getBoundingClientRect();
    const W = this.width();
    return { x: b.left + r.x * W, y: b.top + r.depth * ROW, w: r.w * W, h: ROW - 1 };
  }
}
