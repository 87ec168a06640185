#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Builds the Debian package: packaging/build-deb.sh [OUT_DIR] (default build-deb/), as root or
# not. A scratch copy of the tree gets packaging/debian as ./debian (dpkg-buildpackage reads it
# there), dpkg-buildpackage -us -uc -b builds it, lintian checks it (errors fail the build) and
# the .deb lands in OUT_DIR.
set -eu

cd "$(dirname "$0")/.."
src=$PWD
out=${1:-build-deb}
mkdir -p "$out"
out=$(cd "$out" && pwd)
version=$(dpkg-parsechangelog -l packaging/debian/changelog -S Version)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

tree="$scratch/tailprof-$version"
mkdir "$tree"
# the sources only: no build directories, no git metadata
tar -C "$src" --exclude=./.git --exclude='./build*' --exclude=./debian -cf - . | tar -C "$tree" -xf -
cp -r packaging/debian "$tree/debian"
(cd "$tree" && DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-parallel=$(nproc)}" \
	dpkg-buildpackage -us -uc -b >"$scratch/build.log" 2>&1) || {
	tail -50 "$scratch/build.log" >&2
	echo "build-deb.sh: dpkg-buildpackage failed" >&2
	exit 1
}
deb=$(ls "$scratch"/tailprof_"$version"_*.deb)
if command -v lintian >/dev/null; then
	lintian --fail-on error "$deb"
fi
cp "$deb" "$out/"
echo "$out/$(basename "$deb")"
