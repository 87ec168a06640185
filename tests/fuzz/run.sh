#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Builds the libFuzzer targets of tests/fuzz with clang (once, in a build directory of their
# own: CC=clang meson setup -Dfuzz=true) and runs each for SECONDS_EACH seconds (default 15) on
# its seed corpus; fails when one finds a crash, a leak, undefined behaviour, a timeout or a
# broken check. docs/fuzzing.md says more.
#
#   tests/fuzz/run.sh [SECONDS_EACH [TARGET...]]     e.g. run.sh 600 elf_object kallsyms
#
# Environment:
#   TAILPROF_FUZZ_BUILD      the clang build directory (default: build-fuzz at the source root;
#                            the meson test 'fuzz' uses BUILD/tests/fuzz/build-fuzz)
#   TAILPROF_FUZZ_CORPUS     a directory where each target's grown corpus is kept across runs
#                            (DIR/NAME); default: a temporary copy of the seeds, removed after
#   TAILPROF_FUZZ_ARTIFACTS  where a failing input is written (default: BUILD/artifacts)
#   TAILPROF_FUZZ_ARGS       more libFuzzer flags, e.g. "-max_len=4096"
# Exit status: 0 all ran clean, 1 a target failed (or the build did), 77 no clang with libFuzzer
# (meson reports the test skipped; Debian: apt-get install clang libclang-rt-14-dev).
set -u

src=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-15}
[ $# -gt 0 ] && shift
build=${TAILPROF_FUZZ_BUILD:-$src/build-fuzz}
artifacts=${TAILPROF_FUZZ_ARTIFACTS:-$build/artifacts}
all=$(sed -n "/^fuzz_targets = \[/,/\]/p" "$src/tests/fuzz/meson.build" | tr -d "[],'" |
	sed 's/fuzz_targets =//' | tr -s ' \n' '  ' | sed 's/ *$//')
targets=${*:-$all}

case $secs in
'' | *[!0-9]*)
	echo "run.sh: SECONDS_EACH must be a whole number of seconds, not '$secs'" >&2
	exit 2
	;;
esac

# clang and its libFuzzer runtime: without them there is nothing to run
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' >"$probe/p.c"
if ! clang -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" >"$probe/log" 2>&1; then
	echo "run.sh: clang cannot link -fsanitize=fuzzer (Debian: apt-get install clang" \
		"libclang-rt-14-dev, as packaging/setup.sh test does)" >&2
	cat "$probe/log" >&2
	# in CI a skip is a failure: the fuzzers must run there
	[ "${CI:-}" = true ] && exit 1
	echo "run.sh: skipped" >&2
	exit 77
fi

# the build, once; later runs only rebuild what changed
start=$(date +%s)
if [ ! -f "$build/build.ninja" ]; then
	if ! CC=clang meson setup "$build" "$src" -Dfuzz=true --buildtype=debugoptimized \
		>"$probe/log" 2>&1; then
		cat "$probe/log" >&2
		echo "run.sh: meson setup of $build failed" >&2
		exit 1
	fi
fi
if ! ninja -C "$build" >"$probe/log" 2>&1; then
	cat "$probe/log" >&2
	echo "run.sh: the build of the fuzz targets in $build failed" >&2
	exit 1
fi
echo "run.sh: fuzz targets built in $build ($(($(date +%s) - start)) s)"

mkdir -p "$artifacts"
# Sanitizers as libFuzzer wants them, whatever the caller set (meson test sets its own).
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:suppressions=$src/tests/fuzz/asan.supp"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=""
for name in $targets; do
	bin=$build/tests/fuzz/fuzz_$name
	seeds=$src/tests/fuzz/corpus/$name
	if [ ! -x "$bin" ] || [ ! -d "$seeds" ]; then
		echo "run.sh: no target $name (known:$all)" >&2
		failed="$failed $name"
		continue
	fi
	if [ -n "${TAILPROF_FUZZ_CORPUS:-}" ]; then
		corpus=$TAILPROF_FUZZ_CORPUS/$name
		mkdir -p "$corpus"
	else
		corpus=$probe/corpus-$name
		mkdir -p "$corpus"
		cp "$seeds"/* "$corpus"/
	fi
	log=$probe/$name.log
	t0=$(date +%s)
	# new inputs go to the first directory; the seeds are read from the second, never written
	# shellcheck disable=SC2086
	"$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$artifacts/$name-" ${TAILPROF_FUZZ_ARGS:-} "$corpus" "$seeds" \
		>"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
	units=$(find "$corpus" -type f | wc -l)
	if [ $rc -ne 0 ]; then
		tail -n 60 "$log"
		echo "run.sh: fuzz_$name FAILED (exit $rc) after $(($(date +%s) - t0)) s; the input" \
			"is in $artifacts/$name-*; reproduce: $bin FILE"
		failed="$failed $name"
	else
		echo "run.sh: fuzz_$name ok: ${execs:-?} inputs in $(($(date +%s) - t0)) s," \
			"${cov:-cov: ?}, corpus $units"
	fi
done
echo "run.sh: done in $(($(date +%s) - start)) s"
if [ -n "$failed" ]; then
	echo "run.sh: failed:$failed" >&2
	exit 1
fi
exit 0
