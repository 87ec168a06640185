// SPDX-License-Identifier: GPL-2.0-only
// Flame graph trees: the server's tree (/api/v1/flamegraph: name, kind, value, self, baseline,
// children) indexed with parents and depths, two trees merged into one with a baseline, the
// layout of rectangles for a focused (zoomed) node, search, and the widest frame under a node.

/** Gives every node of the server's tree (in place) `children` (an array), numeric `value`,
 * `self`, `baseline`, `parent` and `depth` (root 0). Returns {root, depth: the deepest level,
 * nodes: the count}. Iterative: trees are deep (127 frames) and wide. */
export function indexTree(root) {
  let maxDepth = 0;
  let nodes = 0;
  root.parent = null;
  root.depth = 0;
  const stack = [root];
  while (stack.length) {
    const n = stack.pop();
    nodes++;
    n.value = Number(n.value) || 0;
    n.self = Number(n.self) || 0;
    n.baseline = Number(n.baseline) || 0;
    if (!Array.isArray(n.children)) n.children = [];
    if (n.depth > maxDepth) maxDepth = n.depth;
    for (const c of n.children) {
      c.parent = n;
      c.depth = n.depth + 1;
      stack.push(c);
    }
  }
  return { root, depth: maxDepth, nodes };
}

function key(n) {
  return (n.kind || "") + "\u0000" + n.name;
}

/** Merges tree b into a new tree as the baseline of tree a: nodes match by (kind, name) along
 * the same path; the result's value/self come from a, baseline from b's value, children sorted
 * by value then baseline, descending. Neither input is changed. Used when a selection and its
 * baseline come from two requests. */
export function mergeTrees(a, b) {
  const out = {
    name: a ? a.name : b.name,
    kind: (a || b).kind,
    value: 0,
    self: 0,
    baseline: 0,
    children: [],
  };
  const work = [[out, a, b]];
  while (work.length) {
    const [o, x, y] = work.pop();
    o.value = x ? Number(x.value) || 0 : 0;
    o.self = x ? Number(x.self) || 0 : 0;
    o.baseline = y ? Number(y.value) || 0 : 0;
    const byKey = new Map();
    for (const c of (x && x.children) || []) byKey.set(key(c), [c, null]);
    for (const c of (y && y.children) || []) {
      const k = key(c);
      const e = byKey.get(k);
      if (e) e[1] = c;
      else byKey.set(k, [null, c]);
    }
    for (const [cx, cy] of byKey.values()) {
      const src = cx || cy;
      const child = {
        name: src.name,
        kind: src.kind,
        value: 0,
        self: 0,
        baseline: 0,
        children: [],
      };
      o.children.push(child);
      work.push([child, cx, cy]);
    }
  }
  sortTree(out);
  return out;
}

/** Sorts every node's children by value, then baseline, descending, then by name. */
export function sortTree(root) {
  const stack = [root];
  while (stack.length) {
    const n = stack.pop();
    n.children.sort(
      (p, q) =>
        q.value - p.value ||
        q.baseline - p.baseline ||
        (p.name < q.name ? -1 : p.name > q.name ? 1 : 0),
    );
    for (const c of n.children) stack.push(c);
  }
}

/** The rectangles of a flame graph zoomed on focus (a node of an indexed tree; the root for no
 * zoom): [{node, depth, x, w}] with x, w fractions of the width. focus spans the width; its
 * ancestors are drawn full width above it; its descendants by their value's share of focus's.
 * Nodes narrower than minW (a fraction: about half a pixel) are left out with their subtrees.
 * Root first, then depth first. */
export function layout(focus, minW = 0) {
  const rects = [];
  const chain = [];
  for (let a = focus.parent; a; a = a.parent) chain.push(a);
  for (let i = chain.length - 1; i >= 0; i--)
    rects.push({ node: chain[i], depth: chain[i].depth, x: 0, w: 1 });
  const total = focus.value;
  if (total <= 0) {
    rects.push({ node: focus, depth: focus.depth, x: 0, w: 1 });
    return rects;
  }
  const stack = [[focus, 0]];
  while (stack.length) {
    const [n, x] = stack.pop();
    const w = n === focus ? 1 : n.value / total;
    if (w < minW || w <= 0) continue;
    rects.push({ node: n, depth: n.depth, x, w });
    let cx = x;
    const kids = [];
    for (const c of n.children) {
      kids.push([c, cx]);
      cx += c.value / total;
    }
    for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
  }
  return rects;
}

/** The node's path from the root: ["all", "proc", "main", ...]. */
export function pathOf(node) {
  const p = [];
  for (let n = node; n; n = n.parent) p.push(n.name);
  return p.reverse();
}

/** Search: the nodes whose name contains query (case-insensitive; a query between slashes is a
 * regular expression) and the share of root's value under a match (a match below another
 * counted once). Returns {matches: Set of nodes, value, share}; an empty query matches nothing. */
export function search(root, query) {
  const matches = new Set();
  if (!query) return { matches, value: 0, share: 0 };
  let test;
  const m = /^\/(.+)\/$/.exec(query);
  if (m) {
    let re;
    try {
      re = new RegExp(m[1], "i");
    } catch {
      return { matches, value: 0, share: 0 };
    }
    test = (s) => re.test(s);
  } else {
    const q = query.toLowerCase();
    test = (s) => s.toLowerCase().includes(q);
  }
  let value = 0;
  const stack = [[root, false]];
  while (stack.length) {
    const [n, under] = stack.pop();
    const hit = test(n.name);
    if (hit) matches.add(n);
    if (hit && !under) value += n.value;
    for (const c of n.children) stack.push([c, under || hit]);
  }
  return { matches, value, share: root.value > 0 ? value / root.value : 0 };
}

/** Follows the widest child from node down `levels` levels (or to a leaf, when sooner).
 * Returns the node reached; node itself for 0. */
export function widestPath(node, levels) {
  let n = node;
  for (let i = 0; i < levels && n.children.length; i++) {
    let best = n.children[0];
    for (const c of n.children) if (c.value > best.value) best = c;
    n = best;
  }
  return n;
}

/** The descendant of node with the largest self value, processes and "(other)" left out: the
 * hottest function, the frame most samples end in. Returns null when node has no children. */
export function hottestSelf(node) {
  let best = null;
  const stack = [node];
  while (stack.length) {
    const n = stack.pop();
    if (n !== node && n.kind !== "process" && n.kind !== "other" && (!best || n.self > best.self))
      best = n;
    for (const c of n.children) stack.push(c);
  }
  return best;
}

/** The node found by following names from root (path[0] is root's name); null if absent. */
export function findPath(root, path) {
  if (!path.length || root.name !== path[0]) return null;
  let n = root;
  for (let i = 1; i < path.length; i++) {
    n = n.children.find((c) => c.name === path[i]);
    if (!n) return null;
  }
  return n;
}
