#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Browser benchmark of the web page (issue 22's targets: first paint under 1 s on loopback, a
flame graph of an hour under 1 s), in headless Chromium (Debian's /usr/bin/chromium) driven by
playwright-core from ui/node_modules. Prints medians (and min/max) of RUNS runs of:
  first paint: navigation to the first data drawn (timeline, spikes, heat map),
  flame graph: the whole ring's flame graph fetched, parsed, laid out and drawn,
  redraw: a zoom on the widest process (layout and canvas only).
Against ui/test/fake_server.mjs (default: a full ring of 360 windows and a tree made of 100,000
distinct stacks, trimmed at min_share 0.0005 as the daemon trims) or --url URL (a running
tailprofd, e.g. one with --window 10s for an hour). Not part of the test suite.
Usage: tests/bench/ui.py [--runs N] [--stacks N] [--url URL]"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
UI = os.path.join(ROOT, "ui")

DRIVER = r"""
import { createRequire } from "node:module";
const require = createRequire(process.env.UI_DIR + "/package.json");
const { chromium } = require("playwright-core");
const [url, runs] = [process.argv[1], Number(process.argv[2])];
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
const res = [];
for (let i = 0; i <= runs; i++) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  await page.goto(url);
  await page.waitForFunction(() => window.tailprofUI && window.tailprofUI.S.firstLoadMs > 0,
    null, { timeout: 60000 });
  const paint = await page.evaluate(() => window.tailprofUI.S.firstLoadMs);
  await page.click("nav button[data-tab=flame]");
  const n = await page.evaluate(() => window.tailprofUI.S.flameLoads);
  await page.click("#f-all");
  await page.waitForFunction((k) => window.tailprofUI.S.flameLoads > k, n, { timeout: 60000 });
  const flame = await page.evaluate(() => window.tailprofUI.S.flameMs);
  const info = await page.evaluate(() => {
    const f = window.tailprofUI.flame;
    const widest = f.data.root.children[0];
    const t = performance.now();
    f.zoom(widest);
    return { zoom: performance.now() - t, nodes: f.nodes, rects: f.rects.length,
             windows: window.tailprofUI.S.windows.length };
  });
  await page.close();
  if (i > 0) res.push({ paint, flame, ...info }); // the first run warms the server's caches
}
await browser.close();
console.log(JSON.stringify(res));
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--stacks", type=int, default=100000)
    ap.add_argument("--url")
    a = ap.parse_args()
    if not os.path.exists(os.path.join(UI, "node_modules", "playwright-core")):
        subprocess.run(["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund"], cwd=UI,
                       check=True)
    fake = None
    url = a.url
    if not url:
        fake = subprocess.Popen(["node", os.path.join(UI, "test", "fake_server.mjs"), "0",
                                 "--windows", "360", "--stacks", str(a.stacks)],
                                stdout=subprocess.PIPE, text=True)
        url = fake.stdout.readline().split()[-1] + "/"
    try:
        out = subprocess.run(["node", "--input-type=module", "-e", DRIVER, url, str(a.runs)],
                             stdout=subprocess.PIPE, text=True, check=True,
                             env=dict(os.environ, UI_DIR=UI))
    finally:
        if fake:
            fake.terminate()
            fake.wait()
    res = json.loads(out.stdout.strip().splitlines()[-1])
    print("ui benchmark: %s, %d runs, %d windows, flame graph of %d frames (%d drawn)" %
          (a.url or "fake server, %d stacks" % a.stacks, len(res), res[0]["windows"],
           res[0]["nodes"], res[0]["rects"]))
    for key, label in (("paint", "first paint"), ("flame", "flame graph of the ring"),
                       ("zoom", "zoom redraw")):
        v = [r[key] for r in res]
        print("  %-24s median %7.1f ms  (min %.1f, max %.1f)" %
              (label, statistics.median(v), min(v), max(v)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
