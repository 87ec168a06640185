#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The page's checks (the test command runs it through meson, suite 'browser'): install the
# locked npm packages, rebuild the bundle into a temporary directory and compare it with the
# committed ui/dist (they must be byte-identical: the daemon embeds ui/dist), then the unit
# tests of the page's data transformations. Usage: ui/check.sh. Needs node and npm; with
# CI=true their absence is a failure, elsewhere a skip (77).
set -eu
cd "$(dirname "$0")"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "check.sh: node and npm are needed (Debian: apt-get install nodejs npm)" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi
# the lock file pins every package; the cache serves them offline once fetched
npm ci --prefer-offline --no-audit --no-fund --loglevel=error
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
npm run --silent build -- --out "$out"
bad=""
for f in index.html app.js app.css LICENSES.txt; do
	cmp -s "$out/$f" "dist/$f" || bad="$bad $f"
done
extra=$(ls dist | grep -vxE 'index.html|app.js|app.css|LICENSES.txt' || true)
if [ -n "$bad" ] || [ -n "$extra" ]; then
	echo "check.sh: ui/dist differs from what the sources build" \
		"(differs:${bad:- none}; unexpected: ${extra:-none})." >&2
	echo "check.sh: run 'cd ui && npm ci && npm run build' and commit the rebuilt ui/dist." >&2
	exit 1
fi
echo "check.sh: ui/dist matches the sources"
npm test
