#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Fuzzing for hours (docs/fuzzing.md): the targets of tests/fuzz, one at a time at the lowest
# CPU priority, in rounds of ROUND seconds a target (default 600), for HOURS in all (default 8).
# Each target's corpus grows in TAILPROF_FUZZ_CORPUS (default: BUILD/corpus of the fuzz build),
# so a later run starts where this one stopped. Stops at the first target that fails; the input
# is in the fuzz build's artifacts/ (run.sh prints how to reproduce it).
#
#   tests/bench/fuzz_long.sh [HOURS [TARGET...]]      e.g. fuzz_long.sh 2 elf_object dwarf_lines
#   ROUND=300 tests/bench/fuzz_long.sh 1
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
hours=${1:-8}
[ $# -gt 0 ] && shift
round=${ROUND:-600}
export TAILPROF_FUZZ_BUILD="${TAILPROF_FUZZ_BUILD:-$root/build-fuzz}"
export TAILPROF_FUZZ_CORPUS="${TAILPROF_FUZZ_CORPUS:-$TAILPROF_FUZZ_BUILD/corpus}"
targets=${*:-$(sed -n "/^fuzz_targets = \[/,/\]/p" "$root/tests/fuzz/meson.build" |
	tr -d "[],'" | sed 's/fuzz_targets =//')}
# shellcheck disable=SC2086
n=$(echo $targets | wc -w)
total=$(python3 -c "print(int(float('$hours') * 3600))")
start=$(date +%s)
r=0
while :; do
	left=$((total - ($(date +%s) - start)))
	[ "$left" -gt "$n" ] || break
	each=$((left / n < round ? left / n : round))
	r=$((r + 1))
	echo "fuzz_long: round $r, $each s a target, $((left / 60)) min left"
	# shellcheck disable=SC2086
	nice -n 19 "$root/tests/fuzz/run.sh" "$each" $targets
done
echo "fuzz_long: $r rounds, $(( ($(date +%s) - start) / 60 )) min, no failure;" \
	"corpora in $TAILPROF_FUZZ_CORPUS"
