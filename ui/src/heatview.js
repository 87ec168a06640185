// SPDX-License-Identifier: GPL-2.0-only
// The heat map view (after Netflix's FlameScope): a canvas of windows (columns, oldest left) by
// offset within the window (rows, top = the window's start), coloured by sample count. Two
// clicks select the range from the first cell to the second; hovering names the cell.
import { intensity, heatRgb, cellAt, cellRange } from "./heatmap.js";
import { css } from "./diffcolor.js";
import { windowSpan, rfc3339, fmtNs } from "./range.js";

const ROW_PX = 14;

/** A heat map in container; opts.onRange({fromNs, toNs}). update(heat) with /api/v1/heatmap's
 * answer; setSelection(range) to outline the cells of the current selection. */
export class HeatMap {
  constructor(container, opts) {
    this.opts = opts;
    this.heat = null;
    this.anchor = null;
    this.selection = null;
    this.canvas = document.createElement("canvas");
    this.canvas.className = "heatmap";
    this.tip = document.createElement("div");
    this.tip.className = "hint";
    this.axis = document.createElement("div");
    this.axis.className = "hint heat-axis";
    container.append(this.canvas, this.axis, this.tip);
    this.canvas.addEventListener("mousemove", (e) => this.hover(e));
    this.canvas.addEventListener("click", (e) => this.click(e));
    window.addEventListener("resize", () => this.draw());
    this.width = () => Math.max(400, container.clientWidth - 10);
  }

  update(heat) {
    this.heat = heat;
    this.starts = heat.windows.map((w) => windowSpan(w, heat.window_ns).startNs);
    const n = this.starts.length;
    this.axis.textContent = n
      ? rfc3339(this.starts[0]) +
        " … " +
        rfc3339(this.starts[n - 1]) +
        ": " +
        n +
        " windows of " +
        fmtNs(heat.window_ns) +
        ", rows of " +
        fmtNs(heat.row_ns) +
        (heat.max ? ", the darkest cell " + heat.max : "")
      : "no windows yet";
    this.draw();
  }

  setSelection(r) {
    this.selection = r;
    this.draw();
  }

  geometry() {
    const cols = this.heat.windows.length;
    return { cols, rows: this.heat.rows, width: this.width(), height: this.heat.rows * ROW_PX };
  }

  draw() {
    if (!this.heat) return;
    const g = this.geometry();
    const dpr = window.devicePixelRatio || 1;
    const c = this.canvas;
    c.style.width = g.width + "px";
    c.style.height = g.height + "px";
    c.width = Math.round(g.width * dpr);
    c.height = Math.round(g.height * dpr);
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, g.width, g.height);
    const cw = g.width / Math.max(1, g.cols);
    const max = this.heat.max || Math.max(1, ...this.heat.windows.flatMap((w) => w.counts));
    this.heat.windows.forEach((w, col) => {
      w.counts.forEach((n, row) => {
        ctx.fillStyle = css(heatRgb(intensity(n, max)));
        ctx.fillRect(col * cw, row * ROW_PX, Math.ceil(cw), ROW_PX);
      });
    });
    const outline = (col0, col1, colour) => {
      ctx.strokeStyle = colour;
      ctx.lineWidth = 2;
      ctx.strokeRect(col0 * cw + 1, 1, (col1 - col0 + 1) * cw - 2, g.height - 2);
    };
    if (this.selection) {
      const wns = this.heat.window_ns;
      const cols = this.starts
        .map((s, i) => (s + wns > this.selection.fromNs && s < this.selection.toNs ? i : -1))
        .filter((i) => i >= 0);
      if (cols.length) outline(cols[0], cols[cols.length - 1], "#2060d0");
    }
    if (this.anchor) {
      ctx.strokeStyle = "#000";
      ctx.lineWidth = 2;
      ctx.strokeRect(this.anchor.col * cw, this.anchor.row * ROW_PX, Math.max(2, cw), ROW_PX);
    }
  }

  cellOf(e) {
    const r = this.canvas.getBoundingClientRect();
    const g = this.geometry();
    return cellAt(e.clientX - r.left, e.clientY - r.top, g.cols, g.rows, g.width, g.height);
  }

  hover(e) {
    if (!this.heat || !this.heat.windows.length) return;
    const c = this.cellOf(e);
    const w = this.heat.windows[c.col];
    const t = this.starts[c.col] + c.row * this.heat.row_ns;
    this.tip.textContent =
      rfc3339(t) +
      " (+" +
      fmtNs(c.row * this.heat.row_ns) +
      " into the window): " +
      w.counts[c.row] +
      (this.heat.type === "cpu" ? " samples" : " blocks") +
      (this.anchor ? " — click again to end the range" : " — click to start a range");
  }

  click(e) {
    if (!this.heat || !this.heat.windows.length) return;
    const c = this.cellOf(e);
    if (!this.anchor) {
      this.anchor = c;
      this.draw();
      return;
    }
    const r = cellRange(this.anchor, c, this.starts, this.heat.row_ns);
    this.anchor = null;
    this.opts.onRange(r);
  }

  /** For tests: the viewport point of the middle of cell (col, row). */
  pagePoint(col, row) {
    const r = this.canvas.getBoundingClientRect();
    const g = this.geometry();
    return { x: r.left + ((col + 0.5) * g.width) / g.cols, y: r.top + (row + 0.5) * ROW_PX };
  }
}
