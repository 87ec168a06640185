#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""tailprofd's CPU per process started, side by side: two tailprofd binaries (A, B: a baseline
build and this one) run alternately at their defaults while the same churn runs (RATE process
starts a second of /bin/true, a 2 ms tp_short, python3.11 -c pass and a Go program), every CPU
busy; each run's daemon CPU (schedstat of its threads) over the processes started. Prints the
medians and the ratio. Asserts nothing. FREQ: the sampling rate in Hz (default 99, the default's:
at 999 the processes' samples, symbolized and spliced with their Python frames, weigh more).
KINDS: a comma-separated subset of true,short,python,go (default all), to see what one kind of
process costs (A and B may then be the same binary).

Usage (root): tests/bench/per_process.py DAEMON_A DAEMON_B [SECONDS] [RUNS] [FREQ] [KINDS]"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from always_on import Churn, go_program, proc_cpu  # noqa: E402
from common import build_dir, median, workload  # noqa: E402
import daemon as daemon_lib  # noqa: E402  (tests/lib, on the path common.py sets)


def run(binary, programs, seconds, freq):
    d = daemon_lib.Daemon(binary, *(["--frequency", str(freq)] if freq != 99 else []))
    time.sleep(3)
    churn = Churn(programs)
    time.sleep(2)  # the programs' objects known: steady state
    c0, s0, t0 = proc_cpu(d.proc.pid), churn.started, time.time()
    time.sleep(seconds)
    c1, s1, t1 = proc_cpu(d.proc.pid), churn.started, time.time()
    churn.stop()
    m = d.metrics()
    d.stop()
    n = s1 - s0
    return {"us_per_process": 1e6 * (c1 - c0) / max(n, 1), "pct": 100 * (c1 - c0) / (t1 - t0),
            "starts_per_s": n / (t1 - t0),
            "maps_shared": m.get('tailprof_maps_reads_total{source="shared"}', 0),
            "maps_file": m.get('tailprof_maps_reads_total{source="file"}', 0),
            "maps_records": m.get('tailprof_maps_reads_total{source="records"}', 0),
            "wakeups": m.get("tailprof_wakeups_total", 0),
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
    known = {"true": ["/bin/true"],
             "short": [os.path.join(build_dir(), "tests", "workloads", "tp_short"), "0.002"],
             "python": ["/usr/bin/python3.11", "-c", "pass"]}
    if "go" in kinds:
        gobin = go_program(tmp)
        if gobin:
            known["go"] = [gobin, "1"]
        elif len(kinds) == 1:
            sys.exit("per_process.py: the go kind needs a Go toolchain")
    if any(k not in known and k != "go" for k in kinds):
        sys.exit("per_process.py: KINDS is a comma-separated subset of true,short,python,go")
    programs = [known[k] for k in kinds if k in known]
    spinners = [workload("tp_hotcold", 100000) for _ in range(os.cpu_count())]
    res = {a: [], b: []}
    try:
        for _ in range(runs):
            for binary in (a, b):
                r = run(binary, programs, seconds, freq)
                res[binary].append(r)
                print("  %s: %.0f us/process, daemon %.2f%%, %.0f starts/s, maps %d read + %d "
                      "shared + %d from records, %d wake-ups, %d table builds" % (
                          binary, r["us_per_process"], r["pct"], r["starts_per_s"],
                          r["maps_file"], r["maps_shared"], r["maps_records"], r["wakeups"],
                          r["builds"]))
                sys.stdout.flush()
    finally:
        for p in spinners:
            p.kill()
    ma = median([r["us_per_process"] for r in res[a]])
    mb = median([r["us_per_process"] for r in res[b]])
    print("median daemon CPU per process started: A %.0f us, B %.0f us (B/A %.2f); "
          "daemon %% of one CPU: A %.2f%%, B %.2f%%" % (
              ma, mb, mb / ma, median([r["pct"] for r in res[a]]),
              median([r["pct"] for r in res[b]])))


if __name__ == "__main__":
    main()
