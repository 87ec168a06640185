// SPDX-License-Identifier: GPL-2.0-only
// The page: tabs, the shared selection (a range of windows or a spike, and a baseline), the
// flame graph's controls, and the refresh loop (status polled every few seconds; the data
// reloaded after each drain). window.tailprofUI exposes the state for the browser test.
import "uplot/dist/uPlot.min.css";
import "./app.css";
import { getJSON, flamegraphQuery, profileQuery, heatmapQuery } from "./api.js";
import { cleanToken, getToken, setToken, whenUnauthorized, downloadWithToken } from "./auth.js";
import { h, fill } from "./dom.js";
import { rfc3339, fmtNs } from "./range.js";
import { Timeline } from "./timeline.js";
import { HeatMap } from "./heatview.js";
import { FlameGraph } from "./flamegraph.js";
import { SpikesView } from "./spikesview.js";
import { CompareView } from "./compareview.js";

const POLL_MS = 2000;
const $ = (id) => document.getElementById(id);

const S = {
  windows: [],
  stages: null,
  spikes: [],
  heat: null,
  range: null, // {fromNs, toNs}: the selected windows
  spike: null, // a spike object: the selection when set
  baseline: null, // null | "spike" | {fromNs, toNs}
  statusKey: "",
  loads: 0, // data loads done (tests wait on it)
  firstLoadMs: 0, // from navigation to the first data drawn (the benchmark reads it)
  flameLoads: 0,
  errors: [],
  thresholds: new Map(), // stage -> configured threshold_ns (/api/v1/status)
};

function error(where, e) {
  const msg = where + ": " + (e && e.message ? e.message : e);
  S.errors.push(msg);
  fill($("error"), msg);
}

// ---- tabs
function showTab(name) {
  for (const t of document.querySelectorAll("nav button"))
    t.classList.toggle("active", t.dataset.tab === name);
  for (const v of document.querySelectorAll("section.view")) v.hidden = v.id !== "view-" + name;
  if (name === "timeline") timeline.resize();
  if (name === "heatmap") heat.draw();
  if (name === "flame") flame.draw();
}
for (const t of document.querySelectorAll("nav button"))
  t.addEventListener("click", () => showTab(t.dataset.tab));

// ---- selection
function selectionText() {
  if (S.spike)
    return "spike " + S.spike.id + " (" + S.spike.start + ", " + S.spike.windows + " windows)";
  if (S.range)
    return (
      rfc3339(S.range.fromNs) +
      " to " +
      rfc3339(S.range.toNs) +
      " (" +
      fmtNs(S.range.toNs - S.range.fromNs) +
      ")"
    );
  return "every window held";
}

function baselineText() {
  if (S.baseline === "spike") return "the spike's baseline";
  if (S.baseline) return rfc3339(S.baseline.fromNs) + " to " + rfc3339(S.baseline.toNs);
  return "none";
}

function renderSelection() {
  $("sel").textContent = selectionText();
  $("base").textContent = baselineText();
  heat.setSelection(S.spike ? null : S.range);
  if (S.windows.length) timeline.update(S.windows, S.stages, S.spikes, S.range, S.thresholds);
}

function selectRange(r, show = true) {
  S.range = { fromNs: r.fromNs, toNs: r.toNs };
  S.spike = null;
  if (S.baseline === "spike") S.baseline = null;
  renderSelection();
  if (show) {
    showTab("flame");
    loadFlame();
  }
}

function selectSpike(spike, show = true) {
  S.spike = spike;
  S.range = { fromNs: Number(spike.start_unix_ns), toNs: Number(spike.end_unix_ns) };
  S.baseline = "spike";
  if (spike.stage) $("f-stage").value = spike.stage;
  renderSelection();
  if (show) {
    showTab("flame");
    loadFlame();
  }
}

// ---- views
const timeline = new Timeline($("timeline"), {
  onRange: (r) => selectRange(r),
  onSpike: (s) => selectSpike(s),
});
const heat = new HeatMap($("heat"), { onRange: (r) => selectRange(r) });
const flame = new FlameGraph($("flame"), $("flame-tip"));
const spikesView = new SpikesView($("spikes"), {
  onFlame: (s) => selectSpike(s),
  onRequest: (r) => {
    // the request's own flame graph: its process, its stage, wall time over its windows
    S.spike = null;
    S.baseline = null;
    S.range = {
      fromNs: Number(r.start_unix_ns),
      toNs: Number(r.start_unix_ns) + Number(r.duration_ns),
    };
    $("f-type").value = "wall";
    $("f-pid").value = String(r.pid);
    $("f-stage").value = r.stage || "";
    renderSelection();
    showTab("flame");
    loadFlame();
  },
});
const compare = new CompareView($("compare"), () => S.range);

function flameParams() {
  return {
    type: $("f-type").value,
    spike: S.spike ? S.spike.id : null,
    range: S.spike ? null : S.range,
    baseline: $("f-diff").checked ? S.baseline : null,
    pid: $("f-pid").value.trim(),
    comm: $("f-comm").value.trim(),
    stage: $("f-stage").value,
    minShare: $("f-minshare").value,
  };
}

async function loadFlame() {
  const q = flameParams();
  const qs = flamegraphQuery(q);
  $("pprof").href = "/api/v1/profile?" + profileQuery(q);
  $("flame-status").textContent = "loading ...";
  const t0 = performance.now();
  try {
    const json = await getJSON("/api/v1/flamegraph?" + qs);
    const t1 = performance.now();
    flame.setData(json, Boolean(q.baseline));
    const unit = json.unit === "nanoseconds" ? fmtNs(json.total) : json.total + " samples";
    $("flame-status").textContent =
      unit +
      (flame.diff
        ? " against a baseline of " +
          (json.unit === "nanoseconds"
            ? fmtNs(json.baseline_total)
            : json.baseline_total + " samples") +
          " (red: share grew, blue: shrank)"
        : "") +
      "; " +
      flame.nodes +
      " frames" +
      (json.truncated_nodes ? ", " + json.truncated_nodes + " small ones merged as (other)" : "") +
      "; fetched in " +
      (t1 - t0).toFixed(0) +
      " ms, drawn in " +
      flame.drawMs.toFixed(0) +
      " ms";
    S.flameQuery = qs;
    S.flameMs = performance.now() - t0;
    S.flameLoads++;
  } catch (e) {
    $("flame-status").textContent = "";
    error("flame graph", e);
  }
}

for (const id of ["f-type", "f-stage", "f-diff", "f-minshare"])
  $(id).addEventListener("change", loadFlame);
for (const id of ["f-pid", "f-comm"])
  $(id).addEventListener("keydown", (e) => e.key === "Enter" && loadFlame());
$("f-load").addEventListener("click", loadFlame);
$("f-search").addEventListener("input", (e) => {
  const f = flame.setSearch(e.target.value);
  $("f-found").textContent = e.target.value
    ? f.matches.size + " frames, " + (100 * f.share).toFixed(1) + "% of the total"
    : "";
});
$("f-reset").addEventListener("click", () => flame.zoom(null));
$("f-all").addEventListener("click", () => {
  S.range = null;
  S.spike = null;
  S.baseline = null;
  renderSelection();
  loadFlame();
});
$("f-asbase").addEventListener("click", () => {
  if (!S.range) return;
  S.baseline = { ...S.range };
  $("f-diff").checked = true;
  renderSelection();
});
$("f-before").addEventListener("click", () => {
  // the same length of time just before the selection
  if (!S.range) return;
  const len = S.range.toNs - S.range.fromNs;
  S.baseline = { fromNs: S.range.fromNs - len, toNs: S.range.fromNs };
  $("f-diff").checked = true;
  renderSelection();
  loadFlame();
});
$("heat-type").addEventListener("change", () => loadHeat().catch((e) => error("heat map", e)));

// ---- the API token (a listener with --auth-token-file answers 401 without it)
whenUnauthorized(() => {
  const form = $("auth");
  if (!form.hidden) return;
  form.hidden = false;
  $("auth-msg").textContent = getToken() ? "the token was refused" : "";
  $("auth-token").focus();
});
$("auth").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const t = cleanToken($("auth-token").value);
  if (!t) {
    $("auth-msg").textContent = "a token is printable characters without blanks";
    return;
  }
  setToken(t);
  $("auth-token").value = "";
  $("auth").hidden = true;
  S.statusKey = ""; // everything reloads at once
  clearTimeout(pollTimer);
  poll();
});
// links to API files (pprof downloads): a plain link sends no token, so fetch them with it
document.addEventListener("click", (ev) => {
  const a = ev.target.closest && ev.target.closest("a[href^='/api/']");
  if (!a || !getToken() || ev.button !== 0) return;
  ev.preventDefault();
  downloadWithToken(a.getAttribute("href")).catch((e) => error("download", e));
});

// ---- data and refresh
// the heat map's columns are the timeline's windows (S.windows): it is read after them
async function loadHeat() {
  S.heat = await getJSON("/api/v1/heatmap?" + heatmapQuery($("heat-type").value, S.windows));
  heat.update(S.heat);
}

async function loadAll() {
  const [w, st, sp] = await Promise.all([
    getJSON("/api/v1/windows"),
    getJSON("/api/v1/stages").catch(() => null),
    getJSON("/api/v1/spikes"),
  ]);
  S.windows = w.windows;
  const heatDone = loadHeat().catch((e) => error("heat map", e));
  S.stages = st;
  S.spikes = sp.spikes;
  timeline.update(S.windows, S.stages, S.spikes, S.range, S.thresholds);
  spikesView.update(S.spikes);
  const names = new Set(((st && st.stages) || []).map((s) => s.stage));
  const sel = $("f-stage");
  const have = new Set([...sel.options].map((o) => o.value));
  for (const n of names) if (!have.has(n)) sel.append(h("option", { value: n }, n));
  await heatDone;
  getJSON("/api/v1/snapshots").then(
    (x) => compare.updateSnapshots(x.snapshots || []),
    () => {},
  );
  S.loads++;
  if (!S.firstLoadMs) S.firstLoadMs = performance.now();
}

let pollTimer = 0;
let polling = false; // one poll at a time: the token form starts one at once

async function poll() {
  if (polling) return;
  polling = true;
  try {
    const s = await getJSON("/api/v1/status");
    $("host").textContent = s.hostname + " — tailprofd " + s.version;
    S.thresholds = new Map(
      (s.stages || [])
        .filter((x) => x.threshold_ns != null)
        .map((x) => [x.stage, Number(x.threshold_ns)]),
    );
    const key = [s.windows, s.samples, s.received_samples, s.offcpu_samples, s.runq_count].join(
      "/",
    );
    $("status").textContent =
      s.windows +
      " windows of " +
      fmtNs(s.window_ns) +
      ", updated " +
      new Date().toISOString().slice(11, 19) +
      " UTC";
    if (key !== S.statusKey) {
      S.statusKey = key;
      await loadAll();
      // a flame graph of everything held follows the ring; a chosen range stays as it is
      if (!S.range && !S.spike && !$("view-flame").hidden) loadFlame();
    }
    fill($("error"));
  } catch (e) {
    error("refresh", e);
  }
  polling = false;
  clearTimeout(pollTimer);
  pollTimer = setTimeout(poll, POLL_MS);
}

window.tailprofUI = {
  S,
  timeline,
  heat,
  flame,
  spikesView,
  compare,
  selectRange,
  selectSpike,
  loadFlame,
  showTab,
};
showTab("timeline");
poll();
