#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""tailprofd's CPU per process started, side by side: two tailprofd binaries (A, B: a baseline
build and this one) run alternately at their defaults while the same churn runs (RATE process
starts a second of /bin/true, a 2 ms tp_short, python3.11 -c pass and a Go program), every CPU
busy; each run's daemon CPU (schedstat of its threads) over the processes started. Prints the
medians and the ratio. Asserts nothing. FREQ: the sampling rate in Hz (default 99, the default's:
at 999 the processes' samples, symbolized and spliced with their Python frames, weigh more).
KINDS: a comma-separated subset of true,short,python,go (default all), to see what one kind of
process costs (A and B may then be the same binary). Each run first makes tailprofd know the
Python interpreter (always_on.register_interpreters), as it would on any host after a while.

Usage (root): tests/bench/per_process.py DAEMON_A DAEMON_B [SECONDS] [RUNS] [FREQ] [KINDS]"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from always_on import alternate, churn_kinds, side_run  # noqa: E402
from common import median  # noqa: E402


def run(binary, programs, seconds, freq):
    r = side_run(binary, freq, programs, seconds)
    m, n, cpu, span = r["m1"], r["starts"], r["cpu"], r["span"]
    return {"us_per_process": 1e6 * cpu / max(n, 1), "pct": 100 * cpu / span,
            "starts_per_s": n / span,
            "maps_shared": m.get('tailprof_maps_reads_total{source="shared"}', 0),
            "maps_file": m.get('tailprof_maps_reads_total{source="file"}', 0),
            "maps_records": m.get('tailprof_maps_reads_total{source="records"}', 0),
            "wakeups": m.get("tailprof_wakeups_total", 0) -
            r["m0"].get("tailprof_wakeups_total", 0),
            "from_exec": m.get("tailprof_python_processes_from_exec_total", 0) -
            r["m0"].get("tailprof_python_processes_from_exec_total", 0),
            "builds": m.get("tailprof_unwind_table_builds_total", -1)}


def main():
    if os.geteuid() != 0 or len(sys.argv) < 3:
        sys.exit(__doc__)
    a, b = sys.argv[1], sys.argv[2]
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 15
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    freq = int(sys.argv[5]) if len(sys.argv) > 5 else 99
    kinds = sys.argv[6].split(",") if len(sys.argv) > 6 else ["true", "short", "python", "go"]
    tmp = tempfile.mkdtemp()
    known = churn_kinds(tmp)
    if kinds == ["go"] and "go" not in known:
        sys.exit("per_process.py: the go kind needs a Go toolchain")
    if any(k not in known and k != "go" for k in kinds):
        sys.exit("per_process.py: KINDS is a comma-separated subset of true,short,python,go")
    programs = [known[k] for k in kinds if k in known]
    res = alternate(a, b, runs, lambda binary: run(binary, programs, seconds, freq),
                    lambda binary, r: print(
                        "  %s: %.0f us/process, daemon %.2f%%, %.0f starts/s, maps %d read + %d "
                        "shared + %d from records, %d table builds; in the span %d wake-ups, "
                        "%d Python processes walked from exec" % (
                            binary, r["us_per_process"], r["pct"], r["starts_per_s"],
                            r["maps_file"], r["maps_shared"], r["maps_records"], r["builds"],
                            r["wakeups"], r["from_exec"])))
    ma = median([r["us_per_process"] for r in res[a]])
    mb = median([r["us_per_process"] for r in res[b]])
    print("median daemon CPU per process started: A %.0f us, B %.0f us (B/A %.2f); "
          "daemon %% of one CPU: A %.2f%%, B %.2f%%" % (
              ma, mb, mb / ma, median([r["pct"] for r in res[a]]),
              median([r["pct"] for r in res[b]])))


if __name__ == "__main__":
    main()
