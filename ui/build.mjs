// SPDX-License-Identifier: GPL-2.0-only
// Builds the page: src/main.js bundled (esbuild) to dist/app.js and dist/app.css, src/index.html
// put on one line, and dist/LICENSES.txt with the license of every bundled npm package.
// Deterministic: the same sources and lock file give byte-identical files.
// Usage: node build.mjs [--out DIR] (default: dist).
import * as esbuild from "esbuild";
import { mkdirSync, readFileSync, writeFileSync, readdirSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const i = process.argv.indexOf("--out");
const out = i > 0 ? process.argv[i + 1] : join(here, "dist");
mkdirSync(out, { recursive: true });

const result = await esbuild.build({
  absWorkingDir: here,
  entryPoints: { app: "src/main.js" },
  bundle: true,
  format: "esm",
  target: "es2020",
  minify: true,
  legalComments: "none",
  charset: "utf8",
  outdir: out,
  metafile: true,
  logLevel: "warning",
});
// the page on one line: a newline and indentation are one space in HTML as they are
const html = readFileSync(join(here, "src", "index.html"), "utf8")
  .trim()
  .replace(/\s*\n\s*/g, " ");
writeFileSync(join(out, "index.html"), html + "\n");

// the packages whose files went into the bundle, by name, with their license texts
const pkgs = new Set();
for (const input of Object.keys(result.metafile.inputs)) {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
  if (m) pkgs.add(m[1]);
}
let text =
  "Third-party software bundled in tailprofd's web page (ui/dist/app.js, ui/dist/app.css).\n";
for (const name of [...pkgs].sort()) {
  const dir = join(here, "node_modules", name);
  const pj = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const lic = readdirSync(dir)
    .filter((f) => /^(licen[cs]e|copying)/i.test(f))
    .sort();
  text +=
    "\n" +
    "=".repeat(72) +
    "\n" +
    name +
    " " +
    pj.version +
    " (" +
    pj.license +
    ")\n" +
    "=".repeat(72) +
    "\n";
  text += lic.length
    ? readFileSync(join(dir, lic[0]), "utf8").trim() + "\n"
    : "(no license file in the package; package.json says " + pj.license + ")\n";
}
writeFileSync(join(out, "LICENSES.txt"), text);
