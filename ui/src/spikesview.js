// SPDX-License-Identifier: GPL-2.0-only
// The spikes view: the list of /api/v1/spikes with their ranked causes, and one spike's
// details (/api/v1/spikes/ID): its causes with figures and its slow requests' time accounting
// (on-CPU, run queue, off-CPU, GC), each request with a link to its own flame graph.
import { h, fill } from "./dom.js";
import { getJSON } from "./api.js";
import { fmtNs } from "./range.js";

const PARTS = [
  ["cpu_ns", "on-CPU", "#d7301f"],
  ["runq_ns", "run queue", "#6a51a3"],
  ["offcpu_ns", "off-CPU", "#2c7fb8"],
  ["gc_ns", "GC", "#238b45"],
];

/** opts: onFlame(spike) shows the spike's differential flame graph, onRequest(request) the
 * request's own. */
export class SpikesView {
  constructor(container, opts) {
    this.opts = opts;
    this.list = h("div", { class: "spike-list" });
    this.detail = h("div", { class: "spike-detail" });
    container.append(this.list, this.detail);
    this.spikes = [];
  }

  update(spikes) {
    this.spikes = spikes;
    if (!spikes.length) {
      fill(
        this.list,
        h(
          "p",
          { class: "hint" },
          "No spikes in the ring: detected p95 spikes, marks (POST /api/v1/marks) and " +
            "alerts show here.",
        ),
      );
      return;
    }
    const rows = [...spikes].reverse().map((s) => {
      const top = (s.causes || [])[0];
      return h(
        "tr",
        { class: "spike-row", "data-id": s.id, onclick: () => this.show(s.id) },
        h("td", {}, s.id),
        h("td", {}, s.stage || "-"),
        h("td", {}, s.source + (s.kind === "level_shift" ? " (level shift)" : "")),
        h("td", {}, s.start),
        h("td", { class: "num" }, String(s.windows)),
        h("td", { class: "num" }, s.p95_ns ? fmtNs(s.p95_ns) : "-"),
        h("td", { class: "num" }, s.baseline_p95_ns ? fmtNs(s.baseline_p95_ns) : "-"),
        h(
          "td",
          {},
          top
            ? top.kind + " " + (100 * top.share).toFixed(0) + "%: " + (top.summary || "")
            : s.reason || "",
        ),
      );
    });
    fill(
      this.list,
      h(
        "table",
        { class: "grid" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            [
              "spike",
              "stage",
              "source",
              "start",
              "windows",
              "p95",
              "baseline p95",
              "top cause",
            ].map((t) => h("th", {}, t)),
          ),
        ),
        h("tbody", {}, rows),
      ),
    );
  }

  async show(id) {
    fill(this.detail, h("p", { class: "hint" }, "loading " + id + " ..."));
    let s;
    try {
      s = await getJSON("/api/v1/spikes/" + encodeURIComponent(id));
    } catch (e) {
      fill(this.detail, h("p", { class: "error" }, e.message));
      return;
    }
    const causes = (s.causes || []).map((c) =>
      h(
        "li",
        {},
        h("span", {
          class: "bar",
          style: "width:" + Math.round(120 * Math.max(0, Math.min(1, c.share))) + "px",
        }),
        h("b", {}, c.kind + " " + (100 * c.share).toFixed(0) + "%"),
        " " + (c.summary || ""),
        c.spike_median_ns != null
          ? " (median " + fmtNs(c.spike_median_ns) + " against " + fmtNs(c.baseline_median_ns) + ")"
          : "",
        c.functions && c.functions.length
          ? h(
              "ul",
              {},
              c.functions
                .slice(0, 5)
                .map((f) =>
                  h(
                    "li",
                    {},
                    f.function +
                      ": " +
                      (100 * f.spike_share).toFixed(1) +
                      "% of samples against " +
                      (100 * f.baseline_share).toFixed(1) +
                      "%",
                  ),
                ),
            )
          : null,
      ),
    );
    const reqs = (s.requests || []).map((r) => {
      const bar = h("div", { class: "stack" });
      for (const [k, , colour] of PARTS) {
        const v = r[k] || 0;
        if (v > 0)
          bar.append(
            h("span", {
              style:
                "background:" + colour + ";width:" + (100 * v) / Math.max(1, r.duration_ns) + "%",
              title: k + " " + fmtNs(v),
            }),
          );
      }
      return h(
        "tr",
        {},
        h("td", {}, r.id),
        h("td", { class: "num" }, fmtNs(r.duration_ns)),
        PARTS.map(([k]) => h("td", { class: "num" }, fmtNs(r[k] || 0))),
        h("td", {}, bar),
        h("td", {}, r.accounting || ""),
        h(
          "td",
          {},
          h("button", { onclick: () => this.opts.onRequest(r, s) }, "flame graph"),
          " ",
          h("a", { href: "/api/v1/profile?request=" + encodeURIComponent(r.id) }, "pprof"),
        ),
      );
    });
    fill(
      this.detail,
      h(
        "h3",
        {},
        s.id + " ",
        h(
          "button",
          { onclick: () => this.opts.onFlame(s) },
          "differential flame graph against its baseline",
        ),
      ),
      h(
        "p",
        {},
        (s.summary || s.reason || "") +
          " " +
          s.start +
          " to " +
          s.end +
          ", " +
          s.windows +
          " windows, " +
          (s.request_count || 0) +
          " requests" +
          (s.pattern ? ", " + s.pattern : ""),
      ),
      h("h4", {}, "Causes (share of the p95 rise)"),
      causes.length
        ? h("ul", { class: "causes" }, causes)
        : h("p", { class: "hint" }, "none ranked (a mark or alert without a stage)"),
      h("h4", {}, "Slow requests: where their time went"),
      reqs.length
        ? h(
            "table",
            { class: "grid" },
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                [
                  "request",
                  "duration",
                  "on-CPU",
                  "run queue",
                  "off-CPU",
                  "GC",
                  "",
                  "accounting",
                  "",
                ].map((t) => h("th", {}, t)),
              ),
            ),
            h("tbody", {}, reqs),
          )
        : h("p", { class: "hint" }, "no requests recorded"),
    );
  }
}
