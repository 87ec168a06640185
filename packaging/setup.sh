#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# One entry point for a fresh Debian 12 machine, run as root:
#   packaging/setup.sh run [TAILPROFD FLAGS]   install what is missing, build, start tailprofd
#   packaging/setup.sh test                    install what is missing, build, run every test
#   packaging/setup.sh build                   install what is missing, build
set -eu

cd "$(dirname "$0")/.."
BUILD=${TAILPROF_BUILD_DIR:-build}

# Build dependencies, go and graphviz (the README's tour reads profiles with go tool pprof,
# whose web view draws its graph with dot), and what the
# tests use (go tool pprof judges our profiles, lld links a
# fixture, perf is the benchmark's reference, setpriv runs the non-root start-up test, libc6-dbg
# is the debug file that names libc's local functions, xz-utils packs the MiniDebugInfo fixture;
# inih parses the configuration, sys/sdt.h builds the USDT stage workload, libbpf-tools'
# funclatency is the stage benchmark's reference; qemu, busybox and cpio boot the kernel matrix's
# guests, tests/kernels; libsystemd's sd_notify serves Type=notify; debhelper, dpkg-dev and
# lintian build and check the .deb, systemd's systemd-analyze verifies its unit, tests/package;
# libclang-rt-14-dev is clang's libFuzzer and sanitizer runtimes, which the fuzz targets link,
# tests/fuzz; chromium is the browser the web page's tests drive, tests/browser).
DEPS="build-essential pkg-config meson ninja-build clang llvm bpftool libbpf-dev libelf-dev
 libdw-dev liblzma-dev libiberty-dev zlib1g-dev protobuf-c-compiler libprotobuf-c-dev
 libmicrohttpd-dev libjansson-dev libcurl4-openssl-dev libcmocka-dev python3 libinih-dev
 systemtap-sdt-dev libsystemd-dev golang-go graphviz"
TEST_DEPS="lld binutils xz-utils util-linux linux-perf valgrind libc6-dbg libbpf-tools
 python3.11 openjdk-17-jdk-headless qemu-system-x86 busybox-static cpio debhelper dpkg-dev lintian
 systemd adduser man-db libclang-rt-14-dev chromium"

install_missing() {
	missing=""
	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "setup.sh: missing Debian packages:$missing; run as root (sudo) to install them" >&2
		exit 1
	fi
	echo "setup.sh: installing$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# node and npm rebuild and check the web page's bundle (ui/check.sh) and drive the browser test.
# Debian's nodejs and npm where no node is installed; a node from elsewhere (NodeSource's nodejs
# carries its own npm and conflicts with Debian's npm package) is used as it is.
install_node() {
	command -v node >/dev/null && command -v npm >/dev/null && return 0
	install_missing nodejs npm
}

# Builds TARGETS (ninja's names; none: everything).
build() {
	werror=false
	[ "${CI:-}" = true ] && werror=true
	if [ ! -f "$BUILD/build.ninja" ]; then
		meson setup "$BUILD" --buildtype=debugoptimized -Dwerror=$werror
	elif [ "$werror" = true ]; then
		# a build directory that `run` configured: CI builds with warnings as errors all the same
		meson configure "$BUILD" -Dwerror=true
	fi
	ninja -C "$BUILD" "$@"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
run)
	install_missing $DEPS
	# what running it takes, and the README tour's workload: not the tests, benchmarks and
	# fuzzers (the test command builds those)
	build daemon/tailprofd cli/tailprof tests/workloads/tp_pipeline
	# the unix socket's group (docs/security.md): its members use the CLI without sudo
	if [ "$(id -u)" = 0 ] && ! getent group tailprof >/dev/null; then
		groupadd --system tailprof &&
			echo "setup.sh: made group tailprof: sudo usermod -aG tailprof USER lets USER" \
				"use the CLI through the socket (after logging in again)" >&2
	fi
	exec "$BUILD/daemon/tailprofd" "$@"
	;;
test)
	install_missing $DEPS $TEST_DEPS
	install_node
	build
	rc=0
	meson test -C "$BUILD" --print-errorlogs --num-processes 2 "$@" || rc=$?
	# one closing line for people and CI: counts from meson's own log
	python3 - "$BUILD/meson-logs/testlog.json" <<'PY'
import json, sys
res = [json.loads(l)["result"] for l in open(sys.argv[1]) if l.strip()]
ok = sum(r in ("OK", "EXPECTEDFAIL") for r in res)
skip = sum(r == "SKIP" for r in res)
print("%d passed, %d failed, %d skipped" % (ok, len(res) - ok - skip, skip))
PY
	exit $rc
	;;
build)
	install_missing $DEPS
	build
	;;
*)
	echo "usage: packaging/setup.sh run [TAILPROFD FLAGS] | test [MESON TEST ARGS] | build" >&2
	exit 2
	;;
esac
