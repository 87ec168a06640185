// SPDX-License-Identifier: GPL-2.0-only
// Flame graph colours: a differential flame graph colours each frame by the growth of its share
// (its value's share of the selection's total minus its baseline's share of the baseline's
// total): red grown, blue shrunk, grey unchanged; a plain one by the frame's kind.

/** Share growth of node: value/total - baseline/baselineTotal, in share points (-1..1). A total
 * of 0 counts as a share of 0. */
export function shareGrowth(node, total, baselineTotal) {
  const s = total > 0 ? node.value / total : 0;
  const b = baselineTotal > 0 ? node.baseline / baselineTotal : 0;
  return s - b;
}

/** Below this growth (0.1 share points either way) a frame counts as unchanged (grey). */
export const NEUTRAL = 0.001;

/** The growth that gets the strongest colour: the largest |growth| in the tree, at least 1
 * share point, so noise in a quiet diff stays pale. */
export function growthScale(root, total, baselineTotal) {
  let m = 0.01;
  const stack = [root];
  while (stack.length) {
    const n = stack.pop();
    const g = Math.abs(shareGrowth(n, total, baselineTotal));
    if (n !== root && g > m) m = g;
    for (const c of n.children) stack.push(c);
  }
  return m;
}

/** Growth -> [r, g, b] (0-255): grey (200,200,200) within NEUTRAL; else from a pale tint at
 * NEUTRAL to full red (220,40,40) for growth >= scale, or full blue (40,90,220) for
 * growth <= -scale, linearly in between. */
export function diffRgb(growth, scale) {
  if (Math.abs(growth) < NEUTRAL) return [200, 200, 200];
  const t = Math.min(1, Math.abs(growth) / scale);
  const pale = growth > 0 ? [250, 210, 210] : [210, 220, 250];
  const full = growth > 0 ? [220, 40, 40] : [40, 90, 220];
  return pale.map((p, i) => Math.round(p + (full[i] - p) * t));
}

/** Whether a colour (as diffRgb gives it, or read back from a canvas) says grown, shrunk or
 * unchanged: "grown" when red dominates, "shrunk" when blue does. */
export function classifyRgb([r, g, b]) {
  if (r - b > 30 && r - g > 30) return "grown";
  if (b - r > 30) return "shrunk";
  return "unchanged";
}

/** CSS colour of [r, g, b]. */
export function css([r, g, b]) {
  return "rgb(" + r + "," + g + "," + b + ")";
}

/** A stable small hash of a string (FNV-1a, 32 bits), so a function keeps its hue. */
export function hash(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** A plain flame graph's colour by kind: user code warm (red-orange-yellow), kernel orange-brown,
 * python green, jit teal, process grey-blue, other grey; the name's hash varies the shade. */
export function kindRgb(kind, name) {
  const v = (hash(name) % 1000) / 1000;
  switch (kind) {
    case "kernel":
      return [Math.round(200 + 40 * v), Math.round(130 + 40 * v), 60];
    case "python":
      return [Math.round(80 + 60 * v), Math.round(180 + 50 * v), 90];
    case "jit":
      return [60, Math.round(170 + 50 * v), Math.round(170 + 50 * v)];
    case "process":
      return [150, 170, 200];
    case "other":
      return [190, 190, 190];
    default:
      return [Math.round(225 + 30 * v), Math.round(80 + 120 * v), 55];
  }
}
