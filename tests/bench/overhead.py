#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Overhead of tailprofd with every CPU busy, at 99 Hz and 999 Hz, next to perf record -g +
perf script on the same load in the same run. Prints figures; targets (not asserted):
all-in <= 0.5% of one CPU at 99 Hz and <= 3% at 999 Hz.

Usage (root): tests/bench/overhead.py [SECONDS_PER_RUN] [RUNS]"""
import os
import resource
import subprocess
import sys
import tempfile
import time

from common import Daemon, bpf_prog, bpf_run_s, median, workload

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 15
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 3


def bpf_totals(m):
    return (bpf_run_s(m),) + bpf_prog(m, "perf_sample") + (m["tailprof_cpu_seconds_total"],)


def run_tailprofd(freq):
    d = Daemon("--frequency", str(freq))
    time.sleep(2)
    a = bpf_totals(d.metrics())
    t0 = time.time()
    time.sleep(SECONDS)
    b = bpf_totals(d.metrics())
    elapsed = time.time() - t0
    d.stop()
    bpf_cpu = b[0] - a[0]
    ns_per_sample = (b[1] - a[1]) / max(b[2] - a[2], 1) * 1e9
    daemon_cpu = b[3] - a[3]
    return {"ns_per_sample": ns_per_sample, "bpf_pct": 100 * bpf_cpu / elapsed,
            "daemon_pct": 100 * daemon_cpu / elapsed,
            "all_in_pct": 100 * (bpf_cpu + daemon_cpu) / elapsed}


def run_perf(freq):
    tmp = tempfile.mkdtemp()
    data = os.path.join(tmp, "perf.data")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    subprocess.run(["perf", "record", "-F", str(freq), "-a", "-g", "-o", data, "--", "sleep",
                    str(SECONDS)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    elapsed = time.time() - t0
    subprocess.run(["perf", "script", "-i", data], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return 100 * cpu / elapsed


def main():
    if os.geteuid() != 0:
        sys.exit("overhead.py: run as root")
    spinners = [workload("tp_hotcold", 100000) for _ in range(os.cpu_count())]
    try:
        for freq in (99, 999):
            ours, perf = [], []
            for _ in range(RUNS):
                ours.append(run_tailprofd(freq))
                perf.append(run_perf(freq))
            med = {k: median([r[k] for r in ours]) for k in ours[0]}
            pm = median(perf)
            print("%4d Hz, %d CPUs busy, median of %d x %gs: BPF %.0f ns/sample; BPF %.3f%% + "
                  "daemon %.3f%% = all-in %.3f%% of one CPU; perf record -g + perf script "
                  "%.3f%%; perf/tailprofd %.1fx" %
                  (freq, os.cpu_count(), RUNS, SECONDS, med["ns_per_sample"], med["bpf_pct"],
                   med["daemon_pct"], med["all_in_pct"], pm, pm / med["all_in_pct"]))
            sys.stdout.flush()
    finally:
        for p in spinners:
            p.kill()


if __name__ == "__main__":
    main()
