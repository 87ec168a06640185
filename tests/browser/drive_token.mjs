// SPDX-License-Identifier: GPL-2.0-only
// Drives tailprofd's page on a listener with --auth-token-file, for test_ui.py's token case: the
// page's files load without the token, its first API call gets 401 and shows the token form; a
// wrong token is refused, the right one loads the timeline, sits in sessionStorage (not
// localStorage) and the pprof link downloads through a fetch with the token. Prints what it saw
// as one JSON object. Usage: node drive_token.mjs CONFIG_JSON — {url, token, shots, chromium}.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, "..", "..", "ui", "package.json"));
const { chromium } = require("playwright-core");
const cfg = JSON.parse(process.argv[2]);
const out = { errors: [] };

const browser = await chromium.launch({
  executablePath: cfg.chromium || "/usr/bin/chromium",
  args: ["--no-sandbox"],
});
try {
  const page = await browser.newPage({
    viewport: { width: 1400, height: 700 },
    acceptDownloads: true,
  });
  page.on("pageerror", (e) => out.errors.push(e.message));
  const auth = []; // the Authorization header of each API request the page made
  page.on("request", (r) => {
    if (new URL(r.url()).pathname.startsWith("/api/"))
      auth.push(r.headers()["authorization"] || null);
  });
  await page.goto(cfg.url);
  await page.waitForSelector("#auth:not([hidden])", { timeout: 15000 });
  out.formText = await page.evaluate(() => document.getElementById("auth").innerText);
  out.inputType = await page.getAttribute("#auth-token", "type");
  out.loadsBefore = await page.evaluate(() => window.tailprofUI.S.loads);
  await page.screenshot({ path: join(cfg.shots, "token-form.png") });

  await page.fill("#auth-token", "wrong-" + cfg.token);
  await page.click("#auth-use");
  await page.waitForFunction(
    () =>
      !document.getElementById("auth").hidden &&
      /refused/.test(document.getElementById("auth-msg").textContent),
    null,
    { timeout: 10000 },
  );
  out.wrongMsg = await page.evaluate(() => document.getElementById("auth-msg").textContent);

  await page.fill("#auth-token", "  " + cfg.token + " ");
  await page.click("#auth-use");
  await page.waitForFunction(() => window.tailprofUI.S.loads > 0, null, { timeout: 15000 });
  out.windows = await page.evaluate(() => window.tailprofUI.S.windows.length);
  out.plotPoints = await page.evaluate(() => window.tailprofUI.timeline.plots[0].data[0].length);
  out.formHidden = await page.evaluate(() => document.getElementById("auth").hidden);
  out.session = await page.evaluate(() => sessionStorage.getItem("tailprof.token"));
  out.local = await page.evaluate(() => Object.keys(localStorage));
  await page.screenshot({ path: join(cfg.shots, "token-timeline.png") });

  // the pprof link: fetched with the token, saved from a blob
  await page.click("nav button[data-tab=flame]");
  const [dl] = await Promise.all([
    page.waitForEvent("download", { timeout: 30000 }),
    page.click("#pprof"),
  ]);
  const bytes = readFileSync(await dl.path());
  out.download = { name: dl.suggestedFilename(), bytes: bytes.length, magic: [bytes[0], bytes[1]] };
  out.auth = auth;
  out.pageErrors = await page.evaluate(() => window.tailprofUI.S.errors);
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
