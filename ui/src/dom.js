// SPDX-License-Identifier: GPL-2.0-only
// Small DOM helpers: h(tag, attrs, ...children) and text escaping.

/** Creates an element: attrs' keys "class", "style", "on<event>" (a handler) or any attribute;
 * children are nodes or strings (text), null/false skipped, arrays flattened. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "style") el.style.cssText = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  const add = (c) => {
    if (c == null || c === false) return;
    if (Array.isArray(c)) c.forEach(add);
    else
      el.appendChild(
        typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c,
      );
  };
  children.forEach(add);
  return el;
}

/** Replaces el's children with the given ones. */
export function fill(el, ...children) {
  el.replaceChildren();
  for (const c of children.flat())
    if (c != null && c !== false)
      el.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
  return el;
}
