// SPDX-License-Identifier: GPL-2.0-only
// The API token of a listener that needs one (tailprofd --auth-token-file, docs/security.md):
// asked for when an API call answers 401, kept in sessionStorage (it goes with the tab, never to
// disk for other tabs), sent as Authorization: Bearer on every API request. The page's own files
// need no token. The pure parts (headers, token checks, file names) are unit-tested.

const KEY = "tailprof.token";

/** The headers of an API request with token (a string, or null/"" for none). */
export function authHeaders(token) {
  return token ? { Authorization: "Bearer " + token } : {};
}

/** A token as typed or pasted: blanks around it removed. Returns it, or null when it is empty or
 * has a blank or a character outside printable ASCII (the daemon's token file allows neither). */
export function cleanToken(text) {
  const t = String(text == null ? "" : text).trim();
  return /^[\x21-\x7e]{1,1024}$/.test(t) ? t : null;
}

/** The file name of a download from its Content-Disposition header (filename="..."), else
 * fallback. Path separators are dropped from it. */
export function dispositionName(header, fallback) {
  const m = /filename="?([^";]+)"?/i.exec(header || "");
  const name = m ? m[1].replace(/[/\\]/g, "").trim() : "";
  return name || fallback;
}

function store() {
  try {
    return globalThis.sessionStorage || null;
  } catch {
    return null; // storage refused (a sandboxed frame): the token lives in memory only
  }
}

let memory = null;

/** The token of this tab, or null. */
export function getToken() {
  const s = store();
  return (s ? s.getItem(KEY) : memory) || null;
}

/** Keeps token (null: forgets it) for this tab. */
export function setToken(token) {
  const s = store();
  memory = token || null;
  if (s) token ? s.setItem(KEY, token) : s.removeItem(KEY);
}

let onUnauthorized = () => {};

/** cb() runs when an API call answers 401 (the page shows its token form). */
export function whenUnauthorized(cb) {
  onUnauthorized = cb;
}

/** fetch(path) with the token's Authorization header; a 401 answer calls the whenUnauthorized
 * callback before it is returned. */
export async function apiFetch(path, init = {}) {
  const r = await fetch(path, {
    ...init,
    headers: { ...(init.headers || {}), ...authHeaders(getToken()) },
  });
  if (r.status === 401) onUnauthorized();
  return r;
}

/** Downloads the API file of a link (href under /api/) through apiFetch, so that it carries the
 * token: a plain link could not. Throws Error on an HTTP error. */
export async function downloadWithToken(href) {
  const r = await apiFetch(href, { cache: "no-store" });
  if (!r.ok) throw new Error(href.split("?")[0] + ": HTTP " + r.status);
  const url = URL.createObjectURL(await r.blob());
  const a = document.createElement("a");
  a.href = url;
  a.download = dispositionName(r.headers.get("Content-Disposition"), "profile.pb.gz");
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}
