// SPDX-License-Identifier: GPL-2.0-only
// The compare view: two sides, each a range (from/to) or a snapshot, and the report of
// /api/v1/compare as a table of metrics with their intervals and verdicts.
import { h, fill } from "./dom.js";
import { getJSON } from "./api.js";
import { rfc3339, fmtNs } from "./range.js";
import { metrics, figures } from "./comparedata.js";

function side(name) {
  const from = h("input", {
    type: "text",
    size: 26,
    placeholder: "from (RFC 3339)",
    class: name + "-from",
  });
  const to = h("input", { type: "text", size: 26, placeholder: "to", class: name + "-to" });
  const snap = h("select", { class: name + "-snapshot" }, h("option", { value: "" }, "(a range)"));
  return { name, from, to, snap };
}

export class CompareView {
  constructor(container, getSelection) {
    this.getSelection = getSelection;
    this.a = side("before");
    this.b = side("after");
    this.out = h("div", { class: "compare-out" });
    const row = (s, label) =>
      h(
        "div",
        { class: "side" },
        h("b", {}, label + " "),
        s.from,
        " ",
        s.to,
        " or snapshot ",
        s.snap,
        " ",
        h("button", { onclick: () => this.useSelection(s) }, "use the selection"),
      );
    container.append(
      row(this.a, "Before"),
      row(this.b, "After"),
      h("button", { class: "run-compare", onclick: () => this.run() }, "Compare"),
      this.out,
    );
  }

  useSelection(s) {
    const r = this.getSelection();
    if (!r) return;
    s.from.value = rfc3339(r.fromNs);
    s.to.value = rfc3339(r.toNs);
    s.snap.value = "";
  }

  updateSnapshots(list) {
    for (const s of [this.a, this.b]) {
      const cur = s.snap.value;
      fill(
        s.snap,
        h("option", { value: "" }, "(a range)"),
        list.map((x) => h("option", { value: x.name }, x.name + " (" + x.saved + ")")),
      );
      s.snap.value = cur;
    }
  }

  query() {
    const parts = [];
    for (const s of [this.a, this.b]) {
      if (s.snap.value) parts.push(s.name + "_snapshot=" + encodeURIComponent(s.snap.value));
      else {
        if (s.from.value) parts.push(s.name + "_from=" + encodeURIComponent(s.from.value.trim()));
        if (s.to.value) parts.push(s.name + "_to=" + encodeURIComponent(s.to.value.trim()));
      }
    }
    return parts.join("&");
  }

  async run() {
    fill(this.out, h("p", { class: "hint" }, "comparing ..."));
    let rep;
    try {
      rep = await getJSON("/api/v1/compare?" + this.query());
    } catch (e) {
      fill(this.out, h("p", { class: "error" }, e.message));
      return;
    }
    const c = rep.conditions || {};
    const sideText = (x) =>
      x
        ? (x.snapshot ? "snapshot " + x.snapshot : x.from + " to " + x.to) +
          ", " +
          x.windows +
          " windows, " +
          (x.requests || 0) +
          " requests"
        : "-";
    const rows = metrics(rep).map(({ path, m }) => {
      const f = figures(m, fmtNs);
      return h(
        "tr",
        { class: "verdict-" + m.verdict },
        h("td", {}, path),
        h("td", { class: "num" }, f.before),
        h("td", { class: "num" }, f.after),
        h("td", { class: "num" }, f.diff),
        h("td", { class: "num" }, f.ci),
        h("td", { class: "num" }, m.p_value == null ? "-" : Number(m.p_value).toPrecision(2)),
        h("td", {}, m.verdict + (m.reason ? " (" + m.reason + ")" : "")),
      );
    });
    fill(
      this.out,
      h("p", {}, "Before: " + sideText(c.before)),
      h("p", {}, "After: " + sideText(c.after)),
      c.load_note ? h("p", { class: "hint" }, c.load_note) : null,
      (c.notes || []).map((n) => h("p", { class: "hint" }, n)),
      h("p", {}, "Regressions: " + ((rep.regressions || []).join(", ") || "none")),
      h(
        "table",
        { class: "grid" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["metric", "before", "after", "difference", "interval", "p", "verdict"].map((t) =>
              h("th", {}, t),
            ),
          ),
        ),
        h("tbody", {}, rows),
      ),
    );
  }
}
