// SPDX-License-Identifier: GPL-2.0-only
// Flame graph trees: indexing, merging a baseline, layout with zoom, search, widest paths.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  indexTree,
  mergeTrees,
  layout,
  search,
  widestPath,
  hottestSelf,
  findPath,
  pathOf,
} from "../src/flametree.js";

const leaf = (name, value, kind = "user") => ({ name, kind, value, self: value, children: [] });
const node = (name, kind, children, self = 0) => ({
  name,
  kind,
  value: self + children.reduce((a, c) => a + c.value, 0),
  self,
  children,
});

function sample() {
  // all 100 = app 80 (main 80: hot 50, cold 20, self 10) + kworker 20 (k 20)
  return node("all", "other", [
    node("app", "process", [node("main", "user", [leaf("hot", 50), leaf("cold", 20)], 10)]),
    node("kworker", "process", [leaf("k", 20, "kernel")]),
  ]);
}

test("indexTree sets parents, depths, counts", () => {
  const t = sample();
  const idx = indexTree(t);
  assert.equal(idx.nodes, 7);
  assert.equal(idx.depth, 3);
  const hot = findPath(t, ["all", "app", "main", "hot"]);
  assert.equal(hot.depth, 3);
  assert.deepEqual(pathOf(hot), ["all", "app", "main", "hot"]);
  assert.equal(hot.baseline, 0);
});

test("mergeTrees puts b's values as a's baseline, by path and kind", () => {
  const a = sample();
  const b = node("all", "other", [
    node("app", "process", [node("main", "user", [leaf("hot", 10), leaf("gone", 30)])]),
    node("kworker", "process", [leaf("k", 60, "kernel")]),
  ]);
  const m = mergeTrees(a, b);
  indexTree(m);
  assert.equal(m.value, 100);
  assert.equal(m.baseline, 100);
  const hot = findPath(m, ["all", "app", "main", "hot"]);
  assert.deepEqual([hot.value, hot.baseline], [50, 10]);
  const gone = findPath(m, ["all", "app", "main", "gone"]);
  assert.deepEqual([gone.value, gone.baseline], [0, 30]);
  const cold = findPath(m, ["all", "app", "main", "cold"]);
  assert.deepEqual([cold.value, cold.baseline], [20, 0]);
  // sorted by value: hot 50, cold 20, gone 0
  assert.deepEqual(
    findPath(m, ["all", "app", "main"]).children.map((c) => c.name),
    ["hot", "cold", "gone"],
  );
  // the inputs are left alone
  assert.equal(a.children[0].children[0].children.length, 2);
});

test("layout: widths are shares, children laid left to right", () => {
  const t = sample();
  indexTree(t);
  const r = layout(t);
  const by = Object.fromEntries(r.map((x) => [x.node.name, x]));
  assert.equal(r.length, 7);
  assert.deepEqual([by.all.x, by.all.w], [0, 1]);
  assert.deepEqual([by.app.x, by.app.w], [0, 0.8]);
  assert.equal(by.kworker.x, 0.8);
  assert.ok(Math.abs(by.kworker.w - 0.2) < 1e-12);
  assert.deepEqual([by.hot.x, by.hot.w, by.hot.depth], [0, 0.5, 3]);
  assert.deepEqual([by.cold.x, by.cold.w], [0.5, 0.2]);
});

test("layout: zoom on a frame spans it across the width, ancestors full width", () => {
  const t = sample();
  indexTree(t);
  const main = findPath(t, ["all", "app", "main"]);
  const r = layout(main);
  const by = Object.fromEntries(r.map((x) => [x.node.name, x]));
  assert.equal(by.kworker, undefined);
  assert.deepEqual([by.all.w, by.app.w, by.main.w], [1, 1, 1]);
  assert.equal(by.hot.w, 50 / 80);
  assert.equal(by.cold.x, 50 / 80);
});

test("layout leaves out frames under minW with their subtrees", () => {
  const t = sample();
  indexTree(t);
  const r = layout(t, 0.25);
  assert.deepEqual(r.map((x) => x.node.name).sort(), ["all", "app", "hot", "main"]);
});

test("search: substring and regex, nested matches counted once", () => {
  const t = node("all", "other", [
    node("p", "process", [node("foo_outer", "user", [leaf("foo_inner", 30)], 10), leaf("bar", 60)]),
  ]);
  indexTree(t);
  const s = search(t, "FOO");
  assert.equal(s.matches.size, 2);
  assert.equal(s.value, 40);
  assert.equal(s.share, 0.4);
  const re = search(t, "/^ba/");
  assert.equal(re.value, 60);
  assert.equal(search(t, "").matches.size, 0);
  assert.equal(search(t, "/[/").value, 0);
});

test("widestPath and hottestSelf find the hot function", () => {
  const t = sample();
  indexTree(t);
  assert.equal(widestPath(t, 3).name, "hot");
  assert.equal(widestPath(t, 1).name, "app");
  assert.equal(widestPath(t, 99).name, "hot");
  assert.equal(hottestSelf(t).name, "hot");
  assert.equal(hottestSelf(findPath(t, ["all", "kworker"])).name, "k");
});
