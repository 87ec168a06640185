// SPDX-License-Identifier: GPL-2.0-only
// The API token: the headers it makes, what a typed token may be, download names, where it is
// kept, and that every API fetch carries it (a 401 calling the page's token form).
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  authHeaders,
  cleanToken,
  dispositionName,
  getToken,
  setToken,
  apiFetch,
  whenUnauthorized,
} from "../src/auth.js";

test("authHeaders: Bearer with a token, nothing without", () => {
  assert.deepEqual(authHeaders("abc123"), { Authorization: "Bearer abc123" });
  assert.deepEqual(authHeaders(null), {});
  assert.deepEqual(authHeaders(""), {});
});

test("cleanToken: trims blanks, refuses inner blanks, non-ASCII, empty and too long", () => {
  assert.equal(cleanToken("  3f9a-b_c~\n"), "3f9a-b_c~");
  assert.equal(cleanToken("a b"), null);
  assert.equal(cleanToken("tök"), null);
  assert.equal(cleanToken("   "), null);
  assert.equal(cleanToken(undefined), null);
  assert.equal(cleanToken("x".repeat(1024)), "x".repeat(1024));
  assert.equal(cleanToken("x".repeat(1025)), null);
});

test("dispositionName: the server's file name, without path separators, else the fallback", () => {
  assert.equal(dispositionName('attachment; filename="profile.pb.gz"', "f"), "profile.pb.gz");
  assert.equal(dispositionName("attachment; filename=cpu.pb.gz", "f"), "cpu.pb.gz");
  assert.equal(dispositionName('attachment; filename="../../etc/x"', "f"), "....etcx");
  assert.equal(dispositionName(null, "profile.pb.gz"), "profile.pb.gz");
  assert.equal(dispositionName("inline", "profile.pb.gz"), "profile.pb.gz");
});

function fakeStorage() {
  const m = new Map();
  return {
    m,
    getItem: (k) => (m.has(k) ? m.get(k) : null),
    setItem: (k, v) => m.set(k, String(v)),
    removeItem: (k) => m.delete(k),
  };
}

test("the token is kept in sessionStorage, and forgotten", () => {
  const s = fakeStorage();
  Object.defineProperty(globalThis, "sessionStorage", { value: s, configurable: true });
  assert.equal(getToken(), null);
  setToken("t0k");
  assert.equal(getToken(), "t0k");
  assert.deepEqual([...s.m.values()], ["t0k"]);
  setToken(null);
  assert.equal(getToken(), null);
  assert.equal(s.m.size, 0);
});

test("apiFetch sends the token on every call and reports a 401", async () => {
  Object.defineProperty(globalThis, "sessionStorage", { value: fakeStorage(), configurable: true });
  const seen = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (path, init) => {
    seen.push([path, init.headers.Authorization, init.cache]);
    return { status: init.headers.Authorization === "Bearer good" ? 200 : 401 };
  };
  let asked = 0;
  whenUnauthorized(() => asked++);
  try {
    assert.equal((await apiFetch("/api/v1/status", { cache: "no-store" })).status, 401);
    assert.equal(asked, 1);
    setToken("good");
    assert.equal((await apiFetch("/api/v1/windows")).status, 200);
    assert.equal(asked, 1);
    setToken("bad");
    assert.equal((await apiFetch("/api/v1/profile?type=cpu")).status, 401);
    assert.equal(asked, 2);
    assert.deepEqual(seen, [
      ["/api/v1/status", undefined, "no-store"],
      ["/api/v1/windows", "Bearer good", undefined],
      ["/api/v1/profile?type=cpu", "Bearer bad", undefined],
    ]);
  } finally {
    globalThis.fetch = realFetch;
    setToken(null);
  }
});
